"""The rows the per-event runtime operator reads, decided in the JVM.

Every row that reaches the runtime crosses into Python and becomes a Python event, so the
JVM narrows them first: only the columns of the streams the runtime's queries read, the
stream as its position in the layout (a string ``_stream`` costs a Python string per row),
and — when every runtime query reading a stream starts with filters on it that compile to
Spark SQL — only that stream's rows passing one of those filters (the runtime evaluates them
again, so the outputs do not change; an event that fails them would have stopped at them).

A row the runtime does not get as an event still moves its clock, as every event of the
app moves the reference's (a time window expires, a ``within`` runs out, on a later event
of any stream): while the runtime runs on one key, such a row enters as a heartbeat
(:data:`~eddy.engine.spark.row_layout.TICK_STREAM`, no columns), which fires the timers due by
then. A runtime split by key keeps no shared clock (the planner splits only runtimes free of
timers): it gets only its rows.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.compile.expressions import UnsupportedInSpark
from eddy.engine.compile.native_queries import spark_compiler
from eddy.engine.operators.state_keys import hash_bucket
from eddy.engine.spark.row_layout import SEQ, STREAM, TICK_STREAM, TS, InputLayout
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical import StateKey


def runtime_rows(analyzed: AnalyzedApp, queries: Iterable[QueryInfo], source: DataFrame,
                 layout: InputLayout, streams: set[str], *, ticks: bool) -> DataFrame:
    """The runtime's rows of ``source``: events of ``streams`` (the runtime's queries read
    ``queries``), and with ``ticks`` every other row as a heartbeat."""
    names = [name for name, _ in layout.streams]
    position = F.array_position(F.array(*(F.lit(n) for n in names)), F.col(STREAM)) - 1
    read: Column = F.col(STREAM).isin(sorted(streams))
    for stream, condition in pushed_filters(analyzed, list(queries), layout, streams).items():
        read = read & ((F.col(STREAM) != stream) | F.coalesce(condition, F.lit(False)))
    code = F.when(read, position).otherwise(F.lit(names.index(TICK_STREAM))) if ticks \
        else position
    columns = [c for name in names if name in streams for c in layout.columns(name)]
    rows = source if ticks else source.where(read)
    return rows.select(SEQ, TS, code.cast("int").alias(STREAM), *columns)


def pushed_filters(analyzed: AnalyzedApp, queries: list[QueryInfo], layout: InputLayout,
                   streams: set[str]) -> dict[str, Column]:
    """Per stream whose every reader among ``queries`` starts with filters on it (and which
    nothing else of the runtime reads: an aggregation, a named window, a table), the Spark
    condition one of those readers' filters passes."""
    readers: dict[str, list[QueryInfo]] = {}
    for info in queries:
        for name in info.inputs:
            readers.setdefault(name, []).append(info)
    others = {s.definition.input.stream for s in analyzed.streams.values()
              if isinstance(s.definition, ast.AggregationDefinition)
              and s.definition.input is not None}
    pushed: dict[str, Column] = {}
    for stream, infos in readers.items():
        if stream not in streams or stream in others or stream not in dict(layout.streams):
            continue
        conditions = [_leading_filters(analyzed, info, stream, layout) for info in infos]
        if conditions and all(c is not None for c in conditions):
            pushed[stream] = F.lit(False)
            for condition in conditions:
                assert condition is not None
                pushed[stream] = pushed[stream] | F.coalesce(condition, F.lit(False))
    return pushed


def _leading_filters(analyzed: AnalyzedApp, info: QueryInfo, stream: str,
                     layout: InputLayout) -> Column | None:
    """The Spark condition of the filters ``info`` starts with on ``stream``, or None when it
    has none, reads the stream otherwise, or one does not compile to Spark SQL."""
    source = info.query.input
    if not (info.partition is None and isinstance(source, ast.SingleInputStream)
            and source.stream == stream and not source.inner and not source.fault):
        return None
    filters = []
    for handler in source.handlers:
        if not isinstance(handler, ast.Filter):
            break
        filters.append(handler.expression)
    if not filters:
        return None
    names = [a.name for a in layout.attributes(stream)]
    columns = layout.columns(stream)

    def column(var: ast.Variable) -> Column:
        return F.col(columns[names.index(info.scope.resolve(var).attribute.name)])

    compiler = spark_compiler(analyzed, column)
    condition: Column = F.lit(True)
    try:
        for expression in filters:
            condition = condition & compiler.compile_condition(expression)
    except (UnsupportedInSpark, ValueError, KeyError):
        return None
    return condition


def state_key(key: StateKey, source: DataFrame, layout: InputLayout) -> Column:
    """The runtime's state key: one, or a hash bucket of the partition value (rule 11.2),
    so that the work spreads over the cores."""
    if key.kind != "buckets":
        return F.lit(0)
    values = []
    for stream, attribute in key.attributes:
        names = [a.name for a in layout.attributes(stream)]
        values.append(F.col(layout.columns(stream)[names.index(attribute)]).cast("string"))
    return hash_bucket([F.coalesce(*values)], key.buckets, source.sparkSession)
