"""The Spark side of the vectorised window operators: the plan around them and the
``applyInPandasWithState`` function that hosts them.

One state key, like the runtime's, unless the query is a ``#window.time`` with ``group by``,
current events only and no filter and the source supplies the stream's running clock
(:data:`~eddy.engine.spark.row_layout.CLOCK`): then the state is split into the planner's hash
buckets of the group key, spread over the shuffle partitions (so over the cores), and each
bucket expires by the clock its rows carry (:mod:`.sliding_time` says why that is exact).
A batch window stays on one key: a group's place in a flush depends on the other groups.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.compile.native_queries import spark_compiler
from eddy.engine.operators.columnar_expressions import EXPIRED, POSITION
from eddy.engine.operators.operator_part import (
    KEY,
    OperatorPart,
    Writer,
    WriterColumns,
    head_columns,
    order_prefix,
    run_alone,
    value_columns,
)
from eddy.engine.operators.state_keys import hash_bucket
from eddy.engine.operators.window_aggregates import expiring, sliding_time, time_batch
from eddy.engine.operators.window_aggregates.emitted import Emitted
from eddy.engine.operators.window_aggregates.spec import Output, WindowPlan, WindowSpec
from eddy.engine.spark.row_layout import (
    CLOCK,
    SEQ,
    STORE_STREAM,
    STREAM,
    TS,
    InputLayout,
    spark_type,
)
from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.query_builder import UnsupportedQuery

EVENT = "_event"  # the row is not an on-demand query
PASS = "_pass"    # the row is an event of the query's stream that passes the filters
TIMER = "_timer"  # the window's timer emitted it
FIRING = "_n"  # which of the timers due at its row emitted it (eddy's Java timeBatch)
LIMITER = "_r"  # the rate limit's own timer released it (eddy's Java operator)
_NULLABLE_INTS = {AttrType.INT: "Int32", AttrType.LONG: "Int64"}


def compile_window_aggregate(analyzed: AnalyzedApp, plan: WindowPlan, source: DataFrame,
                             layout: InputLayout, *, buckets: int = 0) -> DataFrame:
    """The query's outputs in the writer's schema
    (:data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`); ``buckets`` > 0: split into that many
    hash buckets of the ``group by`` values, as the physical planner decides
    (:mod:`eddy.plan.physical.rules.window_aggregate`)."""
    return run_alone(window_aggregate_part(analyzed, plan, source, layout, buckets=buckets))


def window_aggregate_part(analyzed: AnalyzedApp, plan: WindowPlan, source: DataFrame,
                          layout: InputLayout, *, buckets: int = 0) -> OperatorPart:
    """The operator of :func:`compile_window_aggregate`, to run alone or fused."""
    split = buckets > 0
    spec = plan.spec
    rows = operator_rows(analyzed, plan, source, layout, split=split)
    key = hash_bucket([F.col(c) for c in spec.group_columns], buckets, source.sparkSession) \
        if split else F.lit(0)
    schema = [(SEQ, "bigint"), (TS, "bigint")] + \
        ([(POSITION, "int")] if spec.window == "timeBatch" or spec.expiring else []) + \
        ([(EXPIRED, "boolean"), (TIMER, "boolean")] if spec.expiring else []) + \
        [(f"o{i}", spark_type(out.type).simpleString()) for i, out in enumerate(spec.outputs)]
    return OperatorPart(rows.withColumn(KEY, key), make_step(spec, split), tuple(schema),
                        False, output_writer(plan))


def operator_rows(analyzed: AnalyzedApp, plan: WindowPlan, source: DataFrame,
                  layout: InputLayout, *, split: bool = False,
                  extra: Sequence[Column] = ()) -> DataFrame:
    """The rows an operator of ``plan`` reads: ``_seq``, ``_ts``, ``_event`` (not an
    on-demand query: always, since those are left out), ``_pass`` (an event of the query's
    stream that passes its filters, evaluated here in the JVM), then the group, argument and
    selected columns (those ``plan.derived`` computed here; and, split, the stream's clock;
    then ``extra``, over the source's columns)."""
    spec, info = plan.spec, plan.info
    names = [a.name for a in layout.attributes(plan.stream)]
    columns = layout.columns(plan.stream)

    def column(var: ast.Variable) -> Column:
        return F.col(columns[names.index(info.scope.resolve(var).attribute.name)])

    passes: Column = F.col(STREAM) == plan.stream
    compiler = spark_compiler(analyzed, column)
    for condition in plan.filters:
        passes = passes & F.coalesce(compiler.compile_condition(condition), F.lit(False))
    # Every row of the group moves the clock (a batch window flushes on a later event of
    # any stream, as the reference's timers fire on it; a heartbeat likewise), but not a
    # split operator's, which goes by its rows' stream clock. An on-demand query reads only
    # the tables, named windows and aggregations the runtime keeps, and moves no clock: its
    # row is the runtime's alone.
    rows = source.where(F.col(STREAM) == plan.stream) if split else \
        source.where(F.col(STREAM) != STORE_STREAM)
    derived = {name: expr for name, _, expr in plan.derived}
    needed = [F.when(F.col(STREAM) == plan.stream, compiler.compile(derived[c])).alias(c)
              if c in derived else F.col(c) for c in needed_columns(spec)]
    return rows.select(SEQ, TS, (F.col(STREAM) != STORE_STREAM).alias(EVENT),
                       F.coalesce(passes, F.lit(False)).alias(PASS), *needed,
                       *([CLOCK] if split else []), *extra)


def needed_columns(spec: WindowSpec) -> list[str]:
    """The input columns an operator of ``spec`` reads besides the row's own fields."""
    return sorted({*spec.group_columns, *spec.argument_columns, *spec.plain_columns,
                   *([spec.clock_column] if spec.clock_column else []),
                   *([spec.batch_start] if isinstance(spec.batch_start, str) else []),
                   *([spec.session_key] if spec.session_key else [])})


def output_writer(plan: WindowPlan, *, one_per_input: bool = False,
                  firing: bool = False) -> Writer:
    """The writer's columns of one output of ``plan``'s operator (``_seq``, ``_ts``,
    (``_i``,) (``_x``, ``_timer``,) (``_n``,) ``o<i>``): its ``_order`` and the selected
    values as the value columns the writer routes. ``one_per_input``: the operator emits one
    current event per passing input and nothing else (``_seq``, ``_ts``, ``o<i>``: eddy's
    Java operator); ``firing``: a timer's outputs say which of the timers due at their row
    emitted them (the third place of the reference's timer path; else the first). A rate
    limit flushed by its own timer (``_r``) emits on its scheduler, not the window's."""
    spec, info = plan.spec, plan.info
    expiring = spec.expiring and not one_per_input

    def writer(col: Callable[[str], Column]) -> WriterColumns:
        values = [(col(f"o{i}"), Attribute(out.name, out.type))
                  for i, out in enumerate(spec.outputs)]
        by_input = F.array(*(F.lit(i) for i in order_prefix(info, spec.place, plan.entry)),
                           col(POSITION) if expiring else F.lit(0))
        scheduler: Column = F.lit(spec.scheduler)
        if spec.rate is not None and spec.rate.scheduled:
            scheduler = F.when(col(LIMITER), F.lit(spec.rate.scheduler)).otherwise(scheduler)
        by_timer = F.array(F.lit(0), scheduler,
                           col(FIRING) if firing else F.lit(0), F.lit(0), F.lit(0),
                           col(POSITION) if expiring or not one_per_input else F.lit(0))
        expired: Column = F.lit(False)
        if expiring:  # an input's chunk, or the window's timer
            order = F.when(col(TIMER), by_timer).otherwise(by_input)
            expired = col(EXPIRED)
        elif spec.window == "time" or one_per_input:
            order = by_input
        else:
            order = by_timer
        return {**head_columns(col(SEQ), order, col(TS), info.id, info.target, expired),
                **value_columns(values)}

    return writer


StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]


def make_step(spec: WindowSpec, split: bool = False) -> StepFunction:
    """The ``applyInPandasWithState`` function: one call per state key and micro-batch
    (``split``: the rows carry the stream's clock)."""
    module: Any = expiring if spec.expiring else \
        sliding_time if spec.window == "time" else time_batch
    fresh: Any = expiring.ExpiringState if spec.expiring else \
        sliding_time.SlidingState if spec.window == "time" else time_batch.BatchState
    selected = spec.plain_columns

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        pdf = pd.concat(list(frames), ignore_index=True)
        seq = pdf[SEQ].to_numpy()
        if len(seq) > 1 and not (seq[1:] > seq[:-1]).all():
            pdf = pdf.iloc[np.argsort(seq, kind="stable")].reset_index(drop=True)
        if not pdf[EVENT].all():
            raise UnsupportedQuery("<store query>", "on-demand queries need tables, which "
                                   "this runtime does not run yet")
        window = pickle.loads(state.get[0]) if state.exists else fresh()
        values = np.stack([pdf[c].to_numpy(np.float64, na_value=np.nan)
                           for c in spec.argument_columns], axis=1) \
            if spec.argument_columns else np.empty((len(pdf), 0))
        ts, passing = pdf[TS].to_numpy(np.int64), pdf[PASS].to_numpy(bool)
        keys = [pdf[c].to_numpy() for c in spec.group_columns]
        columns = {c: pdf[c].to_numpy() for c in selected}
        if split:
            assert isinstance(window, sliding_time.SlidingState)
            emitted = sliding_time.process(window, spec, ts, passing, keys, values, columns,
                                           clock=pdf[CLOCK].to_numpy(np.int64))
        else:
            emitted = module.process(window, spec, ts, passing, keys, values, columns)
        state.update((pickle.dumps(window, protocol=pickle.HIGHEST_PROTOCOL),))
        yield output_frame(spec, emitted, pdf[SEQ].to_numpy())

    return step


def output_frame(spec: WindowSpec, emitted: Emitted, seq: np.ndarray) -> pd.DataFrame:
    """The operator's output rows: ``_seq``, ``_ts``, (``_i``, the position in a batch
    window's flush or in a chunk's emission,) (``_x``, ``_timer`` when expired events go
    out,) then ``o<i>`` per selected attribute."""
    frame: dict[str, Any] = {SEQ: seq[emitted.rows], TS: emitted.ts}
    if spec.window == "timeBatch" or spec.expiring:
        frame[POSITION] = emitted.positions.astype(np.int32)
    if spec.expiring:
        assert emitted.expired is not None and emitted.timer is not None
        frame[EXPIRED], frame[TIMER] = emitted.expired, emitted.timer
    frame.update(output_columns(spec.outputs, emitted))
    return pd.DataFrame(frame)


def output_columns(outputs: Sequence[Output], emitted: Emitted) -> dict[str, Any]:
    """The selected attributes' columns; aggregates as the runtime computes them
    (``sum / count`` for ``avg``, null while nothing is counted).

    A double aggregate is a masked array: Spark turns a plain column's NaN into null on the
    way out, and NaN (``inf - inf``) is a value the runtime emits."""
    columns: dict[str, Any] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, out in enumerate(outputs):
            if out.kind == "var":
                assert out.column is not None
                values = pd.Series(emitted.values[out.column])
                nullable = _NULLABLE_INTS.get(out.type)
                if nullable is not None and values.dtype.kind == "f":
                    values = values.astype(nullable)  # nulls made the ints floats
                columns[f"o{i}"] = values
            elif out.kind == "count":
                columns[f"o{i}"] = emitted.sizes
            else:
                total = emitted.sums[:, out.argument]
                count = emitted.counts[:, out.argument]
                value = total / count if out.kind == "avg" else total
                columns[f"o{i}"] = pd.arrays.FloatingArray(value.astype(np.float64), count == 0)
    return columns
