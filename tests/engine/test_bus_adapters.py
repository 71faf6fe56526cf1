"""The group's bus adapters: input topics → Spark query → output topics, exactly once.

The end-to-end tests run a real streaming query (the session's SparkSession) over a real
SQLite bus in a temporary directory, and one over the NATS server at ``EDDY_TEST_NATS``
when it is reachable. Every wait is bounded. The order and admission tests call the
reader directly, without Spark.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.engine.run.bus_sink import QUERY_CODE, BusSink, OutputStream, named_queries, sink_rows
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_topics import GroupTopics, output_events
from eddy.engine.spark.bus_source import (
    BatchSlice,
    BusStreamReader,
    GroupInput,
    admit,
    ordered_rows,
    register_bus_source,
)
from eddy.engine.spark.data_sources import RUNNER_ENV_KEYS
from eddy.engine.spark.row_layout import STORE_STREAM, InputLayout
from eddy.lang import check
from eddy.lang.ast import Attribute, AttrType

NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")
WAIT_S = 90.0

APP = """
@app:name('Rooms')
define stream Temp (room string, temp double);
define stream Hum (room string, hum int);
@info(name='hot') from Temp[temp > 25.0] select room, temp insert into Hot;
@info(name='avg') from Temp#window.length(3) select room, avg(temp) as avgTemp
    insert into Avg;
@info(name='wet') from Hum[hum > 50] select room, hum insert into Wet;
"""
FILTER_APP = """
@app:name('Hot')
define stream Temp (room string, temp double);
from Temp[temp > 25.0] select room, temp * 2.0 as twice insert into Hot;
"""

TEMPS = [(1_000_000 + 10 * i, f"r{i % 4}", 20.0 + (7 * i) % 13) for i in range(36)]
HUMS = [(1_000_005 + 20 * i, f"r{i % 3}", (17 * i) % 100) for i in range(18)]


def _temp(rows: list[tuple[int, str, float]]) -> pa.Table:
    return pa.table({"_ts": [r[0] for r in rows], "room": [r[1] for r in rows],
                     "temp": [r[2] for r in rows]})


def _hum(rows: list[tuple[int, str, int]]) -> pa.Table:
    return pa.table({"_ts": [r[0] for r in rows], "room": [r[1] for r in rows],
                     "hum": pa.array([r[2] for r in rows], pa.int32())})


def _expected() -> dict[str, list[dict[str, Any]]]:
    """What Siddhi emits for TEMPS and HUMS (the app's queries each read one stream, so
    how the two streams interleave does not matter)."""
    temps = [t for _, _, t in TEMPS]
    return {
        "Hot": [{"timestamp": ts, "data": [room, t]} for ts, room, t in TEMPS if t > 25.0],
        "Avg": [{"timestamp": ts, "data": [room, pytest.approx(
                    sum(temps[max(0, i - 2):i + 1]) / len(temps[max(0, i - 2):i + 1]))]}
                for i, (ts, room, _) in enumerate(TEMPS)],
        "Wet": [{"timestamp": ts, "data": [room, h]} for ts, room, h in HUMS if h > 50],
    }


def _thirds(rows: list[Any]) -> list[list[Any]]:
    n = len(rows)
    return [rows[: n // 3], rows[n // 3: 2 * n // 3], rows[2 * n // 3:]]


def _append_part(bus: Bus, part: int) -> None:
    # Each part in two appends per topic, so a micro-batch may see any prefix of them.
    temps = _thirds(TEMPS)[part]
    for rows in (temps[: len(temps) // 2], temps[len(temps) // 2:]):
        bus.append("Temp", _temp(rows))
    bus.append("Hum", _hum(_thirds(HUMS)[part]))


def _outputs(bus: Bus) -> dict[str, list[dict[str, Any]]]:
    return {stream: output_events(bus, stream) for stream in ("Hot", "Avg", "Wet")}


def _runner(spark: Any, url: str, checkpoint: Path,
            on_output: Callable[[int, Mapping[str, pa.Table]], None] | None = None,
            app: str = APP, max_rows_per_batch: int = 0) -> GroupRunner:
    return GroupRunner(app, url, checkpoint, spark=spark, on_output=on_output,
                       max_rows_per_batch=max_rows_per_batch)


# -- end to end --------------------------------------------------------------------------


def test_events_on_input_topics_come_out_on_output_topics(spark: Any, bus_url: str,
                                                          bus: Bus, tmp_path: Path) -> None:
    runner = _runner(spark, bus_url, tmp_path / "checkpoint")
    runner.start()
    try:
        for part in range(3):
            _append_part(bus, part)
        assert runner.await_idle(WAIT_S)
        status = runner.status()
    finally:
        runner.stop()
    assert _outputs(bus) == _expected()
    assert status.state == "running" and status.error is None
    assert status.input_offsets == {"Temp": [len(TEMPS)], "Hum": [len(HUMS)]}
    assert runner.status().state == "stopped"
    with pytest.raises(ValueError, match="another app text"):
        _runner(spark, bus_url, tmp_path / "checkpoint", app=FILTER_APP).start()


def test_a_query_start_leaves_the_sources_shared_env_map_as_it_was(spark: Any, bus_url: str,
                                                                   bus: Bus,
                                                                   tmp_path: Path) -> None:
    """Spark's streaming source runner puts keys into the env map that every query of a Python
    source shares and serialises into its tasks. Added at registration, a query start only
    replaces their values, so no task is serialised while the map changes shape
    (:mod:`eddy.engine.spark.data_sources`; the race failed a restarted worker's tasks)."""
    register_bus_source(spark)
    env = (spark._jsparkSession.sessionState().dataSourceManager()
           .lookupDataSource("eddy-bus").dataSourceCls().envVars())
    registered = set(env.keySet())
    assert set(RUNNER_ENV_KEYS) <= registered
    runner = _runner(spark, bus_url, tmp_path / "checkpoint", app=FILTER_APP)
    runner.start()
    try:
        bus.append("Temp", _temp(TEMPS[:3]))
        assert runner.await_idle(WAIT_S)
    finally:
        runner.stop()
    assert set(env.keySet()) == registered


def test_restart_and_crash_mid_batch_resume_exactly(spark: Any, bus_url: str, bus: Bus,
                                                    tmp_path: Path) -> None:
    """Micro-batches of at most 10 events. Stop cleanly between batches after a third of
    the input; crash in the middle of a batch (its outputs already on the bus, the batch
    not committed) after another; restart and append the rest: the output topics hold
    exactly the output of an uninterrupted run. The restarted runner's query was planned
    before the crash (as an HA passive plans ahead): a plan holds no position."""
    checkpoint = tmp_path / "checkpoint"
    first = _runner(spark, bus_url, checkpoint, max_rows_per_batch=10)
    first.start()
    try:
        _append_part(bus, 0)
        assert first.await_idle(WAIT_S)
        query = spark.streams.get(first.status().query_id)
        batch_rows = [_admitted(p["sources"][0]) for p in query.recentProgress
                      if p["numInputRows"]]
    finally:
        first.stop()
    consumer = first.name
    # The backlog was cut into micro-batches of at most 10 events.
    assert sum(batch_rows) == len(_thirds(TEMPS)[0]) + len(_thirds(HUMS)[0])
    assert len(batch_rows) > 1 and max(batch_rows) <= 10

    crashed: list[int] = []

    def crash_after_writing(batch_id: int, tables: Mapping[str, pa.Table]) -> None:
        if tables:
            crashed.append(batch_id)
            raise RuntimeError("simulated crash after the outputs were appended")

    replayed: list[int] = []
    third = _runner(spark, bus_url, checkpoint, max_rows_per_batch=10,
                    on_output=lambda batch_id, tables: replayed.append(batch_id))
    third.plan()
    second = _runner(spark, bus_url, checkpoint, on_output=crash_after_writing,
                     max_rows_per_batch=10)
    second.start()
    try:
        _append_part(bus, 1)
        with pytest.raises(RuntimeError, match="simulated crash"):
            second.await_idle(WAIT_S)
    finally:
        second.stop()
    assert len(crashed) == 1
    assert len(output_events(bus, "Hot")) > len([t for t in _thirds(TEMPS)[0] if t[2] > 25])

    third.start()
    try:
        assert third.await_idle(WAIT_S)  # the crashed batch, replayed
        _append_part(bus, 2)
        assert third.await_idle(WAIT_S)
    finally:
        third.stop()
    assert replayed[0] == crashed[0]
    assert _outputs(bus) == _expected()
    # The group's consumer position protects what it has not finished with, and no more.
    for topic, events in (("Temp", TEMPS), ("Hum", HUMS)):
        committed = bus.committed(consumer, topic, 0)
        assert committed is not None and len(_thirds(events)[0]) <= committed <= len(events)


def _admitted(source: Mapping[str, Any]) -> int:
    """How many events a micro-batch's progress says the bus source admitted."""
    def offsets(value: Any) -> dict[str, list[int]]:
        value = json.loads(value) if isinstance(value, str) else value
        return dict(value or {})

    start, end = offsets(source["startOffset"]), offsets(source["endOffset"])
    return sum(e - s for topic in end if topic != "__tick__"  # the heartbeat's topic
               for e, s in zip(end[topic], start.get(topic, [0] * len(end[topic]))))


def _nats_reachable() -> bool:
    address = urlsplit(NATS_URL)
    try:
        with socket.create_connection((address.hostname or "127.0.0.1", address.port or 4222),
                                      timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("backend", ["nats", "kafka"])
def test_filter_app_over_a_networked_bus(spark: Any, tmp_path: Path, backend: str,
                                         request: pytest.FixtureRequest) -> None:
    app = f"test-{uuid.uuid4().hex[:12]}"
    if backend == "nats":
        if not _nats_reachable():
            pytest.skip(f"no NATS server at {NATS_URL}")
        url = f"{NATS_URL}?app={app}"
    else:  # Tansu (tests/kafka_broker.py) has no DeleteRecords
        url = f"kafka://{request.getfixturevalue('kafka_bootstrap')}?app={app}" \
            "&delete_records=false"
    bus = open_bus(url)
    runner = _runner(spark, url, tmp_path / "checkpoint", app=FILTER_APP)
    try:
        runner.start()
        bus.append("Temp", _temp(TEMPS[:20]))
        bus.append("Temp", _temp(TEMPS[20:]))
        assert runner.await_idle(WAIT_S)
        runner.stop()
        assert output_events(bus, "Hot") == [
            {"timestamp": ts, "data": [room, 2 * t]} for ts, room, t in TEMPS if t > 25.0]
    finally:
        runner.stop()
        bus.destroy()  # type: ignore[attr-defined]
        bus.close()


# -- the group's order -------------------------------------------------------------------

LAYOUT = InputLayout.of({"A": (Attribute("v", AttrType.LONG),),
                         "B": (Attribute("w", AttrType.STRING), Attribute("x", AttrType.INT))})


def _reader(url: str, **options: str) -> BusStreamReader:
    inputs = GroupInput(LAYOUT, (("B", "TopicB"), ("A", "TopicA")))
    return BusStreamReader({"url": url, "consumer": "g", "inputs": inputs.to_json(),
                            **options})


def _fill(bus: Bus) -> None:
    bus.create_topic(TopicSpec("TopicA", LAYOUT.attributes("A"), partitions=2, key="v"))
    bus.create_topic(TopicSpec("TopicB", LAYOUT.attributes("B"), partitions=1))
    # A's timestamps go backwards within partitions (playback time): arrival order must hold.
    bus.append("TopicA", pa.table({"_ts": [50, 10, 30, 20, 40, 60, 35, 5],
                                   "v": [1, 2, 3, 4, 5, 6, 7, 8]}))
    bus.append("TopicB", pa.table({"_ts": [10, 20, 30, 70], "w": ["a", "b", "c", "d"],
                                   "x": pa.array([1, 2, 3, 4], pa.int32())}))


def _read_all(reader: BusStreamReader, bus: Bus, max_tasks: int) -> list[dict[str, Any]]:
    reader.max_tasks, reader.rows_per_task = max_tasks, 1
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    slices = reader.partitions(start, end)
    assert len(slices) == max_tasks
    rows: list[dict[str, Any]] = []
    for task in slices:
        assert isinstance(task, BatchSlice)
        rows += ordered_rows(bus, reader.inputs, task).to_pylist()
    return rows


def test_seq_is_one_deterministic_order_over_all_topics(bus_url: str, bus: Bus) -> None:
    _fill(bus)
    once = _read_all(_reader(bus_url), bus, max_tasks=1)
    assert _read_all(_reader(bus_url), bus, max_tasks=3) == once
    assert _read_all(_reader(bus_url), bus, max_tasks=1) == once
    assert [r["_seq"] for r in once] == list(range(12))
    # Per topic partition the arrival order is kept, even where timestamps go backwards;
    # partitions interleave by their high-water timestamp, then by the stream's place in
    # the group (A before B), partition and sequence.
    order = [r["s0_0"] if r["_stream"] == "A" else r["s1_0"] for r in once]
    high_water: dict[Any, int] = {"a": 10, "b": 20, "c": 30, "d": 70}
    for p in range(2):
        events = bus.read_table("TopicA", p, 0, bus.end_offsets("TopicA")[p]).to_pydict()
        assert [v for v in order if v in events["v"]] == events["v"]
        for i, v in enumerate(events["v"]):
            high_water[v] = max(events["_ts"][: i + 1])
    assert [v for v in order if isinstance(v, str)] == ["a", "b", "c", "d"]
    assert [high_water[v] for v in order] == sorted(high_water.values())
    ties = [(v, b) for v in order for b in "abcd"
            if isinstance(v, int) and high_water[v] == high_water[b]]
    assert ties and all(order.index(v) < order.index(b) for v, b in ties)  # A before B


def test_next_batch_continues_the_seq_and_commit_moves_the_consumer(bus_url: str,
                                                                   bus: Bus) -> None:
    _fill(bus)
    reader = _reader(bus_url)
    start = reader.initialOffset()
    assert start == {"TopicB": [0], "TopicA": bus.start_offsets("TopicA")}
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    reader.commit(end)
    assert [bus.committed("g", "TopicA", p) for p in range(2)] == end["TopicA"]
    bus.append("TopicB", pa.table({"_ts": [1], "w": ["e"], "x": pa.array([5], pa.int32())}))
    later = reader.latestOffset(end, reader.getDefaultReadLimit())
    (task,) = reader.partitions(end, later)
    assert isinstance(task, BatchSlice)
    assert ordered_rows(bus, reader.inputs, task).column("_seq").to_pylist() == [12]
    # A restarted group without a checkpoint resumes from the committed position.
    assert _reader(bus_url).initialOffset() == end


def test_admission_takes_the_events_that_come_first_in_time(bus_url: str, bus: Bus) -> None:
    """A backlog cut into batches is admitted in the group's order, so a later event of one
    stream never overtakes an earlier event of another."""
    reader = _reader(bus_url)
    bus.create_topic(TopicSpec("TopicA", LAYOUT.attributes("A")))
    bus.create_topic(TopicSpec("TopicB", LAYOUT.attributes("B")))
    bus.append("TopicA", pa.table({"_ts": [1, 2, 3, 4, 9], "v": [1, 2, 3, 4, 9]}))
    bus.append("TopicB", pa.table({"_ts": [5, 6], "w": ["a", "b"], "x": pa.array([1, 2],
                                                                                  pa.int32())}))
    start = reader.initialOffset()
    end = {t: bus.end_offsets(t) for t in start}
    admitted = admit(bus, reader.inputs, start, end, 3)
    assert admitted == admit(bus, reader.inputs, start, end, 3)  # deterministic
    taken = {t: sum(e - s for s, e in zip(start[t], admitted[t])) for t in start}
    assert taken == {"TopicA": 3, "TopicB": 0}
    assert admit(bus, reader.inputs, start, end, 1_000) == end
    later = admit(bus, reader.inputs, admitted, end, 3)
    taken = {t: sum(e - s for s, e in zip(admitted[t], later[t])) for t in start}
    assert taken == {"TopicA": 1, "TopicB": 2}  # ts 4, then 5 and 6 before 9


def test_reader_refuses_a_topic_with_another_schema(bus_url: str, bus: Bus) -> None:
    bus.create_topic(TopicSpec("TopicA", LAYOUT.attributes("A")))
    bus.create_topic(TopicSpec("TopicB", (Attribute("w", AttrType.STRING),)))
    with pytest.raises(ValueError, match="topic 'TopicB' holds"):
        _reader(bus_url).initialOffset()


# -- topics and the writer -------------------------------------------------------------


def test_group_topics_are_the_external_inputs_and_every_inserted_stream() -> None:
    analyzed = check("""
    define stream S (k string, v int);
    define stream Out (k string, v int);
    @info(name='a') from S[v > 0] select k, v insert into Out;
    @info(name='b') from Out select k, v * 2 as w insert into Doubled;
    """)
    topics = GroupTopics.of(analyzed, prefix="app.")
    assert topics.inputs == ("S",)
    assert [(o.stream, o.topic) for o in topics.outputs] == [("Out", "app.Out"),
                                                            ("Doubled", "app.Doubled")]
    assert topics.queries == {"a": "Out", "b": "Doubled"}


def test_sink_orders_decodes_and_appends_idempotently(bus: Bus) -> None:
    out = OutputStream("Out", "Out", (Attribute("k", AttrType.STRING),
                                      Attribute("d", AttrType.DOUBLE),
                                      Attribute("n", AttrType.LONG)))
    bus.create_topic(TopicSpec("Out", out.attributes))
    sink = BusSink(bus, [out], {"q": "Out"}, "app/g")
    sink.bind("query-1")
    rows = pa.table({
        "_seq": [5, 2, 2, 9], "_order": [[1], [1, 3], [1, 2], [1]], "_ts": [50, 20, 21, 90],
        "_query": ["q", "q", "q", "__store_query__"], "_target": ["Out"] * 4,
        "_expired": [False] * 4,
        "_data": ['["x", "NaN", 3]', '{"k": "y", "d": 1.5, "n": null}', '["z", 2, 7]', '[]'],
    })

    class Frame:
        def toArrow(self) -> pa.Table:
            return rows

    for _ in range(2):  # the replay of batch 7 is dropped by the bus
        sink(Frame(), 7)  # type: ignore[arg-type]
    events = output_events(bus, "Out")
    assert [e["timestamp"] for e in events] == [21, 20, 50]
    assert events[0]["data"] == ["z", 2.0, 7] and events[1]["data"] == ["y", 1.5, None]
    assert events[2]["data"][0] == "x" and events[2]["data"][1] != events[2]["data"][1]
    assert sink.stats.last_batch_id == 7


def test_sink_takes_value_slots_and_json_of_one_stream_together(bus: Bus) -> None:
    """A stream fed by a JVM query (typed value slots) and a Python one (``_data``)."""
    out = OutputStream("Mixed", "Mixed", (Attribute("k", AttrType.STRING),
                                          Attribute("d", AttrType.DOUBLE),
                                          Attribute("e", AttrType.DOUBLE)))
    bus.create_topic(TopicSpec("Mixed", out.attributes))
    sink = BusSink(bus, [out], {"jvm": "Mixed", "py": "Mixed"}, "app/g")
    sink.bind("query-1")
    rows = pa.table({
        "_seq": [1, 2, 3], "_order": [[1], [1], [1]], "_ts": [10, 20, 30],
        "_query": ["jvm", "py", "jvm"], "_target": ["Mixed"] * 3, "_expired": [False] * 3,
        "_data": [None, '["p", 2.5, null]', None],
        "_vstring0": ["a", None, "c"], "_vdouble0": [1.0, None, 3.0],
        "_vdouble1": [-1.0, None, None],
    })

    class Frame:
        def toArrow(self) -> pa.Table:
            return rows

    sink(Frame(), 0)  # type: ignore[arg-type]
    assert [e["data"] for e in output_events(bus, "Mixed")] == [
        ["a", 1.0, -1.0], ["p", 2.5, None], ["c", 3.0, None]]


_ROW = st.tuples(st.integers(0, 6), st.lists(st.integers(0, 3), min_size=1, max_size=3),
                 st.sampled_from(["a", "b", "c", "__store_query__"]), st.integers(-50, 50))


@settings(max_examples=150, deadline=None)
@given(st.lists(_ROW, max_size=30), st.sampled_from(["as drawn", "sorted", "by stream"]))
def test_sink_tables_are_each_streams_rows_in_the_groups_order(
        raw: list[tuple[int, list[int], str, int]], arrival: str) -> None:
    """Each stream's table holds exactly its queries' rows, sorted by ``(_seq, _order)``
    as Python sorts them (stable), whatever order the batch arrives in — already sorted
    (no copy is made), each stream's rows together and in order (as the branches of a
    group's union come: a slice of the batch) or not — with the values of its slots only."""
    if arrival == "sorted":
        raw = sorted(raw, key=lambda r: (r[0], r[1]))
    elif arrival == "by stream":
        raw = sorted(raw, key=lambda r: (r[2] == "b", r[0], r[1]))
    one = OutputStream("One", "One", (Attribute("v", AttrType.LONG),))
    two = OutputStream("Two", "Two", (Attribute("w", AttrType.LONG),))
    sink = BusSink(None, [one, two], {"a": "One", "b": "Two", "c": "One"},  # type: ignore[arg-type]
                   "app/g")
    rows = pa.table({
        "_seq": pa.array([r[0] for r in raw], pa.int64()),
        "_order": pa.array([r[1] for r in raw], pa.list_(pa.int32())),
        "_ts": pa.array([r[3] * 10 for r in raw], pa.int64()),
        "_query": pa.array([r[2] for r in raw], pa.string()),
        "_data": pa.array([None] * len(raw), pa.string()),
        "_vlong0": pa.array([r[3] for r in raw], pa.int64()),
    })
    tables = sink.tables(rows)
    for stream, queries in (("One", {"a", "c"}), ("Two", {"b"})):
        mine = sorted((r for r in raw if r[2] in queries), key=lambda r: (r[0], r[1]))
        table = tables.get(stream)
        got = [] if table is None else list(zip(table.column("_ts").to_pylist(),
                                               table.column(table.column_names[1]).to_pylist()))
        assert got == [(r[3] * 10, r[3]) for r in mine]


def test_sink_rows_keep_targets_only_on_answers_and_queries_as_numbers(spark: Any) -> None:
    """What the group's query hands the sink: ``_target`` (a stream name, as text, on every
    output) left only where the sink reads it — the rows of on-demand answers — and the
    sink's queries as numbers, which :func:`named_queries` turns back into their names; a
    query the sink was not told of keeps its name as text."""
    frame = spark.createDataFrame(
        [(1, "q", "Out", "x"), (2, STORE_STREAM, "__answered__", "y"), (3, None, "Out", "z"),
         (4, "other", "T", "w")],
        "_seq long, _query string, _target string, _data string")
    rows = sink_rows(frame, ("q", STORE_STREAM))
    assert rows.columns == [*frame.columns, QUERY_CODE]
    assert [tuple(r) for r in rows.orderBy("_seq").collect()] == [
        (1, None, None, "x", 0), (2, None, "__answered__", "y", 1), (3, None, None, "z", None),
        (4, "other", None, "w", None)]
    named = named_queries(rows.orderBy("_seq").toArrow(), ("q", STORE_STREAM))
    assert named.column_names == frame.columns
    assert named.column("_query").to_pylist() == ["q", STORE_STREAM, None, "other"]
    assert sink_rows(frame).columns == frame.columns  # no names: text as before


def test_a_literal_query_name_becomes_a_literal_number(spark: Any) -> None:
    """Operators that name their query with a literal (Spark SQL, eddy's Java operators) get
    a literal number through the group's union: no per-row comparison of names remains in
    the plan Spark runs."""
    base = spark.range(3).select(F.col("id").alias("_seq"))
    one = base.select("_seq", F.lit("query-1").alias("_query"), F.lit(1.0).alias("_vdouble0"))
    two = base.select("_seq", F.lit("query-2").alias("_query"), F.lit(2).alias("_vint0"))
    union = one.unionByName(two, allowMissingColumns=True)
    rows = sink_rows(union, ("query-1", "query-2", STORE_STREAM))
    plan = rows._jdf.queryExecution().optimizedPlan().toString()
    assert "CASE WHEN" not in plan, plan
    assert sorted((r[QUERY_CODE], r["_query"]) for r in rows.collect()) == \
        [(0, None)] * 3 + [(1, None)] * 3


def test_admission_from_one_partition_reads_no_events(bus_url: str, bus: Bus) -> None:
    """Planning every micro-batch of a backlog on one partition costs no bus read: its first
    ``max_rows`` events are the batch, as the general cut says."""
    reader = _reader(bus_url)
    bus.create_topic(TopicSpec("TopicA", LAYOUT.attributes("A")))
    bus.create_topic(TopicSpec("TopicB", LAYOUT.attributes("B")))
    bus.append("TopicA", pa.table({"_ts": [5, 1, 7, 2, 9], "v": [1, 2, 3, 4, 5]}))
    start = reader.initialOffset()
    end = {t: bus.end_offsets(t) for t in start}
    reads: list[str] = []
    read_table = bus.read_table

    def counted(topic: str, *args: int) -> pa.Table:
        reads.append(topic)
        return read_table(topic, *args)

    bus.read_table = counted  # type: ignore[method-assign]
    assert admit(bus, reader.inputs, start, end, 3) == {"TopicA": [3], "TopicB": [0]}
    assert reads == []
    bus.append("TopicB", pa.table({"_ts": [0], "w": ["a"], "x": pa.array([1], pa.int32())}))
    end = {t: bus.end_offsets(t) for t in start}
    assert admit(bus, reader.inputs, start, end, 3) == {"TopicA": [2], "TopicB": [1]}
    assert reads  # two partitions with events: their timestamps decide
