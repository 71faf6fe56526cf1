"""The window aggregates in eddy's Java operator
(:mod:`eddy.engine.operators.window_aggregates.jvm`) against the per-event runtime.

Random events — timestamps that tie and go back, null arguments, several groups, rows of
other streams that only move the clock, long sums that wrap — through ``eddy.replay`` on
Spark at micro-batches of 40 and all (so its state is written and read back between
batches), for queries with and without a filter in front, grouped by an int, a string, two
keys or nothing, ``time``, ``length``, ``timeLength``, ``sort``, ``externalTime`` and
``externalTimeBatch`` (on an attribute that goes back; from a constant or an attribute's
start too), ``lengthBatch``, ``timeBatch`` and ``delay``
windows or none, selecting ``avg``/``sum``/``count()``/``max``/``min``,
``maxForever``/``minForever``, ``stdDev``, ``and``/``or``, ``distinctCount`` (``sum`` of
ints too: a long) and plain attributes (of attributes, or of expressions Spark SQL
computes), with and without ``having``, ``order by``, ``offset`` and ``limit``, inside value partitions or not, into current, expired or all
events (the window's timer emitting expired events or a batch on rows of any stream, twice
when the clock jumps over two ends of a batch), and beside a query the per-event runtime
runs (Java and Python stateful operators in one streaming query), all of them in one app
(one replay: the cost is in the micro-batches). The outputs must equal the runtime's, event
for event and in order. A second test checks that the plan Spark runs is the JVM's
``flatMapGroupsWithState``, not a Python worker.
"""

from __future__ import annotations

import random
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from conformance import Case, compare_case

from eddy.engine.compile.group_query import compile_group
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.run.replay import replay, source_schema
from eddy.engine.spark.row_layout import input_layout
from eddy.engine.spark.spool_source import FORMAT, register_sources
from eddy.lang import check
from eddy.runtime.driver import collect
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, sort_outputs

BATCH_SIZES = (40, 0)
STREAMS = """@app:playback
define stream T (dev long, room int, site string, temp double, ok bool);
define stream Other (x int);
define stream Big (v long);
"""
APPS = {
    "filtered-by-room": """@info(name='q')
from T[temp > 20.0]#window.time(1 sec)
select room, avg(temp) as a, sum(temp) as s, count() as n, dev
group by room
insert into O;""",
    "by-site-and-room": """@info(name='q')
from T[ok == true and temp != 22.5]#window.time(700 milliseconds)
select site, room, count() as n, avg(room) as ar, sum(temp) as s
group by site, room
insert into O;""",
    "global": """@info(name='q')
from T#window.time(500 milliseconds)
select avg(temp) as a, count() as n, site, ok
insert into O;""",
    "beside-the-runtime": """@info(name='q')
from T[temp > 20.0]#window.time(1 sec)
select room, avg(temp) as a
group by room
insert into O;
@info(name='r')
from T#window.frequent(3, site)
select room, distinctCount(site) as d
group by room
insert into O2;""",
    "length-extremes": """@info(name='q')
from T[temp > 20.0]#window.length(4)
select room, max(temp) as hi, min(temp) as lo, max(room) as r, count() as n, avg(temp) as a
group by room
insert into O;""",
    "length-global-min": """@info(name='q')
from T#window.length(5)
select min(temp) as lo, sum(temp) as s, site
insert into O;""",
    "by-site-no-filter": """@info(name='q')
from T#window.time(1 sec)
select site, avg(dev) as ad, sum(temp) as s, count() as n
group by site
insert into O;""",
    "global-all-events": """@info(name='q')
from T#window.time(500 milliseconds)
select avg(temp) as a, room, dev
insert all events into O;""",
    "filtered-by-room-all-events": """@info(name='q')
from T[temp > 20.0]#window.time(1 sec)
select room, avg(temp) as a, max(temp) as hi, count() as n, site
group by room
insert all events into O;""",
    "expired-only-by-site-and-room": """@info(name='q')
from T[ok == true]#window.time(700 milliseconds)
select site, room, sum(temp) as s, min(room) as lo, temp
group by site, room
insert expired events into O;""",
    "every-event-all-events": """@info(name='q')
from T#window.time(300 milliseconds)
select dev, temp, site
insert all events into O;""",
    "length-all-events": """@info(name='q')
from T[temp > 20.0]#window.length(3)
select room, avg(temp) as a, min(temp) as lo, count() as n, temp
group by room
insert all events into O;""",
    "length-expired-global": """@info(name='q')
from T#window.length(4)
select sum(temp) as s, max(room) as r, ok
insert expired events into O;""",
    "int-sums-all-events": """@info(name='q')
from T#window.length(3)
select site, sum(room) as sr, sum(dev) as sd, avg(dev) as ad, count() as n
group by site
insert all events into O;""",
    "having-by-room": """@info(name='q')
from T[temp > 20.0]#window.time(1 sec)
select room, count() as n, avg(temp) as a, sum(dev) as sd
group by room
having n >= 2 and a > 21.0
insert into O;""",
    "having-global-all-events": """@info(name='q')
from T#window.time(500 milliseconds)
select sum(room) as s, count() as n, site
having n > 2 or site == 'a'
insert all events into O;""",
    "long-sums-wrap": """@info(name='q')
from Big#window.length(2)
select sum(v) as s, avg(v) as a, count() as n
insert all events into O;""",
    "external-time-by-site": """@info(name='q')
from T[temp > 20.0]#window.externalTime(dev, 4)
select site, sum(temp) as s, count() as n, max(room) as r
group by site
insert into O;""",
    "external-time-all-events": """@info(name='q')
from T#window.externalTime(dev, 3)
select avg(temp) as a, sum(room) as sr, room, dev
having sr > 3
insert all events into O;""",
    "external-time-expired-every-event": """@info(name='q')
from T[ok == true]#window.externalTime(dev, 5)
select dev, site
insert expired events into O;""",
    "no-window-by-room": """@info(name='q')
from T[temp > 20.0]
select room, sum(dev) as sd, avg(temp) as a, min(temp) as lo, count() as n
group by room
insert all events into O;""",
    "no-window-global": """@info(name='q')
from T
select sum(room) as s, max(temp) as hi, site
having s > 10
insert into O;""",
    "length-batch-by-site": """@info(name='q')
from T[temp > 20.0]#window.lengthBatch(4)
select site, sum(temp) as s, count() as n, max(room) as r
group by site
insert into O;""",
    "length-batch-all-events": """@info(name='q')
from T#window.lengthBatch(3)
select avg(temp) as a, sum(dev) as sd, room
insert all events into O;""",
    "length-batch-expired-every-event": """@info(name='q')
from T#window.lengthBatch(2)
select dev, site
having site == 'a'
insert expired events into O;""",
    "time-batch-having-extremes": """@info(name='q')
from T[temp > 15.0]#window.timeBatch(500 milliseconds)
select site, max(temp) as hi, min(room) as lo, sum(room) as sr, count() as n
group by site
having n > 1 or hi > 25.0
insert into O;""",
    "time-batch-all-events": """@info(name='q')
from T#window.timeBatch(400 milliseconds)
select room, avg(temp) as a, sum(dev) as sd
group by room
insert all events into O;""",
    "time-batch-expired-every-event": """@info(name='q')
from T[ok == true]#window.timeBatch(300 milliseconds)
select dev, site
insert expired events into O;""",
    "kept-aggregates-by-site": """@info(name='q')
from T#window.time(700 milliseconds)
select site, stdDev(temp) as sd, maxForever(room) as mf, minForever(temp) as nf,
       and(ok) as allOk, or(ok) as anyOk, distinctCount(room) as rooms
group by site
insert all events into O;""",
    "distinct-values-global": """@info(name='q')
from T[room > 1]#window.length(5)
select distinctCount(site) as sites, distinctCount(temp) as temps, stdDev(dev) as sd
having sites > 1
insert into O;""",
    "time-batch-distinct-by-room": """@info(name='q')
from T#window.timeBatch(600 milliseconds)
select room, distinctCount(site) as n, and(ok) as a, stdDev(room) as sd
group by room
insert all events into O;""",
    "no-window-forever": """@info(name='q')
from T
select site, maxForever(temp) as hi, minForever(room) as lo, count() as n
group by site
insert into O;""",
    "partitioned-by-site": """partition with (site of T)
begin
@info(name='q')
from T[temp > 15.0]#window.length(3)
select site, room, sum(temp) as s, max(room) as r, count() as n
group by room
having n > 1
insert into O;
@info(name='p')
from T#window.externalTime(dev, 4)
select site, stdDev(temp) as sd, dev
insert into P;
@info(name='x')
from T#window.length(2)
select site, room, sum(temp) as s
group by room
insert all events into X;
@info(name='y')
from T[temp > 15.0]#window.lengthBatch(2)
select site, count() as n
insert expired events into Y;
end;""",
    "partitioned-time-by-site": """partition with (site of T)
begin
@info(name='q')
from T[ok == true]#window.time(500 milliseconds)
select site, room, avg(temp) as a, max(temp) as hi, count() as n
group by room
insert into O;
@info(name='p')
from T#window.timeLength(400 milliseconds, 2)
select site, sum(room) as sr, count() as n
insert into P;
end;""",
    "partitioned-no-window-and-batches": """partition with (site of T)
begin
@info(name='q')
from T
select room, distinctCount(site) as d, sum(dev) as sd
insert into O;
end;
partition with (site of T)
begin
@info(name='b')
from T#window.lengthBatch(2)
select ok, avg(temp) as a, site
insert into P;
end;""",
    "time-length-by-room": """@info(name='q')
from T[temp > 15.0]#window.timeLength(600 milliseconds, 3)
select room, sum(temp) as s, max(temp) as hi, count() as n
group by room
insert into O;""",
    "time-length-all-events": """@info(name='q')
from T#window.timeLength(400 milliseconds, 4)
select avg(temp) as a, min(room) as lo, site
insert all events into O;""",
    "ordered-batch-groups": """@info(name='q')
from T#window.lengthBatch(5)
select site, room, sum(temp) as s, count() as n
group by site, room
order by s desc, room
limit 2
insert all events into O;""",
    "ordered-every-event": """@info(name='q')
from T[temp > 15.0]#window.timeBatch(700 milliseconds)
select site, temp, dev
order by site, temp desc
offset 1
insert all events into O;""",
    "offset-and-limit": """@info(name='q')
from T#window.length(3)
select room, avg(temp) as a
group by room
offset 1
insert all events into O;
@info(name='p')
from T#window.length(2)
select room, avg(temp) as a, count() as n
limit 1
insert into P;""",
    "sorted-by-site-and-dev": """@info(name='q')
from T#window.sort(4, site, 'desc', dev)
select room, sum(temp) as s, max(temp) as hi, count() as n
group by room
insert all events into O;
@info(name='p')
from T[room > 1]#window.sort(3, room, 'asc', dev, 'desc')
select avg(temp) as a, min(temp) as lo, dev
insert into P;""",
    "external-batches": """@info(name='q')
from T[temp > 15.0]#window.externalTimeBatch(dev, 6)
select site, sum(room) as sr, max(temp) as hi, count() as n
group by site
insert all events into O;
@info(name='p')
from T#window.externalTimeBatch(dev, 4)
select dev, temp
insert into P;""",
    "external-batches-from-a-start": """@info(name='q')
from T#window.externalTimeBatch(dev, 5, 3)
select room, count() as n, sum(temp) as s
group by room
insert all events into O;
@info(name='p')
from T[temp > 16.0]#window.externalTimeBatch(dev, 7, -4)
select avg(temp) as a, count() as n
insert into P;""",
    "delayed": """@info(name='q')
from T[temp > 16.0]#window.delay(250 milliseconds)
select site, count() as n, sum(room) as sr
group by site
insert into O;
@info(name='p')
from T#window.delay(400 milliseconds)
select dev, room
insert all events into P;""",
    "having-every-event-expired": """@info(name='q')
from T#window.length(3)
select dev, temp, site
having temp > 20.0 and not (site == 'b')
insert expired events into O;""",
    "computed-arguments": """@info(name='q')
from T[temp > 16.0]#window.time(600 milliseconds)
select room, avg(temp * 1.8 + 32) as f, sum(room * 2) as r2, max(0 - temp) as m,
    count(temp / 2) as n, distinctCount(dev % 3) as d, temp / 2 as half,
    room + 1 as next
group by room
insert all events into O;""",
}


def _events(seed: int, count: int = 90) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    ts = 1_000
    for i in range(count):
        ts += rng.choice((0, 40, 90, 150, 300, 800))
        when = ts - rng.choice((0, 0, 0, 200, 1_200))  # ties, and some go back
        if rng.random() < 0.1:
            events.append({"stream": "Other", "timestamp": when, "data": [i]})
            continue
        if rng.random() < 0.1:  # sums that wrap, and removals in doubles that round
            events.append({"stream": "Big", "timestamp": when, "data": [rng.choice(
                (2**62, 2**63 - 1, -2**63, 2**53 + 1, 7, None))]})
            continue
        temp = None if rng.random() < 0.1 else rng.choice((15.0, 20.5, 22.5, 30.25, 1e16))
        events.append({"stream": "T", "timestamp": when,
                       "data": [i - rng.choice((0, 0, 0, 5)),  # goes back: externalTime
                                rng.randint(1, 3), rng.choice(("a", "b")), temp,
                                rng.random() < 0.8]})
    return events


SCHEMAS = {"T": [["dev", "LONG"], ["room", "INT"], ["site", "STRING"], ["temp", "DOUBLE"],
                 ["ok", "BOOL"]], "Big": [["v", "LONG"]]}


def runtime_case(name: str, app: str, inputs: list[dict[str, Any]],
                 schemas: dict[str, list[list[str]]]) -> Case:
    """A case whose expected outputs are the per-event runtime's."""
    analyzed = check(app)
    runtime = build_runtime(analyzed)
    outputs = runtime.process([InputEvent(i, e["timestamp"], e["stream"], tuple(e["data"]))
                               for i, e in enumerate(inputs)])
    streams, queries = collect(analyzed, sort_outputs(outputs))
    return Case(name, "window.time", app, inputs, streams, queries, [], schemas, True, None,
                Path(name))


def combined(apps: dict[str, str]) -> str:
    """The queries of ``apps`` as one app: the queries of app number ``i`` (in name order)
    are named ``<name>i`` and insert into ``<stream>_i``. One replay runs them all (each
    query stands alone in its own operator, so the others do not change its outputs)."""
    parts = []
    for i, (_, text) in enumerate(sorted(apps.items())):
        text = re.sub(r"@info\(name='(\w+)'\)", rf"@info(name='\g<1>{i}')", text)
        parts.append(re.sub(r"\binto (\w+);", rf"into \g<1>_{i};", text))
    return "\n".join(parts)


def equals_the_runtime(app: str, inputs: list[dict[str, Any]],
                       schemas: dict[str, list[list[str]]]) -> None:
    """``app`` through ``eddy.replay`` at each of :data:`BATCH_SIZES` gives the per-event
    runtime's outputs."""
    case = runtime_case("combined", app, inputs, schemas)
    silent = {q.target for q in check(app).queries} - \
        {stream for stream, events in case.expected.items() if events}
    assert not silent, f"the inputs should make outputs for every query: none for {silent}"
    with ThreadPoolExecutor(len(BATCH_SIZES)) as pool:  # a micro-batch is mostly waiting
        runs = {size: pool.submit(replay, app, case.inputs, batch_size=size)
                for size in BATCH_SIZES}
        for size, run in runs.items():
            result = run.result()
            problems = compare_case(case, result.streams, result.queries, result.store)
            assert not problems, f"batch size {size or 'all'}:\n" + "\n".join(problems)


def test_the_java_operator_equals_the_runtime(spark: object) -> None:
    app = STREAMS + combined(APPS)
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    operators = {c.query: c.operator for c in plan.queries}
    assert {q for q, op in operators.items() if op != "jvm-window-aggregate"} == \
        {f"r{sorted(APPS).index('beside-the-runtime')}"}, operators
    equals_the_runtime(app, _events(1, 160), SCHEMAS)


def test_external_batches_from_a_start_attribute(spark: object) -> None:
    """The batches' grid starts at the first event's start attribute, not its time."""
    app = """@app:playback
define stream E (at long, origin long, v int);
@info(name='q')
from E[v > 0]#window.externalTimeBatch(at, 10, origin)
select sum(v) as s, count() as n
insert all events into O;"""
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [c.operator for c in plan.queries] == ["jvm-window-aggregate"]
    rng = random.Random(5)
    inputs = [{"stream": "E", "timestamp": 100 * i,
               "data": [20 + 3 * i - rng.choice((0, 0, 4)), rng.choice((3, 14, 27)),
                        rng.choice((-1, 1, 2, 5))]} for i in range(40)]
    equals_the_runtime(app, inputs, {"E": [["at", "LONG"], ["origin", "LONG"],
                                           ["v", "INT"]]})


def test_the_plan_runs_in_the_jvm(spark: Any) -> None:
    assert_runs_in_the_jvm(spark, STREAMS + APPS["filtered-by-room"])


def assert_runs_in_the_jvm(spark: Any, app: str) -> None:
    """The Spark plan of ``app`` is the JVM's ``flatMapGroupsWithState``, no Python worker."""
    layout = input_layout(check(app))
    register_sources(spark)
    with tempfile.TemporaryDirectory() as spool:
        source = (spark.readStream.format(FORMAT).schema(source_schema(layout))
                  .option("path", spool).load())
        plan = compile_group(app, source, layout)._jdf.queryExecution().logical().toString()
    assert "FlatMapGroupsWithState" in plan, plan
    assert "PandasWithState" not in plan, plan


SESSION_APP = """@app:playback
define stream C (user string, site string, dev long, temp double);
define stream Other (x int);
@info(name='keyed')
from C#window.session(500 milliseconds, user)
select user, sum(dev) as s, count() as n
group by user
insert all events into O;
@info(name='one-session')
from C[temp > 16.0]#window.session(300 milliseconds)
select count() as n, avg(temp) as a
insert all events into P;
@info(name='late-merges')
from C#window.session(400 milliseconds, site, 200 milliseconds)
select site, count() as n, max(temp) as hi
group by site
insert all events into Q;
@info(name='every-expired')
from C#window.session(500 milliseconds, user, 150 milliseconds)
select dev, user
insert expired events into R;
@info(name='current-by-device')
from C#window.session(250 milliseconds, site)
select user, count() as n
group by user
having n > 1
insert into U;
"""
SESSION_SCHEMAS = {"C": [["user", "STRING"], ["site", "STRING"], ["dev", "LONG"],
                         ["temp", "DOUBLE"]], "Other": [["x", "INT"]]}


def _session_events(seed: int, count: int) -> list[dict[str, Any]]:
    """Sessions of ~30 users (more keys than the reference's hash maps start with, so their
    order is the grown tables'), several closing at the same time (events tied on their
    timestamp), late events within and beyond a gap, and rows of another stream that only
    move the clock (and fire the timers)."""
    rng = random.Random(seed)
    users = [f"u{i}" for i in range(30)]
    events: list[dict[str, Any]] = []
    ts = 1_000
    for i in range(count):
        ts += rng.choice((0, 0, 30, 120, 260, 400, 520, 1_500))
        when = ts - rng.choice((0, 0, 0, 0, 150, 350, 700))
        if rng.random() < 0.08:
            events.append({"stream": "Other", "timestamp": when, "data": [i]})
            continue
        temp = None if rng.random() < 0.05 else rng.choice((12.0, 17.5, 21.25, 30.0))
        events.append({"stream": "C", "timestamp": when,
                       "data": [rng.choice(users[:rng.choice((3, 30))]),
                                None if rng.random() < 0.05 else rng.choice(("a", "b", "c")),
                                rng.randint(1, 4), temp]})
    return events


def test_sessions_equal_the_runtime(spark: object) -> None:
    """``#window.session`` keyed by a string (null too) or not keyed, with and
    without an allowed latency (late events joining the previous session or merging it
    with the current one), into current, expired and all events: the Java operator gives
    the runtime's outputs in its order (sessions closing on one timer by end time, ties in
    the reference's hash-map order), its sessions carried between micro-batches."""
    analyzed = check(SESSION_APP)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert {c.query: c.operator for c in plan.queries} == dict.fromkeys(
        ("keyed", "one-session", "late-merges", "every-expired", "current-by-device"),
        "jvm-window-aggregate")
    for seed in (3, 4):
        equals_the_runtime(SESSION_APP, _session_events(seed, 260), SESSION_SCHEMAS)
