"""``every e1=S1[f] -> e2=S2[c] within t`` in the JVM: the rows never cross into Python.

The NumPy operator (:mod:`.matching`) is as fast as its kernel allows, but every row it
reads crosses from the JVM into a Python worker and its outputs cross back (the cost
``bench/RESULTS.md`` measured for the window aggregates, issue 16). eddy's own Java operator
(``engine/spark/jvm/src/eddy/ops/FollowedBy.java``, with the residual condition in
``Expression.java``) runs the same plan — the same rows (:func:`.spark.pattern_rows`), the
same state keys, the same equality keys and residual (a :class:`~eddy.engine.operators.
columnar_expressions.Node` tree, sent as JSON) — event by event in the reference's order,
its pending matches indexed by key. Its outputs go through the same writer columns as the
Python operator's.

Used when the session has eddy's JVM classes (a machine with a JDK): the planner's facts ask.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from eddy.engine.operators.chain import carried, carried_output
from eddy.engine.operators.columnar_expressions import POSITION, Node
from eddy.engine.operators.columnar_operator import partition_key, writer
from eddy.engine.operators.followed_by.matching import (
    FIRST_EVENT,
    PARTITION,
    SECOND_EVENT,
    SECOND_PASSES,
)
from eddy.engine.operators.followed_by.plan import FIRST, FollowedByPlan, FollowedBySpec
from eddy.engine.operators.followed_by.spark import pattern_rows
from eddy.engine.operators.java_expressions import expression_json
from eddy.engine.operators.operator_part import writer_frame
from eddy.engine.spark.jvm_classes import java_schema, jvm_class
from eddy.engine.spark.row_layout import SEQ, TS, InputLayout, spark_type
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp

OPERATOR = "eddy.ops.FollowedBy"
_COLUMNS_AT = 7
"""Where the operator's columns start in its input rows (see the Java class comment)."""


def jvm_followed_by(analyzed: AnalyzedApp, plan: FollowedByPlan, source: DataFrame,
                    layout: InputLayout, *, buckets: int) -> DataFrame | None:
    """The query's outputs in the writer's schema from the Java operator, or None when the
    session lacks eddy's JVM classes."""
    operator = jvm_class(source.sparkSession, OPERATOR)
    if operator is None:
        return None
    spec = plan.spec
    columns = [column for column, _ in spec.columns]
    physical = dict(spec.physical)
    rows = pattern_rows(analyzed, plan, source, layout)
    laid_out = rows.select(
        SEQ, TS, FIRST_EVENT, SECOND_EVENT, SECOND_PASSES,
        partition_key(spec.partitioned, PARTITION, source, buckets).cast("int").alias("_key"),
        F.col(PARTITION) if spec.partitioned else F.lit(0).cast("long").alias(PARTITION),
        *(F.col(physical[c]).alias(f"c{i}") for i, c in enumerate(columns)), *carried(source))
    output = StructType([StructField(SEQ, LongType()), StructField(TS, LongType()),
                         StructField(POSITION, IntegerType())] +
                        [StructField(f"o{i}", spark_type(o.type))
                         for i, o in enumerate(spec.selected)] +
                        carried_output(source))
    spark = source.sparkSession
    computed = operator.apply(laid_out._jdf, json.dumps(operator_spec(spec)),
                              java_schema(spark, output))
    selected = [(o.name, o.type) for o in spec.selected]
    return writer_frame(DataFrame(computed, spark),
                        writer(plan.info, selected, spec.order_prefix)(F.col))


def operator_spec(spec: FollowedBySpec) -> dict[str, Any]:
    """The Java operator's spec (its class comment): row positions of the columns, the
    first event's kept columns, the keys, the residual and the selection."""
    place, matching = matched_columns(spec.columns, spec.keys, spec.residual, _COLUMNS_AT)
    return {"within": spec.within, **matching,
            "selected": [list(place(o.column)) for o in spec.selected]}


def matched_columns(columns: Sequence[tuple[str, AttrType]], keys: Sequence[tuple[str, str]],
                    residual: Node | None, at: int
                    ) -> tuple[Callable[[str], tuple[int, int]], dict[str, Any]]:
    """Where a Java pattern operator (its columns from row position ``at``) reads an
    operator column — ``(0, index among the kept e1 values)`` or ``(1, row position)`` —
    and its spec's ``firsts`` (the row positions of e1's kept columns), ``keys`` and
    ``residual``."""
    position = {column: at + i for i, (column, _) in enumerate(columns)}
    firsts = [c for c in position if c.startswith(FIRST)]

    def place(column: str) -> tuple[int, int]:
        if column.startswith(FIRST):
            return 0, firsts.index(column)
        return 1, position[column]

    return place, {"firsts": [position[c] for c in firsts],
                   "keys": [[firsts.index(a), position[b]] for a, b in keys],
                   "residual": None if residual is None
                   else expression_json(residual, place)}

