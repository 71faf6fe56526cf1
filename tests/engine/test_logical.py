"""The vectorised logical operator (``every (e1 and|or e2) -> e3``) against the per-event
runtime, which ports the reference's logical state processors.

Random apps of the operator's shape — ``and`` or ``or``, partitioned or not, ``e3``'s
condition reading ``e1`` and ``e2`` or not, computed selections — and random events of three
streams, whose timestamps sometimes go back, are cut into random micro-batches; the
operator's outputs must equal the runtime's, value for value and in the same order. The
Spark-side columns are computed here with the same columnar evaluator, so this test needs
no Spark; ``test_logical_through_spark`` runs the real plan.
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
    pattern_events,
    random_events,
    replay_equals_runtime,
    state_rows,
)
from examples import examples

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.logical import plan_logical
from eddy.engine.operators.logical.matching import Waiting, process
from eddy.engine.operators.sequence import SequencePlan
from eddy.engine.operators.sequence.matching import PARTITION
from eddy.engine.operators.sequence.plan import arrives, passes
from eddy.engine.spark.row_layout import SEQ, TS, input_layout
from eddy.lang import check
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.model import InputEvent

STREAMS = ("define stream A (k int, v double, s string);\n"
           "define stream B (k long, v double, s string);\n"
           "define stream C (k int, v double, s string);\n")
QUERIES = {
    "pair": "from every (e1=A and e2=B) -> e3=C "
            "select e1.v as a, e2.v as b, e3.v as c insert into O;",
    "filtered": "from every (e1=A[v > 1.0] and e2=B[s == 'x']) -> e3=C[v > e1.v or s is null] "
                "select e1.k, e2.k as j, e3.v + e1.v as w insert into O;",
    "keyed": "from every (e2=B[v > 0.0] and e1=A) -> e3=C[k == e1.k and e2.s == s] "
             "select e1.k, e2.v, e3.s insert into O;",
}
PARTITION_CLAUSE = "partition with (k of A, k of B, k of C) begin\n{}\nend;"


@cache
def app(query: str, op: str, partitioned: bool) -> AnalyzedApp:
    text = QUERIES[query].replace(" and e", f" {op} e", 1)
    if partitioned:
        text = PARTITION_CLAUSE.format(text)
    return check("@app:playback\n" + STREAMS + text)


def plan_of(analyzed: AnalyzedApp) -> SequencePlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_logical(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                        layout)
    assert plan is not None
    return plan


def operator_rows(analyzed: AnalyzedApp, plan: SequencePlan,
                  events: Sequence[InputEvent]) -> pd.DataFrame:
    """The rows Spark hands the operator (what its Spark side computes in the JVM)."""
    def flags(event: InputEvent, holds: Holds) -> dict[str, bool]:
        return {**{passes(k): event.stream == stream and holds(k, plan.filters[k])
                   for k, stream in enumerate(plan.streams)},
                **{arrives(k): event.stream == stream
                   for k, stream in enumerate(plan.streams)}}

    return state_rows(analyzed, plan.info.scope, events, plan.streams,
                      plan.partition_attributes, plan.attributes, flags, PARTITION)


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    return by_operator(process, plan.spec, Waiting(), operator_rows(analyzed, plan, events),
                       cuts, len(plan.spec.selected))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    analyzed = app(draw(st.sampled_from(sorted(QUERIES))), draw(st.sampled_from(["and", "or"])),
                   draw(st.booleans()))
    events, cuts = draw(pattern_events("AABBC"))
    return analyzed, events, cuts


@settings(max_examples=examples(400), deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events)


def test_and_holds_one_side_until_the_other() -> None:
    """With ``and`` a second event of the side already filled is not seen, and each pair
    waits for its own ``e3``; with ``or`` every event starts a match (the reference's
    outputs for these inputs)."""
    rows = ["A1", "A2", "B3", "A4", "B5", "B6", "C7", "A8", "C9"]
    events = [InputEvent(seq, 1000 + seq, name[0], (0, float(name[1]), "x"))
              for seq, name in enumerate(rows)]
    for op, expected in (("and", [(1.0, 3.0, 7.0), (4.0, 5.0, 7.0), (8.0, 6.0, 9.0)]),
                         ("or", [(1.0, None, 7.0), (2.0, None, 7.0), (None, 3.0, 7.0),
                                 (4.0, None, 7.0), (None, 5.0, 7.0), (None, 6.0, 7.0),
                                 (8.0, None, 9.0)])):
        analyzed = app("pair", op, False)
        assert [o[3] for o in by_runtime(analyzed, events)] == expected
        for cuts in ([1] * len(rows), [4, 2], []):
            assert [o[3] for o in run_operator(analyzed, events, cuts)] == expected, cuts


def test_state_is_the_waiting_matches() -> None:
    """100,000 events over 500 keys, ``e3`` completing most matches: what waits stays
    bounded by the keys, not the events."""
    analyzed = app("pair", "and", True)
    plan = plan_of(analyzed)
    rng = np.random.default_rng(5)
    waiting, matches = Waiting(), 0
    for batch in range(10):
        n = 10_000
        seq = np.arange(batch * n, (batch + 1) * n)
        keys = rng.integers(0, 500, n)
        stream = rng.integers(0, 3, n)
        frame = pd.DataFrame({SEQ: seq, TS: seq * 10, PARTITION: keys,
                              **{passes(k): stream == k for k in range(3)},
                              **{arrives(k): stream == k for k in range(3)}})
        for column in plan.attributes:
            frame[column] = rng.normal(30, 10, n)
        out, waiting = process(plan.spec, waiting, frame)
        matches += len(out)
        assert waiting.rows is not None and len(waiting.rows) <= 3 * 500
    assert matches > 20_000


def test_other_shapes_stay_in_the_runtime() -> None:
    for text in ("from every (e1=A and e2=B[k == e1.k]) -> e3=C select e1.k insert into O;",
                 "from every (e1=A and e2=B) -> e3=C within 1 sec select e1.k insert into O;",
                 "from every (e1=A and e2=A) -> e3=C select e1.k insert into O;",
                 "from (e1=A and e2=B) -> e3=C select e1.k insert into O;",
                 "from every (e1=A and e2=B) -> e3=C -> e4=A select e1.k insert into O;"):
        analyzed = check(STREAMS + text)
        layout = input_layout(analyzed)
        assert plan_logical(analyzed, list(analyzed.queries), layout) is None, text


@pytest.mark.parametrize(("query", "op", "partitioned"),
                         [("keyed", "and", False), ("pair", "or", True)])
def test_logical_through_spark(spark: Any, query: str, op: str, partitioned: bool) -> None:
    """The real plan (``eddy.replay`` on Spark) in micro-batches of 25 events equals the
    runtime."""
    analyzed = app(query, op, partitioned)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [q.operator for q in plan.queries] == ["logical"]
    replay_equals_runtime(analyzed, random_events(7, 300, "ABC", 3))
