"""The vectorised sequence operator against the per-event runtime, which ports the
reference's sequence processors state by state (and passes the sequence conformance cases).

Random apps of the operator's shape — two to four states over one or two streams, with and
without ``every``, partitioned or not, with and without ``within``, conditions on earlier
states, computed selections — and random events whose timestamps sometimes go back are cut
into random micro-batches; the operator's outputs must equal the runtime's, value for value
and in the same order. The Spark-side columns (each state's conditions on its own event, the
partition key) are computed here with the same columnar evaluator, so this test needs no
Spark; ``test_sequence_through_spark`` runs the real plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from columnar_runs import (
    Holds,
    Output,
    by_operator,
    by_runtime,
    random_events,
    replay_equals_runtime,
    state_rows,
)
from examples import examples

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.sequence import SequencePlan, plan_sequence
from eddy.engine.operators.sequence.matching import PARTITION, Recent, process
from eddy.engine.operators.sequence.plan import passes
from eddy.engine.spark.row_layout import SEQ, TS, input_layout
from eddy.lang import check
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.model import InputEvent

STREAMS = ("define stream A (k int, v double, s string);\n"
           "define stream B (k long, v double, s string);\n")
QUERIES = {
    "rising": "from {every}e1=A, e2=A[v > e1.v], e3=A[v > e2.v] {within} "
              "select e1.v as p1, e2.v as p2, e3.v as p3 insert into O;",
    "pair": "from {every}e1=A[v == 3.5], e2=A[k == 2] {within} "
            "select e1.k as first, e2.k as second insert into O;",
    "two-streams": "from {every}e1=A[v > 0], e2=B[k == e1.k], e3=A {within} "
                   "select e1.s, e2.k, e3.v * 2 + e1.v as w insert into O;",
    "four": "from {every}e1=A, e2=B[s == e1.s or s is null], e3=A[v >= e1.v], "
            "e4=B[k != e3.k] {within} select e1.k, e4.v, e2.s as t insert into O;",
}
PARTITIONS = {"A": "k of A", "B": "k of B"}


@cache
def app(query: str, every: bool, within: str, partitioned: bool) -> AnalyzedApp:
    text = QUERIES[query].format(every="every " if every else "", within=within)
    if partitioned:
        streams = "A" if "=B" not in text else "AB"
        text = (f"partition with ({', '.join(PARTITIONS[s] for s in streams)}) begin\n"
                f"{text}\nend;")
    return check("@app:playback\n" + STREAMS + text)


def plan_of(analyzed: AnalyzedApp) -> SequencePlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_sequence(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                         layout)
    assert plan is not None
    return plan


def operator_rows(analyzed: AnalyzedApp, plan: SequencePlan,
                  events: Sequence[InputEvent]) -> pd.DataFrame:
    """The rows Spark hands the operator (what :mod:`.spark` computes in the JVM)."""
    def flags(event: InputEvent, holds: Holds) -> dict[str, bool]:
        return {passes(k): event.stream == stream and holds(k, plan.filters[k])
                for k, stream in enumerate(plan.streams)}

    return state_rows(analyzed, plan.info.scope, events, plan.streams,
                      plan.partition_attributes, plan.attributes, flags, PARTITION)


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    return by_operator(process, plan.spec, Recent(), operator_rows(analyzed, plan, events),
                       cuts, len(plan.spec.selected))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    query = draw(st.sampled_from(sorted(QUERIES)))
    within = draw(st.sampled_from(["within 3 sec", "within 500 milliseconds", ""]))
    analyzed = app(query, draw(st.booleans()), within, draw(st.booleans()))
    n = draw(st.integers(0, 60))
    ts, events = 10_000, []
    back = draw(st.booleans())
    for seq in range(n):
        ts += draw(st.integers(-900 if back else 0, 1200))
        stream = draw(st.sampled_from("AB"))
        k = draw(st.sampled_from([None, 0, 1, 2, 2, 3]))
        v = draw(st.sampled_from([None, -1.0, 0.0, 3.5, 9.0, 20.0, 70.0]))
        s = draw(st.sampled_from([None, "x", "y", "y"]))
        events.append(InputEvent(seq, ts, stream, (k, v, s)))
    cuts = draw(st.lists(st.integers(1, 12), max_size=6))
    return analyzed, events, cuts


@settings(max_examples=examples(400), deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events)


@pytest.mark.parametrize("partitioned", [False, True])
def test_without_every_only_the_first_event_starts(partitioned: bool) -> None:
    """Without ``every`` an instance's first event alone may start the match, also when
    the match ends micro-batches later (the first event is then among the carried rows)."""
    analyzed = app("pair", False, "", partitioned)
    events = [InputEvent(seq, 1000 + seq, "A", (2, v, "x"))
              for seq, v in enumerate([3.5, 1.0, 3.5, 3.5])]
    events.insert(1, InputEvent(9, 1000, "B", (2, 0.0, "y")))  # another stream: no reset
    events = [InputEvent(seq, e.ts, e.stream, e.data) for seq, e in enumerate(events)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == [(2, 2)]
    for cuts in ([1] * 5, [2, 1], []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


def test_state_is_the_last_rows_of_each_instance() -> None:
    """100,000 events over 500 keys: the state keeps two rows per key, whatever the run."""
    analyzed = app("rising", True, "", True)
    plan = plan_of(analyzed)
    rng = np.random.default_rng(3)
    recent, matches = Recent(), 0
    for batch in range(10):
        n = 10_000
        seq = np.arange(batch * n, (batch + 1) * n)
        keys = rng.integers(0, 500, n)
        frame = pd.DataFrame({SEQ: seq, TS: seq * 10, PARTITION: keys,
                              **{passes(k): True for k in range(3)}})
        for column, (_, name) in plan.attributes.items():
            frame[column] = keys if name == "k" else rng.normal(30, 10, n)
        out, recent = process(plan.spec, recent, frame)
        matches += len(out)
        assert recent.rows is not None and len(recent.rows) == 1000
    assert matches > 10_000  # a sixth of random triples rise


def test_other_shapes_stay_in_the_runtime() -> None:
    for text in ("from every e1=A, e2=A[v > e1.v]* , e3=A select e1.k insert into O;",
                 "from every e1=A, e2=A[v > e3.v], e3=A select e1.k insert into O;",
                 "from every e1=A -> e2=A[v > e1.v] -> e3=A select e1.k insert into O;",
                 "from every e1=A, e2=A[v > e1.v] select e1.k, count() as c group by e1.k "
                 "insert into O;",
                 "from every e1=A, e2=A[math:abs(v) > e1.v] select e1.k insert into O;"):
        analyzed = check(STREAMS + text)
        layout = input_layout(analyzed)
        assert plan_sequence(analyzed, list(analyzed.queries), layout) is None, text


@pytest.mark.parametrize("partitioned", [False, True])
def test_sequence_through_spark(spark: Any, partitioned: bool) -> None:
    """The real plan (``eddy.replay`` on Spark) in micro-batches of 25 events, timestamps
    going back now and then, equals the runtime."""
    analyzed = app("two-streams", True, "within 2 sec", partitioned)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [q.operator for q in plan.queries] == ["sequence"]
    replay_equals_runtime(analyzed, random_events(5, 300, "AB", 3))
