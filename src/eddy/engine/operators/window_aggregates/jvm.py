"""Window aggregates in the JVM: the rows never cross into Python.

Measured beside hand-written jobs (``bench/RESULTS.md``, issue 16), the vectorised NumPy
kernel was as fast as hand-written PySpark and both were bound by the crossing into a
Python worker (Arrow out of the JVM and back), not by the kernel: the same window written
as a Java ``flatMapGroupsWithState`` ran 3× faster. So the shapes those kernels run on one
state key — ``#window.time(t)``, ``#window.length(n)`` and ``#window.timeBatch(t)`` with
``avg``/``sum``/``count()`` per group, filters in front, current, expired or all events out
(the seed app's query-1) — and what no NumPy kernel keeps (the other aggregates, ``sum``
of ints, ``having``, ``order by``, the ``timeLength``, ``externalTime``, ``sort`` and
``lengthBatch`` windows, queries without a window, a value partition's queries) run in
eddy's own Java operator
(``engine/spark/jvm/src/eddy/ops/WindowAggregate.java``, compiled with eddy's other JVM
classes by :mod:`eddy.engine.spark.jvm_classes`), which follows the runtime step by step as
:mod:`.sliding_time`, :mod:`.expiring` and :mod:`.time_batch` do. Its outputs go through
the same writer columns as the Python operator's, so nothing downstream can tell them
apart. It also keeps a query's ``output ... every N events|<time>`` rate limit (the
operator's ``RateLimit``), whose releases go out as emissions (``_i``, ``_x``, ``_timer``;
``_r``: the limit's own timer flushed them).

It is used when the session has eddy's JVM classes on its class path (a machine with a JDK);
otherwise, and for every other window shape, the Python operator runs (and a query with
``max``/``min``, an int ``sum`` or ``having`` is planned onto the per-event runtime: the
planner's facts ask whether the classes are built).
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, LongType, StructField, StructType

from eddy.engine.operators.chain import carried, carried_output, or_carried
from eddy.engine.operators.columnar_expressions import EXPIRED, POSITION
from eddy.engine.operators.java_expressions import expression_json
from eddy.engine.operators.operator_part import writer_frame
from eddy.engine.operators.state_keys import hash_bucket
from eddy.engine.operators.window_aggregates.plan import runs_in_jvm
from eddy.engine.operators.window_aggregates.spec import Ordering, Output, Rate, WindowPlan
from eddy.engine.operators.window_aggregates.spark import (
    EVENT,
    FIRING,
    LIMITER,
    PASS,
    TIMER,
    operator_rows,
    output_writer,
)
from eddy.engine.spark.jvm_classes import java_schema, jvm_class
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout, spark_type
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp

OPERATOR = "eddy.ops.WindowAggregate"
_KINDS = {"sum": "s", "avg": "a", "max": "M", "min": "m", "maxForever": "F",
          "minForever": "f", "stdDev": "d", "and": "&", "or": "|"}


def jvm_window_aggregate(analyzed: AnalyzedApp, plan: WindowPlan, source: DataFrame,
                         layout: InputLayout, *, buckets: int = 0) -> DataFrame | None:
    """The query's outputs in the writer's schema from the Java operator, or None when it
    does not take the query or the session lacks eddy's JVM classes. ``buckets``: the
    planned hash buckets of a partitioned query's partition values (else one key)."""
    operator = jvm_class(source.sparkSession, OPERATOR) if runs_in_jvm(plan) else None
    if operator is None:
        return None
    spec = plan.spec
    source, key, value = _partitioned(plan, source, buckets)
    rows = operator_rows(analyzed, plan, source, layout,
                         extra=[*([value.alias("_partition")] if value is not None else []),
                                *(F.col(name) for name in carried(source))])
    plain = spec.plain_columns
    types = dict(zip(layout.columns(plan.stream),
                     (a.type for a in layout.attributes(plan.stream))))
    types.update((name, kind) for name, kind, _ in plan.derived)
    integral = "".join("l" if types[c] in (AttrType.INT, AttrType.LONG) else "d"
                       for c in spec.argument_columns)
    laid_out = rows.select(
        SEQ, TS, EVENT, PASS, key.cast("int").alias("_key"),
        *(F.col(c).alias(f"g{i}") for i, c in enumerate(spec.group_columns)),
        *(F.col(c).cast("long" if kind == "l" else "double").alias(f"a{i}")
          for i, (c, kind) in enumerate(zip(spec.argument_columns, integral))),
        *(F.col(c).alias(f"v{i}") for i, c in enumerate(plain)),
        *([F.col(spec.clock_column).alias("_clock_attribute")] if spec.clock_column else []),
        *([F.col(spec.batch_start).alias("_start_attribute")]
          if isinstance(spec.batch_start, str) else []),
        *([F.coalesce(F.col(spec.session_key), F.lit("None")).alias("_session_key")]
          if spec.session_key else []),  # (a null key: the runtime's ``str(None)``)
        *(["_partition"] if value is not None else []), *carried(source))
    # one current event per passing input, or emissions (chunks: expired events, a batch,
    # a delay's releases, a rate limit's)
    one_per_input = spec.one_per_input
    firing = not one_per_input and spec.window in ("timeBatch", "session")
    emission = [] if one_per_input else [
        StructField(POSITION, IntegerType()), StructField(EXPIRED, BooleanType()),
        StructField(TIMER, BooleanType()),
        *([StructField(FIRING, IntegerType())] if firing else []),
        *([StructField(LIMITER, BooleanType())] if spec.rate and spec.rate.scheduled else [])]
    output = StructType([StructField(SEQ, LongType()), StructField(TS, LongType())] +
                        emission + [StructField(f"o{i}", spark_type(out.type))
                                    for i, out in enumerate(spec.outputs)] +
                        carried_output(source))
    spark = source.sparkSession
    having = "" if spec.having is None else json.dumps(
        expression_json(spec.having, lambda column: (0, int(column[1:]))))
    computed = operator.apply(laid_out._jdf, spec.window, spec.events, spec.span, spec.size,
                              len(spec.group_columns), integral,
                              ",".join(_kind(out, plain) for out in spec.outputs), having,
                              _ordering_json(spec.ordering),
                              ",".join(f"{plain.index(column)}{'a' if ascending else 'd'}"
                                       for column, ascending in spec.sort_keys),
                              _batch_start(spec.batch_start), value is not None,
                              _rate(spec.rate), spec.session_key is not None,
                              java_schema(spark, output))
    writer = output_writer(plan, one_per_input=one_per_input, firing=firing)
    return writer_frame(DataFrame(computed, spark), writer(F.col))


def _partitioned(plan: WindowPlan, source: DataFrame, buckets: int
                 ) -> tuple[DataFrame, Column, Column | None]:
    """The rows, state key and partition value (null: a row that only moves the clock) of a
    partitioned query; the source, one key and no value for any other."""
    partition = plan.spec.partition_column
    if partition is None:
        return source, F.lit(0), None
    if plan.spec.shared_clock:  # every row, on one key
        assert buckets == 0, "a partitioned time window's clock is the group's: one key"
        return source, F.lit(0), F.when(F.col(STREAM) == plan.stream, F.col(partition))
    # only its stream's rows with a value (the others go nowhere), in buckets of the value
    # (read from the operator's rows, which keep it as ``_partition``: a fed inner stream's
    # key is a column of the head's input, which they do not keep)
    assert buckets > 0, "a partitioned query's state is bucketed by its partition value"
    rows = source.where(or_carried((F.col(STREAM) == plan.stream) &
                                   F.col(partition).isNotNull(), source))
    return rows, hash_bucket([F.col("_partition")], buckets, source.sparkSession), \
        F.col(partition)


def _batch_start(start: int | str | None) -> str:
    """The Java operator's ``BatchGrid`` start: none, a constant or the start column."""
    return "" if start is None else "a" if isinstance(start, str) else f"c{start}"


def _rate(rate: Rate | None) -> str:
    """The Java operator's ``RateLimit`` spec, or empty for none."""
    return "" if rate is None else f"{rate.type}:{rate.unit}:{rate.value}"


def _ordering_json(ordering: Ordering) -> str:
    """The Java operator's ``Ordering`` spec, or empty for none."""
    if ordering == Ordering():
        return ""
    return json.dumps({"keys": [list(key) for key in ordering.keys], "limit": ordering.limit,
                       "offset": ordering.offset})


def _kind(output: Output, plain: list[str]) -> str:
    """The Java operator's name for one selected attribute (see its class comment)."""
    if output.kind in ("var", "distinctCount"):
        assert output.column is not None
        return f"{'v' if output.kind == 'var' else 'u'}{plain.index(output.column)}"
    if output.kind == "count":
        return "c"
    if output.kind == "sum" and output.type is AttrType.LONG:
        return f"l{output.argument}"
    return f"{_KINDS[output.kind]}{output.argument}"
