"""Each micro-batch reads the group's bus topics once, whatever the shape of its plan.

A plan that forks the source (several native queries, native queries beside the stateful
operator) made Spark scan the Python bus source once per branch. The native queries now
share one projection (Spark's own count, ``numInputRows``, shows one scan), and a second
branch's read of a slice is served from the rows the first read left behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from eddy.bus import TopicSpec, open_bus, sqlite_url
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_topics import output_events
from eddy.engine.spark.bus_source import (
    BusStreamReader,
    GroupInput,
    SharedReads,
    close_process_bus,
)
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check

WAIT_S = 120.0
APP = """
@app:name('Three')
define stream Temp (room string, temp double);
@info(name='hot') from Temp[temp > 25.0] select room, temp insert into Hot;
@info(name='cold') from Temp[temp < 22.0] select room, temp * 2.0 as twice insert into Cold;
@info(name='very') from Hot[temp > 30.0] select room insert into VeryHot;
"""
TEMPS = [(1_000 + 10 * i, f"r{i % 4}", 20.0 + (7 * i) % 13) for i in range(40)]


def _offsets(text: str | None) -> list[int]:
    """The Temp topic's positions in a progress's offset (None or "null" before the first)."""
    return list((json.loads(text or "null") or {"Temp": [0]})["Temp"])


def test_native_queries_scan_the_bus_once_per_batch(spark: Any, tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "bus.db")
    runner = GroupRunner(APP, url, tmp_path / "checkpoint", spark=spark, heartbeat=False)
    runner.start()
    bus = open_bus(url)
    try:
        for part in (TEMPS[:25], TEMPS[25:]):
            bus.append(runner.input_topic("Temp"), pa.table({
                "_ts": [t for t, _, _ in part], "room": [r for _, r, _ in part],
                "temp": [v for _, _, v in part]}))
        assert runner.await_idle(WAIT_S)
        assert runner._query is not None
        progress = [p for p in runner._query.recentProgress if p["numInputRows"] > 0]
        admitted = [sum(_offsets(p["sources"][0]["endOffset"]))
                    - sum(_offsets(p["sources"][0]["startOffset"])) for p in progress]
        assert [p["numInputRows"] for p in progress] == admitted
        assert sum(admitted) == len(TEMPS)
        outputs = {s: output_events(bus, runner.output_topic(s))
                   for s in ("Hot", "Cold", "VeryHot")}
    finally:
        runner.stop()
        bus.close()
    assert outputs == {
        "Hot": [{"timestamp": t, "data": [r, v]} for t, r, v in TEMPS if v > 25.0],
        "Cold": [{"timestamp": t, "data": [r, v * 2.0]} for t, r, v in TEMPS if v < 22.0],
        "VeryHot": [{"timestamp": t, "data": [r]} for t, r, v in TEMPS if v > 30.0],
    }


def test_a_second_read_of_a_slice_does_not_touch_the_bus(tmp_path: Path) -> None:
    """Two readers (as two branches in two Python workers) read the same slice; the second
    gets the first's rows even with the bus gone."""
    path = tmp_path / "bus.db"
    url = sqlite_url(path)
    analyzed = check(APP)
    inputs = GroupInput(input_layout(analyzed), (("Temp", "t.Temp"),))
    with open_bus(url) as bus:
        bus.create_topic(TopicSpec("t.Temp", analyzed.streams["Temp"].attributes))
        bus.append("t.Temp", pa.table({"_ts": [t for t, _, _ in TEMPS],
                                       "room": [r for _, r, _ in TEMPS],
                                       "temp": [v for _, _, v in TEMPS]}))
    options = {"url": url, "consumer": "Three/main", "inputs": inputs.to_json()}
    first = BusStreamReader(options)
    start = first.initialOffset()
    end = first.latestOffset(start, first.getDefaultReadLimit())
    [task] = first.partitions(start, end)
    rows = pa.Table.from_batches(list(first.read(task)))
    assert rows.num_rows == len(TEMPS)
    close_process_bus(url)
    path.unlink()
    second = BusStreamReader(options)
    assert pa.Table.from_batches(list(second.read(task))).equals(rows)
    second.stop()  # removes the reader's shared files
    assert SharedReads(url, "Three/main", inputs).get(task) is None
