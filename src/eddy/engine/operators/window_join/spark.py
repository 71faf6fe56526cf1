"""The Spark side of the window join: its rows and the ``applyInPandasWithState`` function
around :func:`.matching.process`.

The windows are global (as in the reference), so the operator keeps one state key; the
rows it reads are narrowed to the two streams and the columns it uses, and the filters
before each window are evaluated in the JVM. With two length windows only the events that
pass them are read; a time window also needs every row that moves the clock — the events
that fail their filter and live mode's heartbeats — marked as such.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eddy.engine.operators.columnar_operator import (
    attribute_column,
    columnar_part,
    filter_condition,
    filters_compile,
)
from eddy.engine.operators.operator_part import KEY, OperatorPart, run_alone
from eddy.engine.operators.window_join.matching import PASSES, SIDE, TICK, Windows, process
from eddy.engine.operators.window_join.plan import WindowJoinPlan
from eddy.engine.spark.row_layout import SEQ, STREAM, TICK_STREAM, TS, InputLayout
from eddy.lang.semantic import AnalyzedApp


def compile_window_join(analyzed: AnalyzedApp, plan: WindowJoinPlan, source: DataFrame,
                        layout: InputLayout) -> DataFrame:
    """The join's outputs in the writer's schema."""
    return run_alone(window_join_part(analyzed, plan, source, layout))


def window_join_part(analyzed: AnalyzedApp, plan: WindowJoinPlan, source: DataFrame,
                     layout: InputLayout) -> OperatorPart:
    """The operator of :func:`compile_window_join`, to run alone or fused."""
    spec = plan.spec
    left, right = plan.streams
    passes = [filter_condition(analyzed, plan.info, side, stream, plan.filters[side], layout)
              for side, stream in enumerate(plan.streams)]
    columns = [attribute_column(layout, stream, name).alias(column)
               for column, (stream, name) in plan.attributes.items()]
    if all(kind == "length" for kind, _ in spec.windows):
        rows = (source.where(((F.col(STREAM) == left) & passes[0])
                             | ((F.col(STREAM) == right) & passes[1]))
                .select(SEQ, TS, (F.col(STREAM) == right).cast("int").alias(SIDE), *columns))
    else:
        clock = [TICK_STREAM] if TICK_STREAM in dict(layout.streams) else []
        side = F.when(F.col(STREAM) == left, 0).when(F.col(STREAM) == right, 1) \
            .otherwise(TICK)
        entering = F.when(F.col(STREAM) == left, passes[0]) \
            .when(F.col(STREAM) == right, passes[1])
        rows = (source.where(F.col(STREAM).isin(left, right, *clock))
                .select(SEQ, TS, side.alias(SIDE),
                        F.coalesce(entering, F.lit(False)).alias(PASSES), *columns))
    return columnar_part(rows.withColumn(KEY, F.lit(0)), process, spec, Windows, plan.info,
                         [(o.name, o.type) for o in spec.selected], spec.order_prefix)


def join_compiles_in_spark(analyzed: AnalyzedApp, plan: WindowJoinPlan) -> bool:
    """Whether the filters before the windows compile to Spark SQL."""
    return filters_compile(analyzed, (*plan.filters[0], *plan.filters[1]))
