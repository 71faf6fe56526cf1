"""The vectorised counting pattern against the per-event runtime, which ports the
reference's counting state processors (and passes the counting conformance cases).

Random apps of the operator's shape — bounded, exact and open counts, with and without
``every``, partitioned or not, keys and conditions on ``e1[i]``, selections of
``e1[i]``/``e1[last-k]`` — and random events whose timestamps sometimes go back are cut into
random micro-batches; the operator's outputs must equal the runtime's, value for value and
in the same order. The Spark-side columns are computed here with the same columnar
evaluator, so this test needs no Spark; ``test_counting_through_spark`` runs the real plan.
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
    pattern_state_rows,
    random_events,
    replay_equals_runtime,
)
from examples import examples

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.counting import CountingPlan, plan_counting
from eddy.engine.operators.counting.matching import Counted, kernel, process
from eddy.engine.operators.followed_by.matching import (
    FIRST_EVENT,
    PARTITION,
    SECOND_EVENT,
    SECOND_PASSES,
)
from eddy.engine.spark.row_layout import SEQ, TS, input_layout
from eddy.lang import check
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.model import InputEvent

STREAMS = ("define stream A (k int, v double, s string);\n"
           "define stream B (k long, v double, s string);\n")
QUERIES = {
    "keyed": "from {every}e1=A[v > 0]<2:4> -> e2=B[k == e1[0].k] select e1[0].v as v0, "
             "e1[1].v as v1, e1[3].v as v3, e1[last].v as vl, e2.s as t insert into O;",
    "exact": "from {every}e1=A<3> -> e2=B select e1[0].k as k0, e1[2].s as s2, "
             "e1[last-1].v as before, e2.k as bk insert into O;",
    "open": "from {every}e1=A[s == 'x']<2:> -> e2=B[v > e1[1].v] select e1[0].v as first, "
            "e1[last].v as lastv, e1[last-2].k as k2, e2.v as bv insert into O;",
    "residual": "from {every}e1=A<1:2> -> e2=B[s == e1[0].s and v >= e1[0].v] "
                "select e1[1].k as k1, e2.k as bk insert into O;",
    "one-stream": "from {every}e1=A[v >= 3.5]<2:3> -> e2=A[v < e1[1].v and s == e1[0].s] "
                  "select e1[0].k as k0, e1[last].v as vl, e2.v as w insert into O;",
}
PARTITION_CLAUSE = "partition with (k of A, k of B) begin\n{}\nend;"


@cache
def app(query: str, every: bool, partitioned: bool, within: str = "") -> AnalyzedApp:
    text = QUERIES[query].format(every="every " if every else "")
    text = text.replace(" select", f" {within} select", 1)
    if partitioned:
        text = PARTITION_CLAUSE.format(text)
    return check("@app:playback\n" + STREAMS + text)


def plan_of(analyzed: AnalyzedApp) -> CountingPlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_counting(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                         layout)
    assert plan is not None
    return plan


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    process, fresh = kernel(plan.spec)
    return by_operator(process, plan.spec, fresh(),
                       pattern_state_rows(analyzed, plan, events), cuts,
                       len(plan.spec.selected))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    analyzed = app(draw(st.sampled_from(sorted(QUERIES))), draw(st.booleans()),
                   draw(st.booleans()),
                   draw(st.sampled_from(["", "", "within 3 sec", "within 800 milliseconds"])))
    events, cuts = draw(pattern_events())
    return analyzed, events, cuts


@settings(max_examples=examples(400), deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events)


def test_one_event_completes_matches_in_the_reference_list_order() -> None:
    """One ``B`` event completes every waiting match in the order the reference's pending
    list has them: the one it already held first, then those it takes now, sorted by their
    last event's time — which goes back here, so the later matches come out first."""
    analyzed = app("residual", True, False)
    rows = [("A", 5000, "x"), ("B", 5001, "y"),  # match 0 joins the list, not accepted
            ("A", 5002, "x"), ("A", 100, "x"), ("A", 50, "x"),  # matches 1, 2, 3
            ("B", 7000, "x")]
    events = [InputEvent(seq, ts, stream, (seq, 1.0 if stream == "A" else 100.0, s))
              for seq, (stream, ts, s) in enumerate(rows)]
    expected = by_runtime(analyzed, events)
    # e1[1].k of matches 0, 2, 3 (one event only), 1: last events at 5002, 50, 50, 100
    assert [o[3][0] for o in expected] == [2, 4, None, 3]
    for cuts in ([1] * len(rows), [2, 3], [4], []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


def test_within_restarts_multiply_matches_as_in_the_reference() -> None:
    """With ``within``, a counting match that expires while still collecting restarts its
    ``every`` beside the copy it made at ``n`` events: the reference's matches multiply
    and one ``B`` completes several equal ones. The walk keeps them, across batches."""
    analyzed = app("open", True, False, "within 10 sec")
    events, ts = [], 0
    for i in range(60):
        ts += 1000
        events.append(InputEvent(len(events), ts, "A", (i, float(i), "x")))
        if i % 20 == 19:
            ts += 1000
            events.append(InputEvent(len(events), ts, "B", (i, 100.0, "x")))
    expected = by_runtime(analyzed, events)
    firsts = [o[3][0] for o in expected]
    assert len(firsts) > 2 * len(set(firsts))  # the same match, many times
    for cuts in ([7] * 10, [1] * 70, []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


def test_within_drops_from_the_head_of_a_list_only() -> None:
    """``within`` drops matches from the head of a pending list up to the first one still
    in time; with time going back a later, older match stays behind it and may still
    complete (the reference's quirk, kept)."""
    analyzed = app("keyed", True, False, "within 1 sec")
    rows = [("A", 1, 10_000), ("A", 1, 10_050),  # match H: e1[0].k 1, from 10,000
            ("A", 2, 9_500), ("A", 2, 9_550),  # match L: e1[0].k 2, from 9,500
            ("B", 9, 9_600),  # H and L join e2's list, in that order; nothing completes
            ("A", 2, 9_560), ("A", 2, 9_570),  # L has its four events: it leaves counting
            ("A", 3, 10_800),  # 1,300 ms after L's start, but H, ahead of it, is in time
            ("B", 2, 10_850)]  # so L is still there to complete
    events = [InputEvent(seq, ts, stream, (k, -1.0 if ts == 10_800 else seq + 1.0, "x"))
              for seq, (stream, k, ts) in enumerate(rows)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == [(3.0, 4.0, 7.0, 7.0, "x")]
    for cuts in ([1] * len(rows), [5], []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


@pytest.mark.parametrize("partitioned", [False, True])
def test_without_every_one_match_per_instance(partitioned: bool) -> None:
    """Without ``every`` only an instance's first passing events make a match: it keeps
    collecting across micro-batches and completes once."""
    analyzed = app("keyed", False, partitioned)
    kinds = ["A", "A", "B", "A", "A", "A", "B", "B"]
    events = [InputEvent(seq, 1000 + seq, stream, (2, float(seq + 1), "x"))
              for seq, stream in enumerate(kinds)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == [(1.0, 2.0, None, 2.0, "x")]
    for cuts in ([1] * len(kinds), [1, 2], [5], []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


def test_state_is_what_chains_may_still_read() -> None:
    """100,000 events over 500 keys, a ``B`` per key every ~8 ``A``s: the state keeps each
    key's open matches and the events from the oldest one's start, not the run's events."""
    analyzed = app("keyed", True, True)
    plan = plan_of(analyzed)
    rng = np.random.default_rng(3)
    state, matches = Counted(), 0
    for batch in range(10):
        n = 10_000
        seq = np.arange(batch * n, (batch + 1) * n)
        keys = rng.integers(0, 500, n)
        second = rng.random(n) < 0.11
        frame = pd.DataFrame({SEQ: seq, TS: seq * 10, PARTITION: keys,
                              FIRST_EVENT: ~second, SECOND_EVENT: second,
                              SECOND_PASSES: second})
        for column, (_, name) in plan.attributes.items():
            frame[column] = keys if name == "k" else rng.normal(30, 10, n)
        out, state = process(plan.spec, state, frame)
        matches += len(out)
        # a key's matches after its last B (about 4) and their events (about 9)
        assert len(state.start) < 8 * 500 and len(state.index) < 16 * 500
    assert matches > 30_000  # each B completes every waiting match of its key


def test_other_shapes_stay_in_the_runtime() -> None:
    for text in ("from every e1=A<2:3> -> e2=B[v > e1.v] select e2.k insert into O;",
                 "from every e1=A<2:3> -> e2=B[v > e1[2].v] select e2.k insert into O;",
                 "from every e1=A<2:3> -> e2=B select e1.k insert into O;",
                 "from every e1=A -> e2=B<2:3> select e1.k insert into O;",
                 "from every e1=A<2:3> -> e2=B -> e3=A select e1[0].k insert into O;",
                 "from every e1=A<0:3> -> e2=B select e2.k insert into O;",
                 "from every e1=A[v > e1[last].v]<2:3> -> e2=B select e2.k insert into O;"):
        analyzed = check(STREAMS + text)
        layout = input_layout(analyzed)
        assert plan_counting(analyzed, list(analyzed.queries), layout) is None, text


@pytest.mark.parametrize(("partitioned", "within"), [(False, ""), (True, ""),
                                                     (False, "within 2 sec")])
def test_counting_through_spark(spark: Any, partitioned: bool, within: str) -> None:
    """The real plan (``eddy.replay`` on Spark) in micro-batches of 25 events equals the
    runtime."""
    analyzed = app("keyed", True, partitioned, within)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [q.operator for q in plan.queries] == ["counting"]
    events = [e for e in random_events(5, 300, "AAB", 3)]
    replay_equals_runtime(analyzed, events)
