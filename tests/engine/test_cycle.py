"""The vectorised cycle operator (``every (e1 -> e2 -> …)``) against the per-event runtime,
which ports the reference's pattern processors state by state.

Random apps of the operator's shape — two or three states over one or two streams,
partitioned or not, computed selections — and random events whose timestamps sometimes go
back are cut into random micro-batches; the operator's outputs must equal the runtime's,
value for value and in the same order. The Spark-side columns are computed here with the
same columnar evaluator (the sequence operator's rows), so this test needs no Spark;
``test_cycle_through_spark`` runs the real plan.
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
    Output,
    by_operator,
    by_runtime,
    pattern_events,
    random_events,
    replay_equals_runtime,
)
from test_sequence import operator_rows
from examples import examples

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.cycle import plan_cycle
from eddy.engine.operators.cycle.matching import process
from eddy.engine.operators.sequence import SequencePlan
from eddy.engine.operators.sequence.matching import PARTITION, Recent
from eddy.engine.operators.sequence.plan import passes
from eddy.engine.spark.row_layout import SEQ, TS, input_layout
from eddy.lang import check
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.model import InputEvent

STREAMS = ("define stream A (k int, v double, s string);\n"
           "define stream B (k long, v double, s string);\n")
QUERIES = {
    "swing": "from every (e1=A[v > 3.5] -> e2=A[v < 1.0]) "
             "select e1.v as high, e2.v as low insert into O;",
    "three": "from every (e1=A[s == 'x'] -> e2=B[v > 0.0] -> e3=A) "
             "select e1.k, e2.v * 2 + e3.v as w, e3.s insert into O;",
    "two-streams": "from every (e1=A -> e2=B[s == 'y' or v is null]) "
                   "select e1.k as a, e2.k as b insert into O;",
}
PARTITION_CLAUSE = "partition with (k of A, k of B) begin\n{}\nend;"


@cache
def app(query: str, partitioned: bool, within: str = "") -> AnalyzedApp:
    text = QUERIES[query].replace(") select", f") {within} select", 1)
    if partitioned:
        text = PARTITION_CLAUSE.format(text)
    return check("@app:playback\n" + STREAMS + text)


def plan_of(analyzed: AnalyzedApp) -> SequencePlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_cycle(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                      layout)
    assert plan is not None
    return plan


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    return by_operator(process, plan.spec, Recent(), operator_rows(analyzed, plan, events),
                       cuts, len(plan.spec.selected))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    analyzed = app(draw(st.sampled_from(sorted(QUERIES))), draw(st.booleans()),
                   draw(st.sampled_from(["", "within 2 sec", "within 500 milliseconds"])))
    events, cuts = draw(pattern_events())
    return analyzed, events, cuts


@settings(max_examples=examples(300), deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events)


def test_one_event_moves_a_match_one_state() -> None:
    """An event passing two states' conditions moves the match one state only, and the
    event that completes a match does not start the next one."""
    analyzed = app("three", False)
    rows = [("A", "x"), ("B", "x"), ("A", "x"), ("A", "x"), ("B", "x"), ("A", "y")]
    events = [InputEvent(seq, 1000 + seq, stream, (seq, 1.0, s))
              for seq, (stream, s) in enumerate(rows)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == [(0, 3.0, "x"), (3, 3.0, "y")]
    for cuts in ([1] * len(rows), [2, 3], []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


def test_state_is_each_instances_partial_match() -> None:
    """100,000 events over 500 keys: the state keeps at most two rows per key."""
    analyzed = app("three", True)
    plan = plan_of(analyzed)
    rng = np.random.default_rng(5)
    recent, matches = Recent(), 0
    for batch in range(10):
        n = 10_000
        seq = np.arange(batch * n, (batch + 1) * n)
        keys = rng.integers(0, 500, n)
        frame = pd.DataFrame({SEQ: seq, TS: seq * 10, PARTITION: keys,
                              **{passes(k): rng.random(n) < 0.5 for k in range(3)}})
        for column, (_, name) in plan.attributes.items():
            frame[column] = keys if name == "k" else rng.normal(30, 10, n)
        out, recent = process(plan.spec, recent, frame)
        matches += len(out)
        assert recent.rows is not None and len(recent.rows) <= 1000
    assert matches > 10_000


def test_other_shapes_stay_in_the_runtime() -> None:
    for text in ("from every (e1=A -> e2=B[k == e1.k]) select e1.k insert into O;",
                 "from every (e1=A -> e2=B) -> e3=A select e1.k insert into O;",
                 "from every (e1=A<2> -> e2=B) select e2.k insert into O;"):
        analyzed = check(STREAMS + text)
        layout = input_layout(analyzed)
        assert plan_cycle(analyzed, list(analyzed.queries), layout) is None, text


@pytest.mark.parametrize(("partitioned", "within"), [(False, ""), (True, "within 2 sec")])
def test_cycle_through_spark(spark: Any, partitioned: bool, within: str) -> None:
    """The real plan (``eddy.replay`` on Spark) in micro-batches of 25 events equals the
    runtime."""
    analyzed = app("three", partitioned, within)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [q.operator for q in plan.queries] == ["cycle"]
    replay_equals_runtime(analyzed, random_events(5, 300, "AAB", 3))
