"""Bus URLs: which backend, where, and which options; mistakes are reported, not ignored."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from eddy.bus import BusURLError, Retention, default_url, kafka_url, open_bus, sqlite_url
from eddy.bus.sqlite_bus import SqliteBus
from eddy.bus.url import _servers


def test_sqlite_urls_follow_sqlalchemy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absolute = tmp_path / "abs" / "bus.db"
    assert sqlite_url(absolute) == f"sqlite:///{absolute}"  # four slashes: absolute
    with open_bus(sqlite_url(absolute)) as bus:
        assert isinstance(bus, SqliteBus) and bus.path == absolute
    monkeypatch.chdir(tmp_path)
    with open_bus("sqlite:///rel/bus.db") as bus:
        assert isinstance(bus, SqliteBus) and bus.path == Path("rel/bus.db")
    assert (tmp_path / "rel" / "bus.db").exists()


def test_default_url_is_under_the_data_directory(tmp_path: Path) -> None:
    assert default_url(tmp_path) == sqlite_url(tmp_path / "bus" / "bus.db")


def test_url_options_reach_the_bus(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "b.db") + "?retention_age=2h&retention_bytes=3MiB&synchronous=full"
    with open_bus(url) as bus:
        assert isinstance(bus, SqliteBus)
        assert bus.retention == Retention(max_age_ms=2 * 3_600_000, max_bytes=3 * 1024**2)
    with open_bus(url, retention=Retention(max_age_ms=5)) as bus:
        assert isinstance(bus, SqliteBus) and bus.retention == Retention(max_age_ms=5)


@pytest.mark.parametrize(("url", "message"), [
    ("mqtt://localhost:1883", "unknown bus scheme"),
    ("kafka://localhost:9092", r"needs \?app="),
    ("kafka://?app=a", "no Kafka bootstrap server"),
    ("kafka://h:9092?app=a&delete_records=maybe", "delete_records='maybe'"),
    ("kafka://h:9092?app=a&replication=0", "replication='0'"),
    ("kafka://h:9092?app=a&partitions=3", "unknown parameter"),
    ("sqlite://", "expected sqlite:///"),
    ("sqlite:///x.db?retension_age=1d", "unknown parameter"),
    ("sqlite:///x.db?retention_age=soon", "retention_age='soon'"),
    ("nats://127.0.0.1:4222", r"needs \?app="),
])
def test_bad_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(BusURLError, match=message):
        open_bus(url)


def test_nats_urls_may_list_several_servers_with_credentials() -> None:
    assert _servers("u", "nats", "user:pw@h1:4222,h2:4223") == [
        "nats://user:pw@h1:4222", "nats://user:pw@h2:4223"]


def test_kafka_urls_from_wso2_bootstrap_urls() -> None:
    assert kafka_url("k1:9092, k2:9093", "Temp App") == "kafka://k1:9092,k2:9093?app=Temp+App"
    assert kafka_url(["PLAINTEXT://k1:9092"], "a") == "kafka://k1:9092?app=a"
    with pytest.raises(BusURLError, match="no Kafka bootstrap server"):
        kafka_url(" , ", "a")


def test_kafka_url_options_reach_the_bus(kafka_bootstrap: str) -> None:
    from eddy.bus.kafka_bus import KafkaBus

    url = (f"kafka://{kafka_bootstrap}?app=url-{uuid.uuid4().hex[:8]}&retention_age=2h"
           f"&dedup_window=1m&delete_records=false&replication=1&timeout=20s")
    with open_bus(url) as bus:
        assert isinstance(bus, KafkaBus)
        assert bus.retention == Retention(max_age_ms=2 * 3_600_000)
        assert bus.settings() == {"dedup_window_ms": 60_000, "replication": 1,
                                  "timeout_s": 20.0, "delete_records": False}
