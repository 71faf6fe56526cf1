"""Compiling one execution group to one Spark streaming DataFrame.

The physical planner (:mod:`eddy.plan.physical`, Spark-free) decides per query which
operator runs it and on which state key; this module builds that plan in Spark and nothing
else: Spark SQL over the group's input rows for the stateless queries
(:mod:`eddy.engine.compile.native_queries`), the vectorised window aggregate, followed-by,
window join, sequence, counting pattern, pattern cycle and logical pattern
(:mod:`eddy.engine.operators.window_aggregates`, :mod:`eddy.engine.operators.followed_by`,
:mod:`eddy.engine.operators.window_join`, :mod:`eddy.engine.operators.sequence`,
:mod:`eddy.engine.operators.counting`, :mod:`eddy.engine.operators.cycle`,
:mod:`eddy.engine.operators.logical`) for the queries
planned there, and the per-event
runtime or the aggregation step (:mod:`eddy.engine.operators.runtime_operator`,
:mod:`eddy.engine.operators.aggregation_step`) for the rest, keyed as planned, reading rows
the JVM narrowed (:mod:`eddy.engine.compile.runtime_input`). Each Python operator is an
:class:`~eddy.engine.operators.operator_part.OperatorPart`; one runs in a stateful operator of
its own, several run fused in one (:mod:`eddy.engine.operators.fused_operator`), each keeping
its own state. A Java operator may read another's outputs (a chain the planner allows:
:meth:`~eddy.plan.physical.planner.Planning.producer_of`): Spark runs the stateful
operators one after the other in the micro-batch, each link carrying the outputs of the
ones before it (:mod:`eddy.engine.operators.chain`). The planner's rules say when each is
exact; the answers it needs from the operators come from
:mod:`eddy.engine.compile.operator_facts`, so ``eddy explain`` shows what runs here.
The result is the group's tagged output rows, ready for one writer that routes them by target.

Live mode's heartbeat rows (:data:`~eddy.engine.spark.row_layout.TICK_STREAM`) reach the runtime
and the batch-window operator, so timers fire on the wall clock without new events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.compile.app_check import check_app
from eddy.engine.compile.native_queries import (
    NativePlan,
    as_input,
    compile_native,
    native_plan,
    with_tails,
)
from eddy.engine.compile.operator_facts import physical_plan, source_plan
from eddy.engine.compile.runtime_input import runtime_rows, state_key
from eddy.engine.operators.aggregation_step import aggregation_split, make_aggregation_step
from eddy.engine.operators.chain import link_entry, link_rows
from eddy.engine.operators.counting import CountingPlan, counting_part, plan_counting
from eddy.engine.operators.cycle import cycle_part, plan_cycle
from eddy.engine.operators.followed_by import FollowedByPlan, followed_by_part, plan_followed_by
from eddy.engine.operators.followed_by.jvm import jvm_followed_by
from eddy.engine.operators.fused_operator import run_fused
from eddy.engine.operators.absent import plan_absent
from eddy.engine.operators.absent.jvm import jvm_absent
from eddy.engine.operators.logical import logical_part, plan_logical
from eddy.engine.operators.operator_part import (
    KEY,
    OUTPUT_COLUMNS,
    OperatorPart,
    order_prefix,
    output_columns,
    run_alone,
)
from eddy.engine.operators.runtime_operator import make_step
from eddy.engine.operators.sequence import SequencePlan, plan_sequence, sequence_part
from eddy.engine.operators.window_aggregates import plan_window_aggregate, window_aggregate_part
from eddy.engine.operators.window_aggregates.jvm import jvm_window_aggregate
from eddy.engine.operators.window_join import WindowJoinPlan, plan_window_join, window_join_part
from eddy.engine.spark.row_layout import DATA, STORE_STREAM, TICK_STREAM, InputLayout
from eddy.plan.physical import GroupPhysicalPlan, QueryChoice
from eddy.plan.physical.heads import fed_stream
from eddy.plan.physical.model import Operator
from eddy.plan.physical.planner import aggregation_inputs
from eddy.runtime.table import build_tables
from eddy.store.aggregation_settings import worker_environment

if TYPE_CHECKING:
    from eddy.lang.semantic import AnalyzedApp, QueryInfo


def compile_group(app_text: str, source: DataFrame, layout: InputLayout,
                  *, on_demand: bool = True, typed: bool = True) -> DataFrame:
    """The streaming DataFrame of a group's outputs (``row_layout.OUTPUT_SCHEMA`` and the value
    slots its queries fill: :mod:`eddy.engine.spark.row_layout`).

    ``on_demand`` keeps the runtime in the plan to answer on-demand queries even when every
    streaming query runs natively; False also promises that no on-demand query comes, which
    lets an aggregation-only group run split by group (the planner's rule 11.1). ``typed``
    False puts the values of Spark SQL's outputs in ``_data`` too (real-time mode writes
    ``OUTPUT_SCHEMA`` only; its groups have no other operator).
    """
    analyzed, _ = check_app(app_text)
    build_tables(analyzed)  # a bad @store is an app error here, not in a Spark task
    # Shard id and datasources reach the Python workers that run aggregations (checked here,
    # in the driver, so a missing shardId fails the deployment, not a micro-batch).
    worker_environment(analyzed, source.sparkSession.sparkContext.environment)
    plan = source_plan(analyzed, layout, source.columns, on_demand=on_demand)
    return compile_physical(app_text, analyzed, plan, source, layout, typed=typed)


def compile_physical(app_text: str, analyzed: AnalyzedApp, plan: GroupPhysicalPlan,
                     source: DataFrame, layout: InputLayout, *, typed: bool = True
                     ) -> DataFrame:
    """The group's outputs, each query run by the operator ``plan`` chose for it: Spark SQL
    for the native queries, and the Python operators (each vectorised query's, the
    runtime's) in one stateful operator of their own, or fused into one when there are
    several (:mod:`eddy.engine.operators.fused_operator`: Spark runs one per streaming query)."""
    frames: list[DataFrame] = []
    native = compile_native(analyzed, native_plan(analyzed, plan.ids("spark-sql")),
                            source, layout, typed=typed)
    if native is not None:
        frames.append(native)
    tails = native_plan(analyzed, plan.ids("spark-sql-tail"))
    for name in [n for operator in _JVM for n in plan.ids(operator)]:
        if plan.choice(name).producer is not None:
            continue  # a link of its producer's chain
        chain = [name]  # producers before their readers
        while more := [c.query for c in plan.queries
                       if c.producer in chain and c.query not in chain]:
            chain += more
        entries = {name: _through_heads(analyzed, analyzed.query(name), source, layout)[2]}
        frame: DataFrame | None = None  # each link reads the one before it (:mod:`.chain`)
        for link in chain:
            choice = plan.choice(link)
            upstream = None
            if choice.producer is not None:
                assert frame is not None
                upstream = (frame, entries[choice.producer])
                entries[link] = link_entry(analyzed, analyzed.query(choice.producer),
                                           entries[choice.producer])
            frame = _JVM[choice.operator](analyzed, choice, source, layout, upstream)
        assert frame is not None
        frames.append(_tailed(analyzed, frame, chain, tails))
    names = plan.python_operators()
    parts = [_runtime_part(app_text, analyzed, plan, source, layout) if name == "runtime"
             else _VECTORISED[plan.choice(name).operator](analyzed, plan.choice(name), source,
                                                          layout)
             for name in names]
    if parts:
        frames.append(_tailed(analyzed, run_alone(parts[0]) if len(parts) == 1
                              else run_fused(parts), [n for n in names if n != "runtime"],
                              tails))
    assert frames, "the planner leaves a group with no operator"
    outputs = frames[0]
    for frame in frames[1:]:  # a query's missing value slots are nulls
        outputs = outputs.unionByName(frame, allowMissingColumns=True)
    if DATA not in outputs.columns:
        outputs = outputs.withColumn(DATA, F.lit(None).cast("string"))
    return outputs


def _tailed(analyzed: AnalyzedApp, frame: DataFrame, queries: Sequence[str],
            tails: NativePlan) -> DataFrame:
    """``frame``, the outputs of an operator running ``queries``, with the outputs of the
    tails reading them (:func:`~eddy.engine.compile.native_queries.with_tails`), less the
    events of a partition's inner streams: those only feed the tails (the app's outputs are
    its streams')."""
    producers = [analyzed.query(name) for name in queries]
    filled = {p.output_stream for p in producers}
    reached = []
    for info in tails.queries:  # producers first
        if info.inputs[0] in filled:
            reached.append(info)
            filled.add(info.output_stream)
    frame = with_tails(analyzed, frame, [p for p in producers
                                         if any(p.output_stream in t.inputs for t in reached)],
                       NativePlan(tuple(reached)))
    inner = [p.id for p in producers if p.target_kind == "inner"]
    return frame.where(~F.col("_query").isin(inner)) if inner else frame


def _disagree(choice: QueryChoice) -> RuntimeError:
    return RuntimeError(f"{choice.query}: the physical planner chose the {choice.operator} "
                        "operator, which does not take the query (a bug in eddy)")


def _buckets(choice: QueryChoice) -> int:
    """The planned number of hash buckets, 0 for one key."""
    return choice.key.buckets if choice.key.kind == "buckets" else 0


def _window_aggregate(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
                      layout: InputLayout) -> OperatorPart:
    source, layout, start = _fed(analyzed, choice, source, layout)
    window = plan_window_aggregate(analyzed, [analyzed.query(choice.query)], layout)
    if window is None:
        raise _disagree(choice)
    return window_aggregate_part(analyzed, replace(window, entry=start), source, layout,
                                 buckets=_buckets(choice))


Upstream = tuple[DataFrame, tuple[int, ...]]
"""What a link of a chain reads: the chain's rows so far, and the path at which an input's
event reaches its producer (:mod:`eddy.engine.operators.chain`)."""


def _jvm_window_aggregate(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
                          layout: InputLayout, upstream: Upstream | None) -> DataFrame:
    """The query in eddy's Java operator (:mod:`eddy.engine.operators.window_aggregates.jvm`)."""
    source, layout, start = _fed(analyzed, choice, source, layout, upstream)
    window = plan_window_aggregate(analyzed, [analyzed.query(choice.query)], layout, jvm=True)
    if window is None:
        raise _disagree(choice)
    return _in_jvm(choice, jvm_window_aggregate(analyzed, replace(window, entry=start),
                                                source, layout, buckets=_buckets(choice)))


def _fed(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame, layout: InputLayout,
         upstream: Upstream | None = None
         ) -> tuple[DataFrame, InputLayout, tuple[int, ...]]:
    """The rows and layout a stateful query's operator reads, and the order path at which
    an input's event reaches the query: :func:`_through_heads`, or for a link of a chain
    the rows of the chain so far (``upstream``: :mod:`eddy.engine.operators.chain`)."""
    if choice.producer is None:
        return _through_heads(analyzed, analyzed.query(choice.query), source, layout)
    assert upstream is not None, f"{choice.query}: a link reads its chain (a bug in eddy)"
    rows, entry = upstream
    return link_rows(analyzed, analyzed.query(choice.producer), rows, entry)


def _through_heads(analyzed: AnalyzedApp, info: QueryInfo, source: DataFrame,
                   layout: InputLayout) -> tuple[DataFrame, InputLayout, tuple[int, ...]]:
    """The group's rows, layout and order path (``(1,)``), or for a query fed through its
    head (:mod:`eddy.plan.physical.heads`, as the planner placed it) the rows with the
    head's events as input (:func:`~eddy.engine.compile.native_queries.as_input`)."""
    fed = fed_stream(analyzed, info)
    if fed is None or fed.stream in dict(layout.streams):
        return source, layout, (1,)
    return as_input(analyzed, fed, source, layout)


Planned = TypeVar("Planned", FollowedByPlan, WindowJoinPlan, SequencePlan, CountingPlan)


def _planned(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
             layout: InputLayout,
             plan_of: Callable[[AnalyzedApp, list[QueryInfo], InputLayout], Planned | None],
             upstream: Upstream | None = None) -> tuple[Planned, DataFrame, InputLayout]:
    """The plan of a columnar operator (a followed-by's, join's or sequence's: they emit only
    on input events) for the planned query, over the rows it reads (:func:`_fed`), its
    outputs' order path starting where an input's event reaches it."""
    rows, read, start = _fed(analyzed, choice, source, layout, upstream)
    info = analyzed.query(choice.query)
    planned = plan_of(analyzed, [info], read)
    if planned is None:
        raise _disagree(choice)
    prefix = order_prefix(info, analyzed.place(info), start)
    return replace(planned, spec=replace(planned.spec, order_prefix=prefix)), rows, read


def _jvm_followed_by(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
                     layout: InputLayout, upstream: Upstream | None) -> DataFrame:
    """The query in eddy's Java followed-by (:mod:`eddy.engine.operators.followed_by.jvm`)."""
    pattern, source, layout = _planned(analyzed, choice, source, layout, plan_followed_by,
                                       upstream)
    return _in_jvm(choice, jvm_followed_by(analyzed, pattern, source, layout,
                                           buckets=_buckets(choice)))


def _jvm_absent(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
                layout: InputLayout, upstream: Upstream | None) -> DataFrame:
    """The query in eddy's Java absent operator (:mod:`eddy.engine.operators.absent.jvm`)."""
    pattern = plan_absent(analyzed, [analyzed.query(choice.query)], layout)
    if pattern is None:
        raise _disagree(choice)
    return _in_jvm(choice, jvm_absent(analyzed, pattern, source, layout))


def _in_jvm(choice: QueryChoice, frame: DataFrame | None) -> DataFrame:
    if frame is None:
        raise RuntimeError(f"{choice.query}: planned onto {choice.operator} (eddy's Java "
                           "operator), which this Spark session does not have on its class "
                           "path")
    return frame


def _followed_by(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
                 layout: InputLayout) -> OperatorPart:
    pattern, source, layout = _planned(analyzed, choice, source, layout, plan_followed_by)
    return followed_by_part(analyzed, pattern, source, layout, buckets=_buckets(choice))


def _window_join(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
                 layout: InputLayout) -> OperatorPart:
    join, source, layout = _planned(analyzed, choice, source, layout, plan_window_join)
    return window_join_part(analyzed, join, source, layout)


def _sequence(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
              layout: InputLayout) -> OperatorPart:
    sequence, source, layout = _planned(analyzed, choice, source, layout, plan_sequence)
    return sequence_part(analyzed, sequence, source, layout, buckets=_buckets(choice))


def _counting(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
              layout: InputLayout) -> OperatorPart:
    counting, source, layout = _planned(analyzed, choice, source, layout, plan_counting)
    return counting_part(analyzed, counting, source, layout, buckets=_buckets(choice))


def _logical(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
             layout: InputLayout) -> OperatorPart:
    logical, source, layout = _planned(analyzed, choice, source, layout, plan_logical)
    return logical_part(analyzed, logical, source, layout, buckets=_buckets(choice))


def _cycle(analyzed: AnalyzedApp, choice: QueryChoice, source: DataFrame,
           layout: InputLayout) -> OperatorPart:
    cycle, source, layout = _planned(analyzed, choice, source, layout, plan_cycle)
    return cycle_part(analyzed, cycle, source, layout, buckets=_buckets(choice))


_JVM: dict[Operator, Callable[[AnalyzedApp, QueryChoice, DataFrame, InputLayout,
                               Upstream | None], DataFrame]] = {
    "jvm-window-aggregate": _jvm_window_aggregate, "jvm-followed-by": _jvm_followed_by,
    "jvm-absent": _jvm_absent}
"""eddy's Java operators, each a stateful operator of its own (a link of a chain reads the
rows of the links before it: :mod:`eddy.engine.operators.chain`)."""
_VECTORISED = {"window-aggregate": _window_aggregate, "followed-by": _followed_by,
               "window-join": _window_join, "sequence": _sequence, "counting": _counting,
               "cycle": _cycle, "logical": _logical}


def _runtime_part(app_text: str, analyzed: AnalyzedApp, plan: GroupPhysicalPlan,
                  source: DataFrame, layout: InputLayout) -> OperatorPart:
    """The runtime operator (per-event, or the aggregation step) with its planned key."""
    assert plan.runtime is not None
    ids = plan.ids("runtime", "aggregation-step")
    streams = {n for q in analyzed.queries if q.id in ids for n in q.inputs} | \
        aggregation_inputs(analyzed) | {STORE_STREAM, TICK_STREAM}
    vectorised = plan.runtime.operator == "aggregation-step"
    step = make_aggregation_step(app_text, layout) if vectorised \
        else make_step(app_text, list(ids), layout)
    key: Column
    if vectorised and plan.runtime.key.kind == "buckets":  # split by group (rule 11.1)
        split = aggregation_split(plan.runtime.key, source, layout)
        source, streams, key = split.source, split.streams, split.key
    else:
        key = state_key(plan.runtime.key, source, layout)
    ticks = plan.runtime.key.kind == "one" and bool(ids)
    queries = [q for q in analyzed.queries if q.id in ids]
    rows = runtime_rows(analyzed, queries, source, layout, streams, ticks=ticks) \
        .withColumn(KEY, key)
    return OperatorPart(rows, step, OUTPUT_COLUMNS, False, output_columns)


def stateless_group(analyzed: AnalyzedApp, layout: InputLayout) -> bool:
    """Whether every query of the group compiles to Spark SQL
    (:mod:`eddy.engine.compile.native_queries`) and the group keeps no state: what Spark's
    real-time mode can run."""
    plan = physical_plan(analyzed, layout, clock=False)
    return (len(plan.ids("spark-sql")) == len(analyzed.queries)
            and not any(s.kind in ("table", "window", "aggregation")
                        for s in analyzed.streams.values())
            and not aggregation_inputs(analyzed))
