"""The vectorised followed-by operator against the per-event runtime, which ports the
reference's pattern processors state by state (and passes the pattern conformance cases).

Random apps of the operator's shape — one or two streams, partitioned or not, with and
without ``within``, keys with nulls, residual conditions with arithmetic — and random event
sequences whose timestamps sometimes go back (which sends a batch down the event-by-event
path) are cut into random micro-batches; the operator's outputs must equal the runtime's,
value for value and in the same order. The Spark-side columns (filters on one event, the
partition key) are computed here with the same columnar evaluator, so this test needs no
Spark; ``test_followed_by_through_spark`` runs the real plan.
"""

from __future__ import annotations

import pickle
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
    pattern_state_rows,
    random_events,
    replay_equals_runtime,
)
from examples import examples

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.operators.followed_by import FollowedByPlan, plan_followed_by
from eddy.engine.operators.followed_by.matching import (
    FIRST_EVENT,
    PARTITION,
    SECOND_EVENT,
    SECOND_PASSES,
    Pending,
    process,
)
from eddy.engine.spark.row_layout import SEQ, TS, input_layout
from eddy.lang import check
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.model import InputEvent

STREAMS = ("define stream A (k int, v double, s string);\n"
           "define stream B (k long, v double, s string);\n"
           "define stream C (k int, v double, s string);\n")
QUERIES = {
    "seed": "from {every}(e1=A) -> e2=A[e1.k == k and (e1.v + 5) <= v] {within} "
            "select e1.k, e1.v as first, e2.v as second insert into O;",
    "two-streams": "from {every}e1=A[v > 0] -> e2=B[k == e1.k and v < e1.v] {within} "
                   "select e1.s, e2.k, e2.s as t insert into O;",
    "no-key": "from {every}e1=A -> e2=A[v > e1.v * 2 or s == e1.s] {within} "
              "select e1.v, e2.v as w insert into O;",
    "alone": "from {every}e1=A[s is null or v < 50] -> e2=B[v > 10 and e1.k == k] {within} "
             "select e1.k, e2.v insert into O;",
    "either": "from {every}e1=A[v > 0] -> (e2=B[k == e1.k and v < e1.v] or e3=C[k == e1.k]) "
              "{within} select e1.s, e2.k, e3.v as t insert into O;",
    "either-same": "from {every}e1=A -> (e2=A[v > e1.v] or e3=A[s == e1.s]) {within} "
                   "select e1.v, e2.v as l, e3.v as r insert into O;",
    "either-mixed": "from {every}e1=A -> (e2=B[v > 10] or e3=A[e1.k == k and v < e1.v]) "
                    "{within} select e1.k, e2.v, e3.s insert into O;",
    "string-key": "from {every}e1=A -> e2=A[e1.s == s and e1.k != k] {within} "
                  "select e1.k as a, e2.k as b, e2.s insert into O;",
}
PARTITIONS = {"A": "k of A", "B": "k of B", "C": "k of C"}


@cache
def app(query: str, within: str, partitioned: bool, every: bool = True) -> AnalyzedApp:
    text = QUERIES[query].format(within=within, every="every " if every else "")
    if partitioned:
        streams = [s for s in "ABC" if f"={s}" in text]
        text = (f"partition with ({', '.join(PARTITIONS[s] for s in streams)}) begin\n"
                f"{text}\nend;")
    return check("@app:playback\n" + STREAMS + text)


def plan_of(analyzed: AnalyzedApp) -> FollowedByPlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_followed_by(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                            layout)
    assert plan is not None
    return plan


def operator_rows(analyzed: AnalyzedApp, plan: FollowedByPlan,
                  events: Sequence[InputEvent]) -> pd.DataFrame:
    """The rows Spark hands the operator (what :mod:`.spark` computes in the JVM)."""
    return pattern_state_rows(analyzed, plan, events)


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    return by_operator(process, plan.spec, Pending(), operator_rows(analyzed, plan, events), cuts,
                       len(plan.spec.selected))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    query = draw(st.sampled_from(sorted(QUERIES)))
    within = draw(st.sampled_from(["within 3 sec", "within 500 milliseconds", ""]))
    analyzed = app(query, within, draw(st.booleans()), draw(st.booleans()))
    n = draw(st.integers(0, 60))
    ts, events = 10_000, []
    back = draw(st.booleans())
    for seq in range(n):
        ts += draw(st.integers(-900 if back else 0, 1200))
        stream = draw(st.sampled_from("ABC"))
        k = draw(st.sampled_from([None, 0, 1, 1, 2, 2, 3]))
        v = draw(st.sampled_from([None, -1.0, 0.0, 3.5, 9.0, 20.0, 70.0]))
        s = draw(st.sampled_from([None, "x", "y", "y"]))
        events.append(InputEvent(seq, ts, stream, (k, v, s)))
    cuts = draw(st.lists(st.integers(1, 12), max_size=6))
    return analyzed, events, cuts


@settings(max_examples=examples(300), deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events)


@pytest.mark.parametrize("partitioned", [False, True])
def test_without_every_the_first_match_only(partitioned: bool) -> None:
    """Without ``every`` the first ``e1`` of an instance alone starts a match, also when
    later ones come in later micro-batches."""
    analyzed = app("no-key", "", partitioned, every=False)
    data = [("A", 1, 1.0), ("A", 1, 5.0), ("A", 2, 1.0), ("A", 1, 9.0), ("A", 2, 9.0)]
    events = [InputEvent(seq, 1000 + seq, stream, (k, v, None))
              for seq, (stream, k, v) in enumerate(data)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == ([(1.0, 5.0)] if not partitioned
                                        else [(1.0, 5.0), (1.0, 9.0)])
    for cuts in ([1] * 5, [2, 1], []):
        assert run_operator(analyzed, events, cuts) == expected, cuts


@pytest.mark.parametrize("cuts", [[], [2, 1, 1], [3, 1], [1, 1, 1, 1]])
@pytest.mark.parametrize("back", [True, False])
def test_either_side_the_left_first(cuts: list[int], back: bool) -> None:
    """``e1 -> (e2 or e3)`` over one stream: at an event both sides accept, the left side
    completes the match; and the matches an event completes come out the left side's first,
    each side's in its list's order — also when time goes back (the event-by-event path)."""
    analyzed = app("either-same", "", False)
    data = [(5.0, "x", 1000), (1.0, "y", 2000 if back else 1100), (4.0, "x", 1500),
            (9.0, "x", 1600)]
    events = [InputEvent(seq, ts, "A", (1, v, s)) for seq, (v, s, ts) in enumerate(data)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == [(1.0, 4.0, None), (5.0, None, 4.0), (4.0, 9.0, None)]
    assert run_operator(analyzed, events, cuts) == expected


STALE = [("A", 1, 5.0, "x", 10_000), ("B", 1, 1.0, None, 10_100),  # B completes x
         ("A", 1, 5.0, "y", 12_000), ("B", 3, 1.0, None, 12_100),  # y joins both lists
         ("A", 2, -1.0, None, 8_500)]  # time goes back: B's list drops y; x stops C's scan


@pytest.mark.parametrize(("late", "cuts"), [
    (8_600, []), (8_600, [4]), (8_600, [1] * 6), (12_500, [5, 1]), (12_500, [2, 2, 1, 1])])
def test_a_match_expired_in_one_list_completes_unseen(late: int, cuts: list[int]) -> None:
    """``e1 -> (e2 or e3) within t``: ``e2``'s list drops an expired match that ``e3``'s
    keeps (a match ``e2`` completed, in time, stops its scan from the head); when ``e3``
    then completes it, it is an expired event, which ``insert into`` leaves out — whichever
    micro-batches the events come in (with time forward again, the vectorised path)."""
    analyzed = app("either", "within 3 sec", False)
    data = [*STALE, ("C", 1, 0.0, None, late)]
    events = [InputEvent(seq, ts, stream, (k, v, s))
              for seq, (stream, k, v, s, ts) in enumerate(data)]
    expected = by_runtime(analyzed, events)
    assert [o[3] for o in expected] == [("x", 1, None)]
    assert run_operator(analyzed, events, cuts) == expected


def test_a_checkpoint_from_before_the_new_fields_loads() -> None:
    """A pattern's state checkpointed by an earlier eddy (no ``started``, ``listed``,
    ``completed``, ``expired``) loads with its matches in every list, none completed."""
    old = Pending(np.array([3, 5]), np.array([False, True]), np.array([10, 20]),
                  np.array([0, 0]))
    for name in ("started", "listed", "completed", "expired"):
        del old.__dict__[name]
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.started == set() and loaded.listed.tolist() == [-1, -1]
    assert loaded.completed.tolist() == [False, False] == loaded.expired.tolist()


def test_state_stays_flat_with_within() -> None:
    """200,000 events over 1,000 keys: the pending matches stay bounded by ``within``."""
    analyzed = app("seed", "within 2 sec", False)
    plan = plan_of(analyzed)
    rng = np.random.default_rng(7)
    pending, sizes = Pending(), []
    for batch in range(20):
        n = 10_000
        seq = np.arange(batch * n, (batch + 1) * n)
        frame = pd.DataFrame({SEQ: seq, TS: seq * 10, FIRST_EVENT: True, SECOND_EVENT: True,
                              SECOND_PASSES: True, PARTITION: None})
        keys, values = rng.integers(0, 1000, n), rng.normal(30, 10, n)
        for column, (_, name) in plan.attributes.items():
            frame[column] = keys if name == "k" else values
        _, pending = process(plan.spec, pending, frame)
        sizes.append(len(pending))
    # events 10 ms apart: at most 200 fall within 2 s of the newest
    assert max(sizes) <= 201 and sizes[-1] > 0


def test_other_shapes_stay_in_the_runtime() -> None:
    for text in ("from every e1=A -> e2=A[v > e1.v] -> e3=A[v > e2.v] select e1.k insert into O;",
                 "from every (e1=A -> e2=A[v > e1.v]) select e1.k insert into O;",
                 "from every e1=A -> (e2=B and e3=C) select e1.k insert into O;",
                 "from every e1=A -> (e2=B[v > e3.v] or e3=C) select e1.k insert into O;",
                 "from every e1=A -> e2=A[v > e1.v] select e1.k, count() as c group by e1.k "
                 "insert into O;",
                 "from every e1=A -> e2=A[math:abs(v) > e1.v] select e1.k insert into O;"):
        analyzed = check(STREAMS + text)
        layout = input_layout(analyzed)
        assert plan_followed_by(analyzed, list(analyzed.queries), layout) is None, text


@pytest.mark.parametrize(("query", "within", "partitioned"), [
    ("two-streams", "within 2 sec", False), ("two-streams", "within 2 sec", True),
    ("either", "within 2 sec", True), ("either-same", "", False)])
def test_followed_by_through_spark(spark: Any, query: str, within: str,
                                   partitioned: bool) -> None:
    """The real plan (``eddy.replay`` on Spark) in micro-batches of 25 events, timestamps
    going back now and then, equals the runtime."""
    analyzed = app(query, within, partitioned)
    replay_equals_runtime(analyzed, random_events(3, 200, "ABC", 5))
