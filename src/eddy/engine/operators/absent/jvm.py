"""``[every] e1=S1[f] -> not S2[c] for t`` in eddy's Java operator (``AbsentPattern.java``).

The operator reads every row of the group, not only the pattern's streams: the absent
state's timers fire on the group's clock, which any row moves (a heartbeat that stops is
noticed on the next event of any stream). ``f`` and the conjuncts of ``c`` on the ``S2``
event alone are evaluated here in Spark SQL; the rest of ``c`` (a JSON
:class:`~eddy.engine.operators.columnar_expressions.Node` tree) and the keys in the JVM. One
state key: the scheduler, and so the order in which timers send matches, is the query's (a
partition's too: its keys' timers fire in the order of one map of them).
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from eddy.engine.operators.absent.plan import EMITTED_AT, AbsentPlan, AbsentSpec
from eddy.engine.operators.columnar_expressions import POSITION
from eddy.engine.operators.columnar_operator import (
    attribute_column,
    filter_condition,
    partition_value,
    scoped_condition,
)
from eddy.engine.operators.followed_by.jvm import matched_columns
from eddy.engine.operators.operator_part import head_columns, value_columns, writer_frame
from eddy.engine.operators.window_aggregates.spark import FIRING
from eddy.engine.spark.jvm_classes import java_schema, jvm_class
from eddy.engine.spark.row_layout import SEQ, STORE_STREAM, STREAM, TS, InputLayout, spark_type
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp

OPERATOR = "eddy.ops.AbsentPattern"
_COLUMNS_AT = 7
ON_KEY = "_k"  # which of its key's timers sent an output (a partition's keyed scheduler)
"""Where the operator's columns start in its input rows (see the Java class comment)."""


def jvm_absent(analyzed: AnalyzedApp, plan: AbsentPlan, source: DataFrame,
               layout: InputLayout) -> DataFrame | None:
    """The query's outputs in the writer's schema from the Java operator, or None when the
    session lacks eddy's JVM classes."""
    operator = jvm_class(source.sparkSession, OPERATOR)
    if operator is None:
        return None
    spec, info = plan.spec, plan.info
    starts = (F.col(STREAM) == plan.first) & filter_condition(
        analyzed, info, 0, plan.first, plan.first_filters, layout)
    absent = F.col(STREAM) == plan.second
    physical = dict(spec.physical)
    laid_out = source.where(F.col(STREAM) != STORE_STREAM).select(
        SEQ, TS, starts.alias("_starts"), absent.alias("_absent"),
        (absent & F.coalesce(scoped_condition(analyzed, plan.second_scope, plan.second,
                                              plan.second_filters, layout),
                             F.lit(False))).alias("_absent_passes"),
        F.lit(0).alias("_key"),
        (partition_value(layout, plan.partition_attributes).cast("string")
         if spec.partitioned else F.lit(None).cast("string")).alias("_partition"),
        *(attribute_column(layout, *plan.attributes[physical[c]]).alias(f"c{i}")
          for i, (c, _) in enumerate(spec.columns)))
    output = StructType([StructField(SEQ, LongType()), StructField(TS, LongType()),
                         StructField(FIRING, IntegerType()),
                         StructField(ON_KEY, IntegerType()),
                         StructField(POSITION, IntegerType())] +
                        [StructField(f"o{i}", spark_type(o.type))
                         for i, o in enumerate(spec.selected)])
    spark = source.sparkSession
    computed = DataFrame(operator.apply(laid_out._jdf, json.dumps(operator_spec(spec)),
                                        java_schema(spark, output)), spark)
    # the runtime's path of a timer's emission (a keyed timer's: its place in its key's)
    order = F.array(F.lit(0), F.lit(spec.scheduler), F.col(FIRING),
                    *([F.col(ON_KEY)] if spec.partitioned else []), F.col(POSITION),
                    F.lit(0), F.lit(0))
    return writer_frame(computed, {
        **head_columns(F.col(SEQ), order, F.col(TS), info.id, info.target, F.lit(False)),
        **value_columns([(F.col(f"o{i}"), ast.Attribute(o.name, o.type))
                         for i, o in enumerate(spec.selected)])})


def operator_spec(spec: AbsentSpec) -> dict[str, Any]:
    """The Java operator's spec (its class comment)."""
    place, matching = matched_columns(spec.columns, spec.keys, spec.residual, _COLUMNS_AT)
    return {"waiting": spec.waiting, "every": spec.every, "partitioned": spec.partitioned,
            **matching,
            "selected": [[2, 0] if o.side == EMITTED_AT else list(place(o.column))
                         for o in spec.selected]}
