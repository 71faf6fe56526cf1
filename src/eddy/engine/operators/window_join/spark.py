"""The Spark side of the window join: its rows and the ``applyInPandasWithState`` function
around :func:`.matching.process`.

The windows are global (as in the reference), so the operator keeps one state key; the
rows it reads are narrowed to the columns it uses, and the filters before each window are
evaluated in the JVM. With two length windows into current events only the events that
pass them are read; a time window, or an expired event's time, also needs every row that
moves the group's clock — the events that fail their filter, the group's other streams and
live mode's heartbeats — marked as such. A self join reads each of its stream's rows twice,
once per side.
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
from eddy.engine.operators.window_join import aggregating
from eddy.engine.operators.window_join.matching import PASSES, SIDE, TICK, Windows, process
from eddy.engine.operators.window_join.plan import WindowJoinPlan
from eddy.engine.spark.row_layout import SEQ, STORE_STREAM, STREAM, TS, InputLayout
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
    stream = F.col(STREAM)
    if left == right:  # a self join: each event once per side, the left one first
        side = F.explode(F.when(stream == left, F.array(F.lit(0), F.lit(1)))
                         .otherwise(F.array(F.lit(TICK))))
    else:
        side = F.when(stream == left, 0).when(stream == right, 1).otherwise(TICK)
    rows = (source.where(stream.isin(left, right) if not spec.clocked
                         else stream != STORE_STREAM)
            .select(SEQ, TS, side.alias(SIDE), passes[0].alias("_p0"), passes[1].alias("_p1"),
                    *columns))
    entering = F.when(F.col(SIDE) == 0, F.col("_p0")).when(F.col(SIDE) == 1, F.col("_p1")) \
        .otherwise(F.lit(False))
    if not spec.clocked:  # length windows into current events: the passing events alone
        rows = rows.where(entering).drop("_p0", "_p1")
    else:  # every row moves the clock but an on-demand query's (the runtime's alone)
        rows = rows.withColumn(PASSES, entering).drop("_p0", "_p1")
    rows = rows.withColumn(KEY, F.lit(0))
    aggregation = spec.aggregation
    if aggregation is not None:  # aggregates over the joined events
        return columnar_part(rows, aggregating.process, spec, aggregating.Aggregated,
                             plan.info, [(o.name, o.type) for o in aggregation.outputs],
                             spec.order_prefix, expired=aggregation.events != "current")
    return columnar_part(rows, process, spec, Windows, plan.info,
                         [(o.name, o.type) for o in spec.selected], spec.order_prefix,
                         expired=spec.events != "current")


def join_compiles_in_spark(analyzed: AnalyzedApp, plan: WindowJoinPlan) -> bool:
    """Whether the filters before the windows compile to Spark SQL."""
    return filters_compile(analyzed, (*plan.filters[0], *plan.filters[1]))
