"""``from !S select …``: the fault stream of ``@OnError(action='STREAM')`` is an input stream
of its own — the analyser gives it ``S``'s attributes plus ``_error``, the plan reads it from
the topic ``<app>.!S`` (where the sources deliver faults), and the runtime runs queries on
it. (End to end, with a real HTTP source: tests/e2e/test_http_alerts.py.)"""

from __future__ import annotations

import json

import pytest

from eddy.io import delivery_streams, fault_stream
from eddy.lang import SiddhiAppError, check
from eddy.lang.ast import AttrType
from eddy.plan import build_plan
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent

APP = """
@app:name('Faulty')
@OnError(action='STREAM')
@source(type='http', receiver.url='http://127.0.0.1:0/temp', @map(type='json'))
define stream TempStream (roomNo int, temp double);

from TempStream[temp > 40.0] select roomNo, temp insert into Alerts;
from !TempStream[roomNo is null or roomNo > 0]
select roomNo, _error as reason
insert into Bad;
"""


def test_the_fault_stream_is_an_input_with_its_own_topic() -> None:
    analyzed = check(APP)
    fault = analyzed.streams["!TempStream"]
    assert [(a.name, a.type) for a in fault.attributes] == [
        ("roomNo", AttrType.INT), ("temp", AttrType.DOUBLE), ("_error", AttrType.OBJECT)]
    # The sources deliver faults to the very stream (and schema) the query reads.
    assert delivery_streams(analyzed)[fault_stream("TempStream")] == fault.attributes
    assert [q.inputs for q in analyzed.queries] == [("TempStream",), ("!TempStream",)]
    (group,) = build_plan(analyzed).groups
    assert [(s.stream, s.topic) for s in group.inputs] == [
        ("TempStream", "Faulty.TempStream"), ("!TempStream", "Faulty.!TempStream")]


def test_the_runtime_runs_a_query_on_the_fault_stream() -> None:
    runtime = build_runtime(check(APP))
    error = json.dumps({"message": "attribute 'temp' is missing", "payload": "{}"})
    out = runtime.process([
        InputEvent(0, 1000, "TempStream", (1, 45.0)),
        InputEvent(1, 1001, "!TempStream", (7, None, error)),
        InputEvent(2, 1002, "TempStream", (2, 20.0)),
        InputEvent(3, 1003, "!TempStream", (None, None, error)),
    ])
    assert [(o.target, o.ts, o.data) for o in out] == [
        ("Alerts", 1000, (1, 45.0)), ("Bad", 1001, (7, error)), ("Bad", 1003, (None, error))]


def test_a_fault_stream_needs_on_error_stream() -> None:
    with pytest.raises(SiddhiAppError, match="fault stream '!S' does not exist"):
        check("define stream S (a int);\nfrom !S select a insert into T;")


CORRELATED = """
@OnError(action='STREAM')
define stream S (k int, v double);
define stream T (k int, w double);
from !S#window.length(3) join T#window.length(3) on S.k == T.k
select S.k, S._error as reason, T.w insert into Joined;
from every e1=!S -> e2=T[e1.k == k]
select e1.k, e1._error as reason, e2.w insert into Followed;
"""


def test_joins_and_patterns_read_the_fault_stream_as_a_stream_of_its_own() -> None:
    """The fault stream joins and starts patterns; ``S`` itself, which shares its name and
    attributes, reaches neither query."""
    runtime = build_runtime(check(CORRELATED))
    error = json.dumps({"message": "bad temp"})
    out = runtime.process([
        InputEvent(0, 1000, "!S", (1, None, error)),
        InputEvent(1, 1001, "T", (1, 2.5)),
        InputEvent(2, 1002, "S", (1, 3.0)),
        InputEvent(3, 1003, "T", (1, 4.5)),
        InputEvent(4, 1004, "T", (2, 5.5)),
    ])
    assert [(o.target, o.ts, o.data) for o in out] == [
        ("Joined", 1001, (1, error, 2.5)), ("Followed", 1001, (1, error, 2.5)),
        ("Joined", 1003, (1, error, 4.5))]


def test_an_absent_fault_stream_in_a_pattern() -> None:
    """``not !S for 1 sec``: a fault of the same key within the second cancels the match."""
    runtime = build_runtime(check("""
@OnError(action='STREAM')
define stream S (k int, v double);
define stream T (k int);
from every e1=T -> not !S[k == e1.k] for 1 sec select e1.k insert into Quiet;
"""))
    out = runtime.process([
        InputEvent(0, 1000, "T", (1,)),
        InputEvent(1, 1500, "!S", (1, None, "{}")),
        InputEvent(2, 1600, "S", (2, 1.0)),
        InputEvent(3, 3000, "T", (2,)),
        InputEvent(4, 3100, "!S", (3, None, "{}")),
        InputEvent(5, 5000, "T", (3,)),
    ])
    assert [(o.target, o.data) for o in out] == [("Quiet", (2,))]


def test_spark_runs_the_join_and_the_pattern_on_the_fault_stream(spark: object) -> None:
    """The same app through ``eddy.replay``: the ``!S`` input has a topic of its own, and the
    join and the pattern read it event by event (micro-batches of one event)."""
    from eddy.engine.run.replay import replay

    error = {"message": "bad temp"}
    inputs = [{"stream": "!S", "timestamp": 1000, "data": [1, None, error]},
              {"stream": "T", "timestamp": 1001, "data": [1, 2.5]},
              {"stream": "S", "timestamp": 1002, "data": [1, 3.0]},
              {"stream": "T", "timestamp": 1003, "data": [1, 4.5]}]
    result = replay(CORRELATED, inputs, batch_size=1)
    reason = error  # an object attribute comes out as its value, as the reference's does
    assert [(e["timestamp"], e["data"]) for e in result.streams["Joined"]] == [
        (1001, [1, reason, 2.5]), (1003, [1, reason, 4.5])]
    assert [(e["timestamp"], e["data"]) for e in result.streams["Followed"]] == [
        (1001, [1, reason, 2.5])]


def test_spark_runs_a_plain_query_on_the_fault_stream_natively(spark: object) -> None:
    """``from !S[…] select …`` compiles to Spark SQL like any stateless query (a stateless
    app with a fault stream can run in real-time mode), with the runtime's outputs."""
    from eddy.engine.compile.native_queries import plan_native
    from eddy.engine.run.replay import replay
    from eddy.engine.spark.row_layout import input_layout

    analyzed = check(APP)
    assert len(plan_native(analyzed, input_layout(analyzed)).ids) == 2
    error = {"message": "attribute 'temp' is missing", "payload": "{\"roomNo\": 7}"}
    inputs = [{"stream": "TempStream", "timestamp": 1000, "data": [1, 45.0]},
              {"stream": "!TempStream", "timestamp": 1001, "data": [7, None, error]},
              {"stream": "!TempStream", "timestamp": 1002, "data": [-3, None, error]},
              {"stream": "!TempStream", "timestamp": 1003, "data": [None, 1.5, error]}]
    result = replay(APP, inputs, batch_size=0)
    reason = error
    assert [(e["timestamp"], e["data"]) for e in result.streams["Bad"]] == [
        (1001, [7, reason]), (1003, [None, reason])]
    assert [e["data"] for e in result.streams["Alerts"]] == [[1, 45.0]]
