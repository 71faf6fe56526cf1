"""Real-time mode (:mod:`eddy.engine.run.real_time`): a stateless group as long-running Spark
tasks.

The group tests run real real-time queries on the session's SparkSession (eddy's JVM
classes compiled by ``javac``) over a real SQLite bus, with short checkpoint intervals so
that several batches commit during a test. The appender tests check the exactly-once
bookkeeping against both real buses, without Spark.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.bus import Bus, TopicSpec, open_bus, sqlite_url
from eddy.engine.run.bus_sink import BusSink
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_topics import GroupTopics, output_events
from eddy.engine.run.real_time import TASK_SLOTS, Bridge, TaskAppender, parse_rows
from eddy.engine.spark.bus_source import GroupInput
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check
from polling import wait_for
from eddy.lang.ast import Attribute, AttrType

WAIT_S = 90.0
NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")

APP = """
@app:name('Live')
define stream Temp (room string, temp double);
@info(name='hot') from Temp[temp > 25.0] select room, temp * 2.0 as twice insert into Hot;
@info(name='all') from Temp select room, temp, temp > 30.0 as high insert into Seen;
"""


def _temps(start: int, count: int) -> pa.Table:
    return pa.table({"_ts": [1_000 + 10 * i for i in range(start, start + count)],
                     "room": [f"r{i % 5}" for i in range(start, start + count)],
                     "temp": [20.0 + (7 * i) % 13 for i in range(start, start + count)]})


def _expected(count: int) -> tuple[list[list[Any]], list[list[Any]]]:
    rows = _temps(0, count).to_pylist()
    hot = [[r["room"], r["temp"] * 2.0] for r in rows if r["temp"] > 25.0]
    seen = [[r["room"], r["temp"], r["temp"] > 30.0] for r in rows]
    return hot, seen


def _outputs(bus: Bus, runner: GroupRunner, stream: str) -> list[list[Any]]:
    return [e["data"] for e in output_events(bus, runner.output_topic(stream))]


def _append_in_steps(bus: Bus, topic: str, start: int, count: int, step: int = 7) -> None:
    for first in range(start, start + count, step):
        bus.append(topic, _temps(first, min(step, start + count - first)))
        time.sleep(0.05)


def _run_once(runner: GroupRunner, bus_url: str, count: int,
              stream: str) -> tuple[str, list[list[Any]]]:
    """Starts ``runner``, feeds it ``count`` events and stops it: its mode, and what
    ``stream`` received."""
    runner.start()
    try:
        with open_bus(bus_url) as bus:
            bus.append(runner.input_topic("Temp"), _temps(0, count))
            assert runner.await_idle(WAIT_S)
            return runner.mode, _outputs(bus, runner, stream)
    finally:
        runner.stop()


@pytest.fixture
def bus_url(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "bus.db")


def test_a_stateless_group_runs_in_real_time(spark: Any, tmp_path: Path, bus_url: str) -> None:
    runner = GroupRunner(APP, bus_url, tmp_path / "ck", spark=spark, real_time_batch_ms=1500)
    runner.start()
    try:
        assert runner.mode == "real-time"
        with open_bus(bus_url) as bus:
            _append_in_steps(bus, runner.input_topic("Temp"), 0, 60)
            assert runner.await_idle(WAIT_S)
            hot, seen = _expected(60)
            assert _outputs(bus, runner, "Hot") == hot
            assert _outputs(bus, runner, "Seen") == seen
            status = runner.status()
            assert status.mode == "real-time" and status.state == "running"
            assert status.input_offsets == {runner.input_topic("Temp"): [60]}
            assert status.events_out == {"Hot": len(hot), "Seen": 60}
            assert status.query_events == {"hot": len(hot), "all": 60}
            # events 10 ms apart in event time: each output keeps its input's timestamp
            times = [e["timestamp"] for e in output_events(bus, runner.output_topic("Seen"))]
            assert times == [1_000 + 10 * i for i in range(60)]
    finally:
        runner.stop()
    assert TASK_SLOTS.held == 0


def test_a_restart_stores_each_output_once(spark: Any, tmp_path: Path, bus_url: str) -> None:
    """Batches of 1.5 s: the first run commits a batch or two and stops; the second
    resumes from the committed positions and is stopped in the middle of a batch."""
    checkpoint = tmp_path / "ck"
    with open_bus(bus_url) as bus:
        for wave, (start, count, pause) in enumerate([(0, 40, 2.0), (40, 40, 0.3)]):
            runner = GroupRunner(APP, bus_url, checkpoint, spark=spark,
                                 real_time_batch_ms=1500)
            runner.start()
            try:
                assert runner.mode == "real-time"
                _append_in_steps(bus, runner.input_topic("Temp"), start, count)
                assert runner.await_idle(WAIT_S)
                time.sleep(pause)  # the first run commits a batch or two, then stops
            finally:
                runner.stop()
            hot, seen = _expected(start + count)
            assert _outputs(bus, runner, "Seen") == seen, f"after run {wave}"
            assert _outputs(bus, runner, "Hot") == hot, f"after run {wave}"


def test_a_replayed_batch_is_not_stored_twice(spark: Any, tmp_path: Path,
                                              bus_url: str) -> None:
    """A batch of a minute never commits here: the second run replays the first run's
    whole batch from the start, and every one of its rows is already on the bus. The input
    has two partitions, so the replay interleaves them differently into the same outputs."""
    checkpoint = tmp_path / "ck"
    with open_bus(bus_url) as bus:
        for start, count in [(0, 30), (30, 25)]:
            runner = GroupRunner(APP, bus_url, checkpoint, spark=spark,
                                 real_time_batch_ms=60_000, topic_partitions=2)
            runner.start()
            try:
                _append_in_steps(bus, runner.input_topic("Temp"), start, count, step=4)
                assert runner.await_idle(WAIT_S)
            finally:
                runner.stop()
        hot, seen = _expected(55)
        assert sorted(map(tuple, _outputs(bus, runner, "Seen"))) == sorted(map(tuple, seen))
        assert sorted(map(tuple, _outputs(bus, runner, "Hot"))) == sorted(map(tuple, hot))


def test_stateful_groups_run_in_micro_batches(spark: Any, tmp_path: Path,
                                              bus_url: str) -> None:
    app = APP + "@info(name='avg') from Temp#window.length(3) select avg(temp) as a " \
                "insert into Avg;\n"
    runner = GroupRunner(app, bus_url, tmp_path / "ck", spark=spark, real_time_batch_ms=1500)
    assert "stateful" in (runner.real_time_refusal(spark) or "")
    mode, outputs = _run_once(runner, bus_url, 6, "Avg")
    assert mode == "micro-batch" and len(outputs) == 6


def test_a_real_time_group_leaves_a_slot_for_other_queries(
        spark: Any, tmp_path: Path, bus_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real-time group holds a task slot for as long as it runs: one that would take the
    session's last slot runs in micro-batches instead."""
    monkeypatch.setattr(TASK_SLOTS, "held", spark.sparkContext.defaultParallelism - 1)
    runner = GroupRunner(APP, bus_url, tmp_path / "ck", spark=spark, real_time_batch_ms=1500)
    mode, outputs = _run_once(runner, bus_url, 10, "Seen")
    assert mode == "micro-batch" and outputs == _expected(10)[1]


TWO_INPUTS = APP.replace("define stream Temp (room string, temp double);", """\
define stream Temp (room string, temp double);
define stream Hum (room string, hum int);""") + """
@info(name='wet') from Hum[hum > 50] select room, hum insert into Wet;
"""


def test_one_task_reads_every_topic_and_partition(spark: Any, tmp_path: Path,
                                                 bus_url: str) -> None:
    """Two input topics of two partitions each: one long-running task reads all four."""
    runner = GroupRunner(TWO_INPUTS, bus_url, tmp_path / "ck", spark=spark,
                         real_time_batch_ms=1500, topic_partitions=2)
    runner.start()
    try:
        assert runner.mode == "real-time"
        with open_bus(bus_url) as bus:
            hums = pa.table({"room": [f"h{i}" for i in range(20)],
                             "hum": [(37 * i) % 100 for i in range(20)]})
            bus.append(runner.input_topic("Hum"), hums)
            _append_in_steps(bus, runner.input_topic("Temp"), 0, 50)
            assert runner.await_idle(WAIT_S)
            hot, seen = _expected(50)
            assert sorted(map(tuple, _outputs(bus, runner, "Seen"))) == sorted(map(tuple, seen))
            assert sorted(map(tuple, _outputs(bus, runner, "Hot"))) == sorted(map(tuple, hot))
            assert sorted(map(tuple, _outputs(bus, runner, "Wet"))) == sorted(
                (r["room"], r["hum"]) for r in hums.to_pylist() if r["hum"] > 50)
            offsets = runner.status().input_offsets or {}
            assert [sum(offsets[runner.input_topic(s)]) for s in ("Temp", "Hum")] == [50, 20]
            assert len(offsets[runner.input_topic("Temp")]) == 2
    finally:
        runner.stop()
    assert TASK_SLOTS.held == 0


# -- the bridge's pieces, without Spark ----------------------------------------------------


def test_writer_lines_parse_to_output_rows() -> None:
    lines = (b'0\t7\t0\t1000\thot\t\\N\t\\N\t{"room":"a\\tb","twice":52.0}\n'
             b'1\t8\t1,2\t1010\tall\tSeen\t1\t{"room":"c"}\n'
             b'0\t9\t\\N\t1020\tall\t\\N\t0\t\\N\n')
    rows = parse_rows(lines)
    assert rows.column_names == ["_slot", "_seq", "_order", "_ts", "_query", "_target",
                                 "_expired", "_data"]
    assert rows.to_pylist() == [
        {"_slot": 0, "_seq": 7, "_order": [0], "_ts": 1000, "_query": "hot", "_target": None,
         "_expired": None, "_data": '{"room":"a\\tb","twice":52.0}'},
        {"_slot": 1, "_seq": 8, "_order": [1, 2], "_ts": 1010, "_query": "all",
         "_target": "Seen", "_expired": True, "_data": '{"room":"c"}'},
        {"_slot": 0, "_seq": 9, "_order": None, "_ts": 1020, "_query": "all", "_target": None,
         "_expired": False, "_data": None},
    ]
    assert json.loads(rows.column("_data")[0].as_py())["room"] == "a\tb"


@pytest.fixture(scope="module", params=["sqlite", "nats"])
def appender_bus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Bus]:
    if request.param == "sqlite":
        bus = open_bus(sqlite_url(tmp_path_factory.mktemp("bus") / "bus.db"))
    else:
        try:
            bus = open_bus(f"{NATS_URL}?app=rt{uuid.uuid4().hex[:10]}")
        except Exception as error:  # noqa: BLE001 - the server is a test prerequisite
            pytest.skip(f"no NATS server at {NATS_URL}: {error}")
    with bus:
        yield bus


@settings(max_examples=25, deadline=None)
@given(total=st.integers(1, 40), stored=st.integers(0, 40), data=st.data())
def test_a_replayed_task_appends_each_row_once(appender_bus: Bus, total: int, stored: int,
                                               data: st.DataObject) -> None:
    """The first attempt of a task stores a prefix of its rows, cut into appends one way;
    the replay emits all of them, cut another way: the topic holds every row once, in
    order."""
    topic = f"t{uuid.uuid4().hex[:12]}"
    appender_bus.create_topic(TopicSpec(topic, (Attribute("n", AttrType.LONG),)))
    rows = pa.table({"_ts": list(range(total)), "n": list(range(total))})
    epoch = data.draw(st.integers(0, 5), label="epoch")
    for attempt, count in enumerate([min(stored, total), total]):
        appender = TaskAppender(appender_bus, "group/query/rt0", epoch)
        position = 0
        while position < count:
            size = data.draw(st.integers(1, 9), label=f"cut {attempt}")
            appender.append(topic, 0, rows.slice(position, min(size, count - position)))
            position += size
    held = appender_bus.read_table(topic, 0, 0, appender_bus.end_offsets(topic)[0])
    assert held.column("n").to_pylist() == list(range(total))


def test_the_bridge_stores_a_tasks_lines_and_positions(tmp_path: Path, bus_url: str) -> None:
    """The write protocol over a real socket, as ``BridgeWriter.java`` speaks it: lines in
    pieces that straddle the gathering window, position reports among them, then ``END``,
    answered ``OK`` once every row is on the bus. A connection without the token is
    dropped."""
    analyzed = check(APP)
    topics = GroupTopics.of(analyzed, prefix="Live.")
    layout = input_layout(analyzed)
    inputs = GroupInput(layout, (("Temp", "Live.Temp"),))
    with open_bus(bus_url) as bus:
        for output in topics.outputs:
            bus.create_topic(TopicSpec(output.topic, output.attributes))
        bus.create_topic(TopicSpec("Live.Temp", analyzed.streams["Temp"].attributes))
        sink = BusSink(bus, topics.outputs, topics.queries, "Live/main")
        sink.bind("query")
        bridge = Bridge(bus_url, inputs, sink, "Live/main", {"Live.Temp": [0]})
        bridge.start()
        try:
            with socket.create_connection(("127.0.0.1", bridge.port)) as intruder:
                intruder.sendall(b'{"op": "latest", "token": "guess"}\n')
                assert intruder.recv(100) == b""
            with socket.create_connection(("127.0.0.1", bridge.port)) as task:
                request = {"op": "write", "partition": 0, "epoch": 3, "token": bridge.token}
                task.sendall(json.dumps(request).encode() + b"\n")
                for i in range(6):
                    line = (f'0\t{i}\t0\t{1000 + i}\tall\t\\N\t\\N\t'
                            f'{{"room":"r{i}","temp":{20.0 + i},"high":false}}\n').encode()
                    task.sendall(line[:9])
                    time.sleep(0.004)
                    task.sendall(line[9:] + (f"POS\tLive.Temp\t0\t{i + 1}\n".encode()
                                             if i % 2 else b""))
                task.sendall(b"END\n")
                assert task.recv(10) == b"OK\n"
            seen = output_events(bus, "Live.Seen")
            assert [e["data"] for e in seen] == [[f"r{i}", 20.0 + i, False] for i in range(6)]
            assert [e["timestamp"] for e in seen] == [1000 + i for i in range(6)]
            assert bridge.completed() == {"Live.Temp": [6]}
            assert sink.stats.events == {"Seen": 6} and sink.stats.last_batch_id == 3
            wait_for(lambda: bus.committed("Live/main/progress", "Live.Temp", 0) == 6, 10,
                     "the bridge to report its progress")
            assert bus.committed("Live/main", "Live.Temp", 0) is None  # Spark's to commit
        finally:
            bridge.stop()


def test_the_workers_setting_reaches_its_runners(tmp_path: Path, bus_url: str) -> None:
    from eddy.node.runner import AppSpec, spark_runner_factory

    spec = AppSpec("Live", APP, tmp_path / "ck", bus_url)
    plain = spark_runner_factory(None)(spec)._runner  # type: ignore[attr-defined]
    real_time = spark_runner_factory(300)(spec)._runner  # type: ignore[attr-defined]
    # The worker runs an app as its groups; an app without @dist is one group.
    assert [r.real_time_batch_ms for r in plain.runners] == [None]
    assert [r.real_time_batch_ms for r in real_time.runners] == [300_000]
