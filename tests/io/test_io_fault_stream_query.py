"""``from !S select …``: the fault stream of ``@OnError(action='STREAM')`` is an input stream
of its own — the analyser gives it ``S``'s attributes plus ``_error``, the plan reads it from
the topic ``<app>.!S`` (where the sources deliver faults), and the runtime runs queries on
it. (End to end, with a real HTTP source: tests/e2e/test_http_alerts.py.)"""

from __future__ import annotations

import json

import pytest

from eddy.engine.runtime.group import build_runtime
from eddy.engine.runtime.model import InputEvent
from eddy.io import delivery_streams, fault_stream
from eddy.lang import SiddhiAppError, check
from eddy.lang.ast import AttrType
from eddy.plan import build_plan

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
