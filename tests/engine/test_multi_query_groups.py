"""A group of several stateful queries runs each in its own operator, and its outputs are
the per-event runtime's, value for value and in the reference order.

Random events (few rooms, so windows and patterns meet; time steps that sometimes jump
past a window or ``within``) cut into random micro-batches go through the real plan on
Spark (``compile_group`` over the replay source, one micro-batch per cut) and through one
per-event runtime of the whole app; the two output sequences must be equal. The plans are
checked too, so that the test fails if the planner falls back to one runtime for the group.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eddy.engine.compile.group_query import compile_group
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.runtime_operator import run_batch
from eddy.engine.run.replay import source_schema
from eddy.engine.spark.jvm_classes import bridge_jar
from eddy.engine.spark.row_layout import decode_data, encode_rows, input_layout, row_values
from eddy.engine.spark.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang import check
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, sort_outputs

pytest.importorskip("pyspark")

TEMP = "define stream TempStream (deviceID long, roomNo int, temp double);\n"
JVM = bridge_jar() is not None
"""With a JDK, sliding windows (max/min only there) and patterns run in eddy's Java
operators."""
SLIDING = "jvm-window-aggregate" if JVM else "window-aggregate"
APPS = {
    "two-windows": (TEMP + """
@info(name = 'avg-time') from TempStream#window.time(1 sec)
select roomNo, avg(temp) as avgTemp group by roomNo insert into AvgStream;
@info(name = 'max-length') from TempStream#window.length(4)
select roomNo, max(temp) as maxTemp group by roomNo insert into MaxStream;
""", {"avg-time": SLIDING, "max-length": "jvm-window-aggregate" if JVM else "runtime"}),
    "seed": ("@app:playback\n" + TEMP + """
@info(name = 'query-1') from TempStream#window.time(2 sec)
select avg(temp) as avgTemp, roomNo, deviceID insert all events into AvgTempStream;
@info(name = 'query-2')
from every( e1=TempStream ) -> e2=TempStream[e1.roomNo == roomNo and (e1.temp + 5) <= temp]
within 3 sec
select e1.roomNo, e1.temp as initialTemp, e2.temp as finalTemp insert into AlertStream;
@info(name = 'query-3') from TempStream[(roomNo >= 1 and roomNo < 3) and temp > 40]
select roomNo, temp insert into HighTempStream;
""", {"query-1": SLIDING, "query-2": "jvm-followed-by" if JVM else "followed-by",
      "query-3": "spark-sql"}),
    # Three vectorised windows (one emitting expired events, on timers that OtherStream's
    # rows fire too) and a runtime query whose filter runs in the JVM; the runtime's clock is
    # moved by the rows that fail it and by OtherStream's, which only a Spark SQL query
    # reads (both reach the runtime as heartbeats).
    "clock": ("@app:playback\n" + TEMP + """
define stream OtherStream (roomNo int);
@info(name = 'batch') from TempStream#window.timeBatch(1 sec)
select roomNo, count() as n group by roomNo insert into BatchStream;
@info(name = 'avg') from TempStream[temp > 20]#window.time(1 sec)
select roomNo, avg(temp) as avgTemp group by roomNo insert into AvgStream;
@info(name = 'expiring') from TempStream[temp > 25]#window.time(1 sec)
select roomNo, sum(temp) as total insert all events into TotalStream;
@info(name = 'expiring-max') from TempStream[temp > 25]#window.time(1 sec)
select roomNo, max(temp) as top insert expired events into TopStream;
@info(name = 'distinct') from TempStream[temp > 25]#window.session(1 sec)
select roomNo, distinctCount(deviceID) as devices group by roomNo
insert into DevicesStream;
@info(name = 'other') from OtherStream[roomNo > 0] select roomNo insert into OtherOut;
""", {"batch": SLIDING, "avg": SLIDING, "expiring": SLIDING,
      "expiring-max": "jvm-window-aggregate" if JVM else "runtime",
      "distinct": "jvm-window-aggregate" if JVM else "runtime",
      "other": "spark-sql"}),
    # Stateless queries reading a stateful query's output (its expired events too), tails of
    # tails, and tails of eddy's Java operators, a Python operator and the runtime; a join's
    # aggregates and a tail of them.
    "chains": ("@app:playback\n" + TEMP + """
define stream OtherStream (roomNo int);
@info(name = 'avg') from TempStream#window.time(1 sec)
select roomNo, avg(temp) as avgTemp group by roomNo insert all events into AvgStream;
@info(name = 'hot') from AvgStream[avgTemp > 30.0] select roomNo, avgTemp * 2 as doubled
insert into HotStream;
@info(name = 'hotter') from HotStream[doubled > 70.0] select roomNo insert into Hotter;
@info(name = 'cold') from AvgStream[avgTemp < 25.0] select roomNo insert into Cold;
@info(name = 'rise')
from every e1=TempStream -> e2=TempStream[e1.roomNo == roomNo and e1.temp < temp] within 2 sec
select e1.roomNo, e2.temp insert into Rises;
@info(name = 'big-rise') from Rises[temp > 40.0] select roomNo insert into BigRises;
@info(name = 'pairs') from TempStream#window.length(3) as a join OtherStream#window.length(2) as b
on a.roomNo == b.roomNo select a.roomNo, a.temp insert into Pairs;
@info(name = 'hot-pairs') from Pairs[temp > 30.0] select roomNo insert into HotPairs;
@info(name = 'pair-stats') from TempStream#window.length(3) as a
join OtherStream#window.length(2) as b on a.roomNo == b.roomNo
select a.roomNo, count() as n, avg(a.temp) as mean group by a.roomNo
insert all events into PairStats;
@info(name = 'warm-pairs') from PairStats[mean > 25.0] select roomNo, n insert into WarmPairs;
@info(name = 'sessions') from TempStream#window.session(1 sec)
select roomNo, count() as n insert into Sessions;
@info(name = 'busy') from Sessions[n > 2] select roomNo insert into Busy;
""", {"avg": SLIDING, "hot": "spark-sql-tail", "hotter": "spark-sql-tail",
      "cold": "spark-sql-tail", "rise": "jvm-followed-by" if JVM else "followed-by",
      "big-rise": "spark-sql-tail", "pairs": "window-join", "hot-pairs": "spark-sql-tail",
      "pair-stats": "window-join", "warm-pairs": "spark-sql-tail",
      "sessions": "jvm-window-aggregate" if JVM else "runtime",
      "busy": "spark-sql-tail" if JVM else "runtime"}),
    # Stateful queries reading what a filter inserts (a projection, a rename, ``select *``,
    # a computed attribute; a window, a pattern, a self join; through two filters), a
    # second filter on the way, and a tail after one of them; 'cold' reads TempStream
    # after 'warm' and before the queries 'warm' feeds, whose outputs come first.
    "heads": ("@app:playback\n" + TEMP + """
@info(name = 'warm') from TempStream[temp > 20.0] select roomNo, temp as t, deviceID
insert into Warm;
@info(name = 'cold') from TempStream[temp < 25.0] select * insert into Cold;
@info(name = 'warm-avg') from Warm#window.time(1 sec)
select roomNo, avg(t) as avgT group by roomNo insert all events into WarmAvg;
@info(name = 'warm-max') from Warm[t < 45.0]#window.length(4) as w
select w.roomNo, max(w.t) as top insert into WarmMax;
@info(name = 'alert') from WarmAvg[avgT > 35.0] select roomNo insert into Alert;
@info(name = 'cold-count') from Cold#window.lengthBatch(3) select count() as n, roomNo
insert into ColdCount;
@info(name = 'hot') from TempStream[temp > 30.0] select roomNo, temp * 2 as t2, deviceID
insert into Hot;
@info(name = 'hot-rise')
from every e1=Hot -> e2=Hot[e1.roomNo == roomNo and e1.t2 + 5 <= t2] within 2 sec
select e1.roomNo, e1.t2 as first, e2.t2 as second insert into HotRises;
@info(name = 'hot-pairs') from Hot#window.length(2) as a join Hot#window.length(3) as b
on a.roomNo == b.roomNo and a.t2 > b.t2 select a.roomNo, b.t2 insert into HotPairs;
@info(name = 'mild') from Warm[t < 40.0] select roomNo, t insert into Mild;
@info(name = 'mild-min') from Mild#window.length(3) select roomNo, min(t) as low
insert into MildMin;
""", {"mild": "spark-sql" if JVM else "runtime",
      "mild-min": "jvm-window-aggregate" if JVM else "runtime",
      "warm": "spark-sql" if JVM else "runtime", "warm-avg": SLIDING,
      "warm-max": "jvm-window-aggregate" if JVM else "runtime", "alert": "spark-sql-tail",
      "cold": "spark-sql" if JVM else "runtime",
      "cold-count": "jvm-window-aggregate" if JVM else "runtime", "hot": "spark-sql",
      "hot-rise": "jvm-followed-by" if JVM else "followed-by", "hot-pairs": "window-join"}),
    # Stateful queries reading what a stateful query inserts, in the same micro-batch: a
    # pattern, a length window (with a tail) and a batch window after a time window's
    # averages; a sort window after a length window with 'having' (some rows emit nothing);
    # a pattern after a window a filter feeds; a filter of the averages written after their
    # readers (its outputs follow theirs); a pattern over a reader's outputs (three links).
    "stateful-chains": ("@app:playback\n" + TEMP + """
@info(name = 'avg') from TempStream[temp > 20.0]#window.time(1 sec)
select roomNo, avg(temp) as avgTemp group by roomNo insert into AvgStream;
@info(name = 'climb')
from every e1=AvgStream[avgTemp > 30.0]
  -> e2=AvgStream[roomNo == e1.roomNo and avgTemp > e1.avgTemp] within 2 sec
select e1.roomNo, e1.avgTemp as before, e2.avgTemp as after insert into Climbs;
@info(name = 'tops') from AvgStream#window.length(3) select roomNo, max(avgTemp) as top
group by roomNo insert into Tops;
@info(name = 'top-alert') from Tops[top > 40.0] select roomNo insert into TopAlert;
@info(name = 'batches') from AvgStream#window.lengthBatch(2) select count() as n,
sum(avgTemp) as total insert into Batches;
@info(name = 'warmish') from TempStream#window.length(3)
select roomNo, avg(temp) as mean group by roomNo having mean > 25.0 insert into Warmish;
@info(name = 'sorted') from Warmish#window.sort(2, mean) select roomNo, mean, count() as n
insert into Sorted;
@info(name = 'valid') from TempStream[temp < 45.0] select roomNo, temp insert into Valid;
@info(name = 'valid-avg') from Valid#window.time(1 sec) select roomNo, avg(temp) as a
group by roomNo insert into ValidAvg;
@info(name = 'valid-rise')
from every e1=ValidAvg -> e2=ValidAvg[roomNo == e1.roomNo and a > e1.a]
select e1.roomNo, e1.a as before, e2.a as after insert into ValidRises;
@info(name = 'avg-alert') from AvgStream[avgTemp > 40.0] select roomNo insert into AvgAlert;
@info(name = 'top-rise') from every e1=Tops -> e2=Tops[roomNo == e1.roomNo and top > e1.top]
select e1.roomNo, e2.top as higher insert into TopRises;
""", {"avg-alert": "spark-sql-tail" if JVM else "runtime",
      "top-rise": "jvm-followed-by" if JVM else "runtime",
      "valid": "spark-sql" if JVM else "runtime",
      "valid-avg": "jvm-window-aggregate" if JVM else "runtime",
      "valid-rise": "jvm-followed-by" if JVM else "runtime",
      "avg": "jvm-window-aggregate" if JVM else "runtime",
      "climb": "jvm-followed-by" if JVM else "runtime",
      "tops": "jvm-window-aggregate" if JVM else "runtime",
      "top-alert": "spark-sql-tail" if JVM else "runtime",
      "batches": "jvm-window-aggregate" if JVM else "runtime",
      "warmish": "jvm-window-aggregate" if JVM else "runtime",
      "sorted": "jvm-window-aggregate" if JVM else "runtime"}),
    # Pattern and sequence shapes beside a window, six NumPy operators fused in one: an
    # 'or' completed from either stream, a first match only, a counting pattern, a cycle, a
    # global and a partitioned sequence.
    "patterns": ("@app:playback\n" + TEMP + """
define stream OtherStream (roomNo int);
@info(name = 'avg') from TempStream#window.time(1 sec)
select roomNo, avg(temp) as avgTemp group by roomNo insert into AvgStream;
@info(name = 'either')
from every e1=TempStream[temp > 30.0]
  -> (e2=TempStream[roomNo == e1.roomNo and temp < e1.temp]
      or e3=OtherStream[roomNo == e1.roomNo]) within 2 sec
select e1.roomNo, e2.temp as cooler, e3.roomNo as other insert into Either;
@info(name = 'first') from e1=TempStream[temp > 40.0] -> e2=OtherStream[roomNo == e1.roomNo]
select e1.temp, e2.roomNo insert into First;
@info(name = 'counted')
from every e1=TempStream[temp > 30.0]<2:3> -> e2=OtherStream[roomNo == e1[0].roomNo]
select e1[0].roomNo, e1[1].temp as second, e1[last].temp as hottest, e2.roomNo as other
insert into Counted;
@info(name = 'swings') from every (e1=TempStream[temp > 40.0] -> e2=TempStream[temp < 20.0])
select e1.roomNo, e1.temp - e2.temp as drop insert into Swings;
@info(name = 'rising')
from every e1=TempStream, e2=TempStream[temp > e1.temp], e3=TempStream[temp > e2.temp]
  within 3 sec
select e1.roomNo, e1.temp as low, e3.temp as high insert into Rising;
partition with (roomNo of TempStream) begin
@info(name = 'room-pairs') from every e1=TempStream[temp < 25.0], e2=TempStream[temp > 35.0]
select e1.temp as low, e2.temp as high insert into RoomPairs;
end;
""", {"avg": SLIDING, "either": "followed-by", "first": "followed-by", "counted": "counting",
      "swings": "cycle", "rising": "sequence", "room-pairs": "sequence"}),
    # WSO2's partition idiom: stateful queries of a value partition inserting into its inner
    # streams, read by filters of the partition (one reading another's inner output); a
    # filter of the partition feeding a window through an inner stream, and one alone;
    # windows reading what a window of the partition inserts into an inner stream (a chain,
    # the key the attribute it selects; one producer a time window on the group's clock);
    # patterns over inner streams, one a window fills, one a filter.
    "partitions": ("@app:playback\n" + TEMP + """
partition with (roomNo of TempStream) begin
@info(name = 'room-avg') from TempStream#window.length(3)
select roomNo, deviceID, avg(temp) as avgTemp insert into #RoomAvg;
@info(name = 'room-hot') from #RoomAvg[avgTemp > 30.0] select roomNo, avgTemp
insert into RoomHot;
@info(name = 'room-hotter') from #RoomAvg[avgTemp > 35.0]
select roomNo, avgTemp * 2 as twice insert into #Hotter;
@info(name = 'room-hottest') from #Hotter[twice > 80.0] select roomNo, twice
insert into RoomHottest;
@info(name = 'room-time') from TempStream#window.time(1 sec)
select roomNo, max(temp) as top insert into #Tops;
@info(name = 'top-alert') from #Tops[top > 40.0] select roomNo, top insert into TopAlert;
@info(name = 'room-rise') from every e1=TempStream -> e2=TempStream[temp > e1.temp]
select e1.temp as low, e2.temp as high insert into #Rises;
@info(name = 'rise-alert') from #Rises[high - low > 10.0] select low, high
insert into RiseAlert;
@info(name = 'warm') from TempStream[temp > 20.0] select roomNo, temp * 2 as t2
insert into #Warm;
@info(name = 'warm-sum') from #Warm#window.lengthBatch(2) select roomNo, sum(t2) as total
insert into WarmSum;
@info(name = 'cold') from TempStream[temp < 20.0] select roomNo, temp insert into Cold;
@info(name = 'room-peak') from #RoomAvg#window.length(2) select roomNo, max(avgTemp) as peak
insert into RoomPeak;
@info(name = 'room-batch') from #RoomAvg#window.lengthBatch(2)
select roomNo, count() as n, sum(avgTemp) as total insert into RoomBatch;
@info(name = 'top-max') from #Tops#window.length(2) select roomNo, max(top) as m
insert into TopMax;
@info(name = 'avg-jump') from every e1=#RoomAvg -> e2=#RoomAvg[avgTemp > e1.avgTemp + 5.0]
select e1.avgTemp as before, e2.avgTemp as after insert into AvgJump;
@info(name = 'warm-rise') from every e1=#Warm -> e2=#Warm[t2 > e1.t2]
select e1.t2 as low, e2.t2 as high insert into WarmRise;
end;
""", {"warm": "spark-sql", "room-peak": "jvm-window-aggregate" if JVM else "runtime",
      "room-batch": "jvm-window-aggregate" if JVM else "runtime",
      "top-max": "jvm-window-aggregate" if JVM else "runtime",
      "avg-jump": "jvm-followed-by" if JVM else "runtime",
      "warm-rise": "jvm-followed-by" if JVM else "followed-by",
      "warm-sum": "jvm-window-aggregate" if JVM else "runtime",
      "cold": "spark-sql", "room-avg": "jvm-window-aggregate" if JVM else "runtime",
      "room-hot": "spark-sql-tail" if JVM else "runtime",
      "room-hotter": "spark-sql-tail" if JVM else "runtime",
      "room-hottest": "spark-sql-tail" if JVM else "runtime",
      "room-time": "jvm-window-aggregate" if JVM else "runtime",
      "top-alert": "spark-sql-tail" if JVM else "runtime",
      "room-rise": "jvm-followed-by" if JVM else "followed-by", "rise-alert": "spark-sql-tail"}),
}

Event = tuple[int, int, str, tuple[Any, ...]]


@st.composite
def inputs(draw: st.DrawFn, two_streams: bool) -> tuple[list[Event], list[int]]:
    """Events in time order (steps of 0–1.5 s) and the sizes of the micro-batches."""
    count = draw(st.integers(1, 40))
    events: list[Event] = []
    ts = 1_000
    for seq in range(count):
        ts += draw(st.sampled_from([0, 100, 400, 700, 1_500]))
        room = draw(st.integers(0, 3))
        if two_streams and draw(st.integers(0, 4)) == 0:
            events.append((seq, ts, "OtherStream", (room,)))
            continue
        temp = float(draw(st.sampled_from([10.0, 21.5, 30.0, 36.0, 41.0, 47.5])))
        events.append((seq, ts, "TempStream", (seq * 7 % 5, room, temp)))
    cuts = draw(st.lists(st.integers(1, 12), max_size=3))
    return events, cuts


Output = tuple[int, str, str, int, bool, list[Any]]


def by_runtime(app: str, events: list[Event]) -> list[Output]:
    """The per-event runtime of the whole app, as the reference orders its outputs (those
    into a partition's inner streams are not the app's)."""
    analyzed = check(app)
    inner = {q.id for q in analyzed.queries if q.target_kind == "inner"}
    outputs = [o for o in sort_outputs(run_batch(build_runtime(analyzed),
                                                 [InputEvent(*event) for event in events]))
               if o.query not in inner]
    data = encode_rows([o.data for o in outputs])
    return [(o.seq, o.query, o.target or "", o.ts, bool(o.expired), decode_data(d))
            for o, d in zip(outputs, data)]


def by_spark(spark: Any, app: str, events: list[Event], cuts: list[int]) -> list[Output]:
    """The group's plan on Spark, one micro-batch per cut (then one for the rest)."""
    analyzed = check(app)
    layout = input_layout(analyzed)
    register_sources(spark)
    rows: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="eddy-multi-") as work:
        spool = Path(work) / "spool"
        spool.mkdir()
        chunks, start = [], 0
        for size in [*cuts, len(events)]:
            if start < len(events):
                chunks.append(events[start:start + size])
                start += size
        append_chunk(spool, layout.to_arrow(chunks[0]))
        source = (spark.readStream.format(FORMAT).schema(source_schema(layout))
                  .option("path", str(spool)).load())
        query = (compile_group(app, source, layout).writeStream
                 .foreachBatch(lambda frame, _: rows.extend(frame.collect()))
                 .option("checkpointLocation", str(Path(work) / "checkpoint")).start())
        try:
            query.processAllAvailable()
            for chunk in chunks[1:]:
                append_chunk(spool, layout.to_arrow(chunk))
                query.processAllAvailable()
        finally:
            query.stop()
    rows.sort(key=lambda r: (r["_seq"], list(r["_order"])))
    outputs = {q.id: q.outputs for q in analyzed.queries}
    return [(r["_seq"], r["_query"], r["_target"] or "", r["_ts"], bool(r["_expired"]),
             row_values(r, outputs[r["_query"]])) for r in rows]


@pytest.mark.parametrize("name", sorted(APPS))
def test_each_stateful_query_gets_its_operator(name: str) -> None:
    app, expected = APPS[name]
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert {c.query: c.operator for c in plan.queries} == expected
    assert (plan.runtime is not None) == ("runtime" in expected.values())
    assert plan.ids("runtime") == tuple(q for q, op in expected.items() if op == "runtime")


@pytest.mark.parametrize("name", sorted(APPS))
def test_group_equals_the_runtime(name: str, spark: Any) -> None:
    app, _ = APPS[name]

    @settings(max_examples=examples(6), deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(inputs(two_streams=name in ("clock", "chains", "patterns")))
    def check_example(example: tuple[list[Event], list[int]]) -> None:
        events, cuts = example
        assert by_spark(spark, app, events, cuts) == by_runtime(app, events)

    check_example()


def test_tails_follow_their_producers_emission(spark: Any) -> None:
    """A timer's one emission of many expired averages (eight rooms' events leave the window
    at once), each followed by its tails' outputs only after the whole emission, as the
    reference's junction hands the emission on: the tails' order paths, not just their
    values, must be the runtime's."""
    app, expected = APPS["chains"]
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert plan.choice("hot").operator == expected["hot"] == "spark-sql-tail"
    events: list[Event] = [(seq, 1_000 + seq + 600 * (seq // 8), "TempStream",
                            (seq, seq % 8, 31.0 + seq)) for seq in range(16)]
    events.append((16, 2_300, "TempStream", (0, 0, 20.0)))
    outputs = by_spark(spark, app, events, [5])
    assert outputs == by_runtime(app, events)
    last = [o[1] for o in outputs if o[0] == 16]  # the timer's expired averages, then theirs
    assert last[:24] == ["avg"] * 8 + ["hot"] * 8 + ["hotter"] * 8, last


HEADS_ACROSS_PARTITIONS = {
    # a partition's filter feeding a window outside it, through a stream
    "out": ("""partition with (k of A) begin
@info(name='f') from A[v > 0.0] select k, v insert into X;
end;
@info(name='w') from X#window.length(3) select k, sum(v) as total insert into O;""", "one"),
    # a filter outside feeding a partition that splits its output stream
    "in": ("""@info(name='f') from A[v > 0.0] select k, v * 2 as v insert into X;
partition with (k of X) begin
@info(name='w') from X#window.length(2) select k, max(v) as m insert into O;
end;""", "buckets"),
    # a time window of a partition (on the group's clock) fed through an inner stream
    "inner-time": ("""partition with (k of A) begin
@info(name='f') from A[v > 0.0] select k, v * 2 as v insert into #X;
@info(name='w') from #X#window.time(1 sec) select k, max(v) as m insert into O;
end;""", "one"),
}


@pytest.mark.skipif(not JVM, reason="partitioned windows run in eddy's Java operator")
@pytest.mark.parametrize("name", sorted(HEADS_ACROSS_PARTITIONS))
def test_filters_feed_windows_across_partitions(name: str, spark: Any) -> None:
    """A filter feeding a window, one of them in a value partition (null keys among the
    events): the filter runs in Spark SQL, the window in its operator keyed as planned,
    and the plan on Spark inserts what the runtime inserts."""
    from columnar_runs import random_events, replay_equals_runtime

    text, key = HEADS_ACROSS_PARTITIONS[name]
    analyzed = check("@app:playback\ndefine stream A (k int, v double, s string);\n" + text)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [(c.query, c.operator, c.key.kind) for c in plan.queries] == \
        [("f", "spark-sql", "none"), ("w", "jvm-window-aggregate", key)]
    replay_equals_runtime(analyzed, random_events(3, 300, "A", 4))
