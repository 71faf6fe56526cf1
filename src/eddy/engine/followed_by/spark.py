"""The Spark side of the followed-by operator: the rows it reads, its state keys and the
``applyInPandasWithState`` function around :func:`.matching.process`.

The operator reads only the pattern's streams, narrowed to the columns it uses, with
``e1``'s filter and the conditions on ``e2`` alone already evaluated in the JVM. An
unpartitioned pattern is one instance — its expiry order couples every key — so it keeps
one state key, as the reference keeps one thread; a partitioned one is split into
:data:`BUCKETS` hash buckets of the partition key (a key's instance lives in one bucket),
so both cores work.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.expressions import UnsupportedInSpark
from eddy.engine.followed_by.matching import (
    FIRST_EVENT,
    KEY,
    PARTITION,
    POSITION,
    SECOND_EVENT,
    SECOND_PASSES,
    Pending,
    process,
)
from eddy.engine.followed_by.plan import FollowedByPlan, FollowedBySpec
from eddy.engine.layout import OUTPUT_SCHEMA, SEQ, STREAM, TS, InputLayout, spark_type
from eddy.engine.native import spark_compiler
from eddy.gcpause import gc_paused
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp

BUCKETS = 16
"""State keys of a partitioned pattern: fixed, since a checkpoint's state is keyed by them."""

StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]


def compile_followed_by(analyzed: AnalyzedApp, plan: FollowedByPlan, source: DataFrame,
                        layout: InputLayout) -> DataFrame:
    """The query's outputs in the writer's schema (:data:`~eddy.engine.layout.OUTPUT_SCHEMA`)."""
    spec, info = plan.spec, plan.info
    first, second = _conditions(analyzed, plan, layout)
    is_first = F.col(STREAM) == plan.first
    is_second = F.col(STREAM) == plan.second
    columns = [_attribute(layout, stream, name).alias(column)
               for column, (stream, name) in plan.attributes.items()]
    rows = source.where(F.col(STREAM).isin(plan.first, plan.second))
    if spec.partitioned:
        key = F.coalesce(*(F.when(F.col(STREAM) == stream,
                                  _attribute(layout, stream, name).cast("string"))
                           for stream, name in plan.partition_attributes.items()))
        rows = rows.withColumn(PARTITION, key).where(F.col(PARTITION).isNotNull())
        columns.append(F.col(PARTITION))
    rows = rows.select(SEQ, TS, (is_first & first).alias(FIRST_EVENT),
                       is_second.alias(SECOND_EVENT), (is_second & second).alias(SECOND_PASSES),
                       *columns)
    state_key = F.pmod(F.hash(F.col(PARTITION)), F.lit(BUCKETS)) if spec.partitioned \
        else F.lit(0)
    schema = [f"{SEQ} long", f"{TS} long", f"{POSITION} int"] + \
        [f"o{i} {spark_type(out.type).simpleString()}" for i, out in enumerate(spec.selected)]
    computed = (rows.withColumn(KEY, state_key).groupBy(KEY)
                .applyInPandasWithState(make_step(spec), ", ".join(schema), "state binary",
                                        "append", GroupStateTimeout.NoTimeout))
    order = F.array(*(F.lit(i) for i in spec.order_prefix), F.col(POSITION))
    values = [F.col(f"o{i}").alias(out.name) for i, out in enumerate(spec.selected)]
    result = computed.select(
        SEQ, order.alias("_order"), TS, F.lit(info.id).alias("_query"),
        F.lit(info.target).alias("_target"), F.lit(False).alias("_expired"),
        F.to_json(F.struct(*values), {"ignoreNullFields": "false"}).alias("_data"))
    return result.select(*(F.col(f.name).cast(f.dataType) for f in OUTPUT_SCHEMA.fields))


def compiles_in_spark(analyzed: AnalyzedApp, plan: FollowedByPlan) -> bool:
    """Whether the filters that run in the JVM compile there (else the runtime runs it)."""
    compiler = spark_compiler(analyzed, lambda var: F.col(f"`{var.attribute}`"))
    try:
        for expr in (*plan.first_filters, *plan.second_filters):
            compiler.compile_condition(expr)
    except UnsupportedInSpark:
        return False
    return True


def _conditions(analyzed: AnalyzedApp, plan: FollowedByPlan,
                layout: InputLayout) -> tuple[Column, Column]:
    """``e1``'s filter and the conditions on ``e2`` alone, as never-null Spark columns."""
    scope = plan.info.scope
    result = []
    for state, stream, filters in ((0, plan.first, plan.first_filters),
                                   (1, plan.second, plan.second_filters)):
        current = scope.with_current(scope.sources[state])

        def column(var: ast.Variable, current: Any = current, stream: str = stream) -> Column:
            return _attribute(layout, stream, current.resolve(var).attribute.name)

        compiler = spark_compiler(analyzed, column)
        condition: Column = F.lit(True)
        for expr in filters:
            condition = condition & compiler.compile_condition(expr)
        result.append(condition)
    return result[0], result[1]


def _attribute(layout: InputLayout, stream: str, name: str) -> Column:
    names = [a.name for a in layout.attributes(stream)]
    return F.col(layout.columns(stream)[names.index(name)])


def make_step(spec: FollowedBySpec) -> StepFunction:
    """The ``applyInPandasWithState`` function: one call per state key and micro-batch."""

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        parts = [frame for frame in frames if not frame.empty]
        pending = pickle.loads(state.get[0]) if state.exists else Pending()
        if not parts:
            return
        with gc_paused():
            frame = pd.concat(parts, ignore_index=True)
            seq = frame[SEQ].to_numpy()
            if len(seq) > 1 and not (seq[1:] > seq[:-1]).all():
                frame = frame.iloc[np.argsort(seq, kind="stable")].reset_index(drop=True)
            outputs, pending = process(spec, pending, frame)
            state.update((pickle.dumps(pending, protocol=pickle.HIGHEST_PROTOCOL),))
        yield outputs

    return step
