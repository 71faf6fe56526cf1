"""The vectorised window join against the per-event runtime (a port of the reference's
``JoinProcessor`` that passes the join conformance cases).

Random joins of the operator's shape — key equalities of several types, residual
conditions, filters before the windows, length and time windows of several sizes, sides
without a window, outer and unidirectional joins, self joins, expressions selected, expired
events inserted — over random event sequences (time going back now and then, live mode's
heartbeats and a stream no query reads among them) cut into random micro-batches: the
operator's outputs must equal the runtime's, value for value, kind and time, in the same
order. Filters run in Spark SQL in the real plan; here the
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
from examples import examples

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.operators.columnar_expressions import (
    column_values,
    compile_columnar,
    evaluate,
    truthy,
)
from eddy.engine.operators.window_join import aggregating
from eddy.engine.operators.window_join import WindowJoinPlan, plan_window_join
from eddy.engine.operators.window_join.matching import PASSES, SIDE, TICK, Windows, process
from eddy.engine.spark.row_layout import SEQ, TICK_STREAM, TS, input_layout
from eddy.lang import check
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.model import InputEvent

STREAMS = ("define stream L (k int, v double, s string);\n"
           "define stream R (k long, w double, s string);\n"
           "define stream C (k int);\n")
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
    "time": "from L#window.time({t}) join R[w is null or w < 30]#window.time({u}) "
            "on L.k == R.k select L.k, L.v, R.w insert into O;",
    "time-length": "from L[v > 0]#window.time({t}) join R#window.length({m}) "
                   "on R.k == L.k and L.v < R.w select L.s, R.k, R.w insert into O;",
    "length-time": "from L#window.length({n}) as a join R#window.time({u}) as b "
                   "on a.s == b.s select a.k, b.k as j, b.s insert into O;",
    "left-outer": "from L#window.length({n}) left outer join R#window.length({m}) "
                  "on L.k == R.k select L.k, R.w insert into O;",
    "right-outer": "from L#window.time({t}) right outer join R[w is null or w < 30]"
                   "#window.length({m}) on L.s == R.s and L.v < R.w select L.v, R.k "
                   "insert into O;",
    "full-outer": "from L#window.length({n}) full outer join R#window.time({u}) "
                  "on L.k == R.k select L.k, R.k as j, R.s insert into O;",
    "unidirectional": "from L[v > 0] unidirectional join R#window.length({m}) on L.k == R.k "
                      "select L.s, R.w insert into O;",
    "right-unidirectional": "from L#window.time({t}) join R unidirectional on L.s == R.s "
                            "select L.k, R.s insert into O;",
    "self": "from L#window.length({n}) as a join L[v > 0]#window.length({m}) as b "
            "on a.s == b.s and a.v < b.v select a.k, b.k as j insert into O;",
    "self-time": "from L#window.time({t}) as a left outer join L#window.length({m}) as b "
                 "on a.k == b.k select a.v, b.v as w insert into O;",
    "expressions": "from L#window.length({n}) join R#window.length({m}) "
                   "select L.k * R.k as p, L.v + R.w as x, L.s, 'j' as tag insert into O;",
    "all-events": "from L#window.length({n}) join R#window.length({m}) on L.k == R.k "
                  "select L.k, L.v, R.w insert all events into O;",
    "expired-outer": "from L#window.length({n}) left outer join R#window.length({m}) "
                     "on L.s == R.s select L.s, R.k insert expired events into O;",
    "no-window-all": "from L join R[w is null or w < 30]#window.length({m}) on L.k == R.k "
                     "select L.k, R.w insert all events into O;",
    "self-all": "from L#window.length({n}) as a full outer join L#window.length({m}) as b "
                "on a.k == b.k and a.v != b.v select a.v, b.s insert all events into O;",
    # aggregates over the joined events, expired joins leaving them
    "grouped": "from L#window.length({n}) join R#window.length({m}) on L.k == R.k "
               "select L.k, count() as c, sum(R.w) as total, avg(L.v) as mean group by L.k "
               "insert into O;",
    "grouped-all": "from L#window.length({n}) as a join R[w is null or w < 30]"
                   "#window.length({m}) as b on a.s == b.s select a.s, b.k, avg(b.w) as mean "
                   "group by a.s, b.k insert all events into O;",
    "aggregated-expired": "from L#window.length({n}) join R#window.length({m}) "
                          "on L.k == R.k and L.v < R.w select L.v, count() as c, "
                          "sum(L.v + R.w) as x insert expired events into O;",
    "grouped-no-window": "from L join R#window.length({m}) on L.k == R.k select R.s, "
                         "count() as c group by R.s insert all events into O;",
    "grouped-unidirectional": "from L[v > 0] unidirectional join R#window.length({m}) "
                              "on L.k == R.k select L.k, sum(R.w) as total group by L.k "
                              "insert into O;",
    "grouped-cross": "from L#window.length({n}) join R#window.length({m}) select R.s, L.k, "
                     "count() as c group by R.s insert all events into O;",
}


@cache
def app(query: str, n: int, m: int) -> AnalyzedApp:
    """The app; a time window lasts 40 ms per unit of its side's size."""
    return check("@app:playback\n" + STREAMS + QUERIES[query].format(n=n, m=m, t=40 * n,
                                                                     u=40 * m))


def plan_of(analyzed: AnalyzedApp) -> WindowJoinPlan:
    layout = input_layout(analyzed)
    native = plan_native(analyzed, layout)
    plan = plan_window_join(analyzed, [q for q in analyzed.queries if q.id not in native.ids],
                            layout)
    assert plan is not None
    return plan


def operator_rows(analyzed: AnalyzedApp, plan: WindowJoinPlan,
                  events: Sequence[InputEvent]) -> pd.DataFrame:
    """The rows Spark hands the operator (filters evaluated, as the JVM does): a row per
    side an event reaches (both in a self join, left first); when the operator reads the
    clock every row (marked whether it enters), else the entering ones only."""
    kinds = {n: {a.name: a.type for a in analyzed.streams[n].attributes} for n in "LRC"}
    clocked = plan.spec.clocked
    rows: dict[str, list[Any]] = {SEQ: [], TS: [], SIDE: [], PASSES: []}
    rows.update({c: [] for c in plan.attributes})
    for event in events:
        names = list(kinds.get(event.stream, ()))
        values = dict(zip(names, event.data))
        sides = [s for s, stream in enumerate(plan.streams) if stream == event.stream]
        for side in sides or [TICK]:
            passes = side != TICK and _passes(analyzed, plan, side, values, kinds[event.stream])
            if not (clocked or passes):
                continue
            rows[SEQ].append(event.seq)
            rows[TS].append(event.ts)
            rows[SIDE].append(side)
            rows[PASSES].append(passes)
            for column, (stream, name) in plan.attributes.items():
                rows[column].append(values[name] if stream == event.stream else None)
    frame = pd.DataFrame(rows if clocked else {c: v for c, v in rows.items() if c != PASSES})
    for column, (stream, name) in plan.attributes.items():  # as Arrow hands them to pandas
        kind = kinds[stream][name]
        if kind is AttrType.DOUBLE or (kind in (AttrType.INT, AttrType.LONG)
                                       and frame[column].isna().any()):
            frame[column] = frame[column].astype(np.float64)
        elif kind in (AttrType.INT, AttrType.LONG):
            frame[column] = frame[column].astype(np.int64)
    return frame


def _passes(analyzed: AnalyzedApp, plan: WindowJoinPlan, side: int, values: dict[str, Any],
            kinds: dict[str, AttrType]) -> bool:
    """Whether an event with ``values`` passes the filters of ``side``."""
    scope = plan.info.scope
    columns = {n: column_values(pd.Series([values[n]], dtype=object), kinds[n]) for n in values}
    current = scope.with_current(scope.sources[side])
    return all(bool(truthy(evaluate(compile_columnar(
        f, analyzed.type_of, lambda v: current.resolve(v).attribute.name), columns, 1))[0])
        for f in plan.filters[side])


def run_operator(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                 cuts: Sequence[int]) -> list[Output]:
    plan = plan_of(analyzed)
    rows = operator_rows(analyzed, plan, events)
    aggregation = plan.spec.aggregation
    if aggregation is not None:
        return by_operator(aggregating.process, plan.spec, aggregating.Aggregated(), rows,
                           cuts, len(aggregation.outputs), expired=expires(plan))
    return by_operator(process, plan.spec, Windows(), rows, cuts, len(plan.spec.selected),
                       expired=expires(plan))


def expires(plan: WindowJoinPlan) -> bool:
    """Whether the query inserts expired events."""
    aggregation = plan.spec.aggregation
    return (plan.spec.events if aggregation is None else aggregation.events) != "current"


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AnalyzedApp, list[InputEvent], list[int]]:
    analyzed = app(draw(st.sampled_from(sorted(QUERIES))), draw(st.integers(1, 6)),
                   draw(st.integers(1, 6)))
    events, ts = [], 1_000
    back = draw(st.sampled_from([0, 60]))  # how far time may go back, now and then
    for seq in range(draw(st.integers(0, 50))):
        ts += draw(st.integers(-back, 100)) if back else draw(st.integers(0, 100))
        stream = draw(st.sampled_from(["L", "R", "L", "R", TICK_STREAM, "C"]))
        if stream in (TICK_STREAM, "C"):
            events.append(InputEvent(seq, ts, stream, () if stream == TICK_STREAM else (1,)))
            continue
        k = draw(st.sampled_from([None, 0, 1, 1, 2]))
        v = draw(st.sampled_from([None, -1.0, 0.0, 5.0, 20.0, 40.0]))
        s = draw(st.sampled_from([None, "x", "y"]))
        events.append(InputEvent(seq, ts, stream, (k, v, s)))
    return analyzed, events, draw(st.lists(st.integers(1, 12), max_size=6))


@settings(max_examples=examples(500), deadline=None)
@given(scenarios())
def test_operator_equals_the_runtime(scenario: tuple[AnalyzedApp, list[InputEvent],
                                                     list[int]]) -> None:
    analyzed, events, cuts = scenario
    expired = expires(plan_of(analyzed))
    assert run_operator(analyzed, events, cuts) == by_runtime(analyzed, events, expired=expired)


def test_other_joins_stay_in_the_runtime() -> None:
    for text in ("from L#window.timeBatch(1 sec) join R#window.length(3) on L.k == R.k "
                 "select L.k insert into O;",
                 "from L#window.length(3) left outer join R#window.length(3) on L.k == R.k "
                 "select L.k, count() as c insert into O;",
                 "from L#window.time(1 sec) join R#window.length(3) on L.k == R.k "
                 "select L.k, count() as c group by L.k insert into O;",
                 "from L#window.length(3) as a join L#window.length(3) as b on a.k == b.k "
                 "select a.k, count() as c group by a.k insert into O;",
                 "from L#window.length(3) join R#window.length(3) on L.k == R.k "
                 "select L.k, max(R.w) as top group by L.k insert into O;",
                 "from L#window.length(3) join R#window.length(3) on L.k == R.k "
                 "select L.k, sum(R.k) as ks group by L.k insert into O;",
                 "from L#window.length(3) join R#window.length(3) on L.k == R.k "
                 "select L.v, count() as c group by L.v insert into O;",
                 "from L#window.time(1 sec) join R#window.length(3) on L.k == R.k "
                 "select L.k insert all events into O;",
                 "from L#window.length(3) join R#window.length(3) on L.k == R.k "
                 "select L.k output last every 2 events insert into O;"):
        analyzed = check(STREAMS + text)
        assert plan_window_join(analyzed, list(analyzed.queries), input_layout(analyzed)) \
            is None, text


@pytest.mark.parametrize("query", ["key-residual", "time-length", "right-outer", "self-all",
                                   "grouped-all"])
def test_window_join_through_spark(spark: Any, query: str) -> None:
    """The real plan (``eddy.replay`` on Spark, batches of 13 events, time going back now
    and then, a stream no query reads among them) equals the runtime, expired events
    included."""
    from eddy.engine.run.replay import replay

    analyzed = check("@app:playback\n" + STREAMS + "@info(name='q')\n"
                     + QUERIES[query].format(n=20, m=7, t=800, u=280))
    rng = np.random.default_rng(5)
    streams = "LRLRC"
    events = [InputEvent(seq, 1_000 + 10 * seq - 30 * (seq % 17 == 0),
                         streams[int(rng.integers(0, 5))],
                         (None if seq % 23 == 0 else int(rng.integers(0, 4)),
                          float(rng.normal(10, 8)), "xy"[seq % 2])) for seq in range(200)]
    events = [e if e.stream != "C" else InputEvent(e.seq, e.ts, "C", (1,)) for e in events]
    inputs = [{"stream": e.stream, "data": list(e.data), "timestamp": e.ts} for e in events]
    result = replay(analyzed.source, inputs, batch_size=13)
    expired = expires(plan_of(analyzed))
    expected = [(o[1], o[3]) for o in by_runtime(analyzed, events, expired=expired)]
    assert [(e["timestamp"], tuple(e["data"]) + ((e["expired"],) if expired else ()))
            for e in result.queries["q"]] == expected
    assert expected
