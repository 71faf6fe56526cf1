"""Bus URLs: which backend, where, and which options; mistakes are reported, not ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from eddy.bus import BusURLError, Retention, default_url, open_bus, sqlite_url
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
    ("kafka://localhost:9092", "unknown bus scheme"),
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
