"""A running group's timers fire on the wall clock with no further input: the heartbeat
on the group's tick topic (real Spark, real sqlite bus)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from eddy.bus import open_bus, sqlite_url
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_topics import output_events
from eddy.engine.run.heartbeat import needs_heartbeat
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check

WINDOW_APP = """
define stream Temp (room string, temp double);
from Temp#window.time(1 sec) select room, count() as n insert all events into Counts;
"""


def _heartbeat_wanted(text: str) -> bool:
    analyzed = check(text)
    return needs_heartbeat(analyzed, input_layout(analyzed))


def test_only_groups_with_timers_outside_playback_get_a_heartbeat() -> None:
    assert _heartbeat_wanted(WINDOW_APP)
    assert not _heartbeat_wanted("@app:playback\n" + WINDOW_APP)
    assert not _heartbeat_wanted("define stream S (a int);\n"
                                 "from S[a > 1] select a * 2 as b insert into T;\n")


def test_an_idle_time_window_expires_its_events(spark: Any, tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "bus.db")
    runner = GroupRunner(WINDOW_APP, url, tmp_path / "checkpoint", spark=spark)
    runner.start()
    try:
        with open_bus(url) as bus:
            bus.append(runner.input_topic("Temp"),
                       pa.table({"room": ["r1"], "temp": [21.5]}))
            assert runner.await_idle(90)
            deadline = time.monotonic() + 60
            while len(output_events(bus, runner.output_topic("Counts"))) < 2:
                assert time.monotonic() < deadline, "the window never expired its event"
                time.sleep(0.2)
            events = output_events(bus, runner.output_topic("Counts"))
    finally:
        runner.stop()
    # the arrival (count 1), then, about a second later and with no input, its expiry
    assert [e["data"] for e in events] == [["r1", 1], ["r1", 0]]
    assert events[1]["timestamp"] - events[0]["timestamp"] >= 1000


def test_an_idle_group_ticks_on_its_own_topic(spark: Any, tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "bus.db")
    runner = GroupRunner(WINDOW_APP, url, tmp_path / "checkpoint", spark=spark)
    runner.start()
    try:
        time.sleep(1.5)
        with open_bus(url) as bus:
            assert runner.tick_topic is not None
            assert sum(bus.end_offsets(runner.tick_topic)) >= 1
    finally:
        runner.stop()
