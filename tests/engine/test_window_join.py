"""The vectorised length-window join against the per-event runtime (a port of the
reference's ``JoinProcessor`` that passes the join conformance cases).

Random joins of the operator's shape — key equalities of several types, residual
conditions, filters before the windows, window lengths from 1 up — over random event
sequences cut into random micro-batches: the operator's outputs must equal the runtime's,
value for value and in the same order. Filters run in Spark SQL in the real plan; here the
rows they drop are dropped with the same columnar evaluator, so this needs no Spark.
``test_window_join_through_spark`` runs the real plan.
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

from columnar_runs import Output, by_operator, by_runtime

from eddy.engine.columnar import column_values, compile_columnar, evaluate, truthy
from eddy.engine.layout import SEQ, TS, input_layout
from eddy.engine.native import plan_native
from eddy.engine.runtime.model import InputEvent
from eddy.engine.window_join import WindowJoinPlan, plan_window_join
from eddy.engine.window_join.matching import SIDE, Windows, process
from eddy.lang import check
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp

STREAMS = ("define stream L (k int, v double, s string);\n"
           "define stream R (k long, w double, s string);\n")
QUERIES = {
    "key": "from L#window.length({n}) join R#window.length({m}) on L.k == R.k "
           "select L.k, L.v, R.w insert into O;",
    "key-residual": "from L[v > 0]#window.length({n}) join R#window.length({m}) "
                    "on R.k == L.k and L.v + 1 < R.w select L.s, R.k, R.w insert into O;",
    "no-key": "from L#window.length({n}) join R[w is null or w < 30]#window.length({m}) "
              "on L.v > R.w or L.s == R.s select L.v, R.s as t insert into O;",
    "string-key": "from L#window.length({n}) as a join R#window.length({m}) as b "
                  "on a.s == b.s select a.k, b.k as j, b.s insert into O;",
    "cross": "from L#window.length({n}) join R#window.length({m}) select L.k, R.k as j "
             "insert into O;",
}


@cache
def app(query: str, n: int, m: int) -> AnalyzedApp:
    return check("@app:playback\n" + STREAMS + QUERIES[query].format(n=n, m=m))


def plan_of(analyzed: AnalyzedApp) -> WindowJoinPlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_window_join(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                            layout)
    assert plan is not None
    return plan


def operator_rows(analyzed: AnalyzedApp, plan: WindowJoinPlan,
                  events: Sequence[InputEvent]) -> pd.DataFrame:
    """The rows Spark hands the operator (filters applied, as the JVM does)."""
    kinds = {n: {a.name: a.type for a in analyzed.streams[n].attributes} for n in "LR"}
    scope = plan.info.scope
    rows: dict[str, list[Any]] = {SEQ: [], TS: [], SIDE: []}
    rows.update({c: [] for c in plan.attributes})
    for event in events:
        side = plan.streams.index(event.stream)
        names = list(kinds[event.stream])
        values = dict(zip(names, event.data))
        columns = {n: column_values(pd.Series([values[n]], dtype=object), kinds[event.stream][n])
                   for n in names}
        current = scope.with_current(scope.sources[side])
        if not all(bool(truthy(evaluate(compile_columnar(
                f, analyzed.type_of, lambda v: current.resolve(v).attribute.name),
                columns, 1))[0]) for f in plan.filters[side]):
            continue
        rows[SEQ].append(event.seq)
        rows[TS].append(event.ts)
        rows[SIDE].append(side)
        for column, (stream, name) in plan.attributes.items():
            rows[column].append(values[name] if stream == event.stream else None)
    frame = pd.DataFrame(rows)
    for column, (stream, name) in plan.attributes.items():  # as Arrow hands them to pandas
        kind = kinds[stream][name]
        if kind is AttrType.DOUBLE or (kind in (AttrType.INT, AttrType.LONG)
                                       and frame[column].isna().any()):
            frame[column] = frame[column].astype(np.float64)
        elif kind in (AttrType.INT, AttrType.LONG):
            frame[column] = frame[column].astype(np.int64)
    return frame


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    return by_operator(process, plan.spec, Windows(), operator_rows(analyzed, plan, events), cuts,
                       len(plan.spec.selected))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    analyzed = app(draw(st.sampled_from(sorted(QUERIES))), draw(st.integers(1, 6)),
                   draw(st.integers(1, 6)))
    events, ts = [], 1_000
    for seq in range(draw(st.integers(0, 50))):
        ts += draw(st.integers(0, 100))
        k = draw(st.sampled_from([None, 0, 1, 1, 2]))
        v = draw(st.sampled_from([None, -1.0, 0.0, 5.0, 20.0, 40.0]))
        s = draw(st.sampled_from([None, "x", "y"]))
        events.append(InputEvent(seq, ts, draw(st.sampled_from("LR")), (k, v, s)))
    return analyzed, events, draw(st.lists(st.integers(1, 12), max_size=6))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events)


def test_other_joins_stay_in_the_runtime() -> None:
    for text in ("from L#window.length(3) left outer join R#window.length(3) on L.k == R.k "
                 "select L.k insert into O;",
                 "from L#window.length(3) unidirectional join R#window.length(3) "
                 "on L.k == R.k select L.k insert into O;",
                 "from L#window.time(1 sec) join R#window.length(3) on L.k == R.k "
                 "select L.k insert into O;",
                 "from L#window.length(3) join R#window.length(3) on L.k == R.k "
                 "select L.k, count() as c insert into O;"):
        analyzed = check(STREAMS + text)
        assert plan_window_join(analyzed, list(analyzed.queries), input_layout(analyzed)) \
            is None, text


@pytest.mark.parametrize("batch", [13])
def test_window_join_through_spark(spark: Any, batch: int) -> None:
    """The real plan (``eddy.replay`` on Spark) equals the runtime."""
    from eddy.engine.replay import replay

    analyzed = app("key-residual", 20, 7)
    rng = np.random.default_rng(5)
    events = [InputEvent(seq, 1_000 + 10 * seq, "LR"[int(rng.integers(0, 2))],
                         (None if seq % 23 == 0 else int(rng.integers(0, 4)),
                          float(rng.normal(10, 8)), "xy"[seq % 2])) for seq in range(200)]
    inputs = [{"stream": e.stream, "data": list(e.data), "timestamp": e.ts} for e in events]
    result = replay(analyzed.source, inputs, batch_size=batch)
    expected = [(o[1], o[3]) for o in by_runtime(analyzed, events)]
    assert [(e["timestamp"], tuple(e["data"])) for e in result.streams["O"]] == expected
    assert expected
