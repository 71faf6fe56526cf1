"""Delivery onto the bus: concurrent callers share appends, yet each returns only once its
own events are stored, keeps them together and in order, and sees a failure that hit them."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest

from eddy.bus import BusError, TopicSpec, open_bus, sqlite_url
from eddy.io import BusDeliver, DedupKey
from eddy.lang.ast import Attribute, AttrType

ATTRIBUTES = (Attribute("caller", AttrType.INT), Attribute("n", AttrType.INT))


def rows(caller: int, count: int) -> pa.Table:
    return pa.table({"caller": pa.array([caller] * count, pa.int32()),
                     "n": pa.array(range(count), pa.int32())})


def test_concurrent_callers_share_appends(tmp_path: Path) -> None:
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    bus.create_topic(TopicSpec("S", ATTRIBUTES))
    deliver = BusDeliver(bus)
    appends: list[int] = []
    original = bus.append

    def counting_append(topic: str, batch: pa.Table, **kw: object) -> object:
        appends.append(batch.num_rows)
        return original(topic, batch, **kw)  # type: ignore[arg-type]
    bus.append = counting_append  # type: ignore[method-assign, assignment]
    stored_when_returned: list[int] = []

    def caller(index: int) -> None:
        for _ in range(20):
            deliver("S", rows(index, 50), ts=index)
            stored_when_returned.append(bus.end_offsets("S")[0])
    threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table = bus.read_table("S", 0, 0, bus.end_offsets("S")[0])
    assert table.num_rows == 8 * 20 * 50
    callers = table.column("caller").to_pylist()
    for start in range(0, table.num_rows, 50):  # each delivery's rows stay together, in order
        assert len(set(callers[start:start + 50])) == 1
        assert table.column("n").to_pylist()[start:start + 50] == list(range(50))
    assert table.column("_ts").to_pylist() == callers  # each caller's own stamp
    assert len(appends) < 8 * 20  # some deliveries shared an append
    assert all(count >= 50 for count in stored_when_returned)
    bus.close()


def test_every_caller_of_a_failed_append_sees_the_error(tmp_path: Path) -> None:
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    deliver = BusDeliver(bus)  # no topic: every append fails
    with pytest.raises(BusError, match="topic 'S' does not exist"):
        deliver("S", rows(1, 3), ts=1)
    with pytest.raises(BusError):
        deliver("S", rows(1, 3), ts=1, dedup=DedupKey("p", 1))
    bus.close()


def test_dedup_keys_make_deliveries_idempotent(tmp_path: Path) -> None:
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    bus.create_topic(TopicSpec("App.S", ATTRIBUTES))
    deliver = BusDeliver.for_app(bus, "App")
    deliver("S", rows(1, 3), ts=1, dedup=DedupKey("file:/x:0", 0))
    deliver("S", rows(1, 3), ts=2, dedup=DedupKey("file:/x:0", 0))
    assert bus.end_offsets("App.S") == [3]
    bus.close()
