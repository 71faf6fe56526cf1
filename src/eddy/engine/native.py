"""Stateless queries compiled to Spark SQL, running in the JVM.

A query that only filters and projects one stream (no window, no aggregate, no rate limit,
no table) has nothing per-event that Spark lacks: it becomes ``where`` and ``select`` over
the group's input rows, and never crosses into Python. Chains of such queries are DataFrame
lineage. A query stays in the Python runtime when it needs state, when one of its
expressions cannot run in Spark, or when its input or output is shared with a query that
runs in the runtime (the runtime only sees the group's source rows).

Outputs carry the same ``_order`` path the runtime gives (``(1, index)`` for an input
reaching a query, ``+ (emission, 0, i)`` for an emitted event, ``+ (emission, 1, index)``
for a downstream subscriber), so native and runtime outputs merge into the reference order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.expressions import SparkExpressionCompiler, UnsupportedInSpark
from eddy.engine.layout import SEQ, STREAM, TS, InputLayout
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo

ORDER = "_order"


def _shape_is_stateless(info: QueryInfo) -> bool:
    query, selector = info.query, info.query.selector
    source = query.input
    return (info.partition is None
            and isinstance(source, ast.SingleInputStream)
            and not source.inner and not source.fault
            and all(isinstance(h, ast.Filter) for h in source.handlers)
            and not info.aggregates and not selector.group_by and selector.having is None
            and not selector.order_by and selector.limit is None and selector.offset is None
            and query.output_rate is None
            and isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind == "stream" and query.output.event_type != "expired")


@dataclass(frozen=True)
class NativePlan:
    """Which queries run in Spark SQL, in an order where producers come first."""

    queries: tuple[QueryInfo, ...]

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(q.id for q in self.queries)


def plan_native(analyzed: AnalyzedApp, layout: InputLayout) -> NativePlan:
    """The largest set of stateless queries whose inputs and consumers are all native."""
    inputs = {name for name, _ in layout.streams}
    native = {q.id: q for q in analyzed.queries if _shape_is_stateless(q) and _compiles(q, analyzed)}
    producers: dict[str, list[QueryInfo]] = {}
    consumers: dict[str, list[QueryInfo]] = {}
    for info in analyzed.queries:
        if info.target:
            producers.setdefault(info.target, []).append(info)
        for name in info.inputs:
            consumers.setdefault(name, []).append(info)
    changed = True
    while changed:
        changed = False
        for qid, info in list(native.items()):
            stream = info.inputs[0]
            fed = all(p.id in native for p in producers.get(stream, ())) and \
                (stream in inputs or stream in producers)
            drained = all(c.id in native for c in consumers.get(info.target or "", ()))
            if not (fed and drained):
                del native[qid]
                changed = True
    return NativePlan(tuple(_producers_first(native.values(), producers)))


def _producers_first(queries: Iterable[QueryInfo],
                     producers: dict[str, list[QueryInfo]]) -> list[QueryInfo]:
    """A topological order: a query after every native query producing its input."""
    pending = sorted(queries, key=lambda q: q.index)
    ids = {q.id for q in pending}
    ordered: list[QueryInfo] = []
    while pending:
        waiting = {q.id for q in pending}
        ready = [q for q in pending
                 if not any(p.id in waiting for p in producers.get(q.inputs[0], ()))]
        if not ready:  # a cycle of native queries; the written order is as good as any
            return ordered + pending
        ordered += ready
        pending = [q for q in pending if q not in ready]
    assert {q.id for q in ordered} == ids
    return ordered


def spark_compiler(analyzed: AnalyzedApp, resolve: object) -> SparkExpressionCompiler:
    """A compiler of the app's expressions to Spark columns; ``resolve`` maps a variable to
    its column."""
    scripts = [d.name for d in analyzed.app.definitions if isinstance(d, ast.FunctionDefinition)]
    return SparkExpressionCompiler(analyzed.type_of, resolve,  # type: ignore[arg-type]
                                   F.col(TS), script_functions=scripts)


def _expressions(info: QueryInfo) -> list[ast.Expression]:
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    found: list[ast.Expression] = [h.expression for h in source.handlers
                                   if isinstance(h, ast.Filter)]
    found += [a.expression for a in info.query.selector.attributes or ()]
    return found


def _compiles(info: QueryInfo, analyzed: AnalyzedApp) -> bool:
    compiler = spark_compiler(analyzed, lambda var: F.col(f"`{var.attribute}`"))
    try:
        for expr in _expressions(info):
            compiler.compile(expr)
    except UnsupportedInSpark:
        return False
    return True


def compile_native(analyzed: AnalyzedApp, plan: NativePlan, source: DataFrame,
                   layout: InputLayout) -> DataFrame | None:
    """The native queries' outputs in the writer's schema, or None when there are none."""
    if not plan.queries:
        return None
    streams: dict[str, list[DataFrame]] = {}
    outputs: list[DataFrame] = []
    for info in plan.queries:
        stream = info.inputs[0]
        frame = _union(streams[stream]) if stream in streams else _input(source, layout, stream)
        emitted = _apply(analyzed, info, frame)
        outputs.append(emitted.select(
            SEQ, F.concat(F.col(ORDER), F.array(*(F.lit(i) for i in (info.index, 0, 0, 0))))
            .alias(ORDER), TS, F.lit(info.id).alias("_query"),
            F.lit(info.target).alias("_target"), F.lit(False).alias("_expired"),
            F.to_json(F.struct(*(F.col(f"`{a.name}`") for a in info.outputs)),
                      {"ignoreNullFields": "false"}).alias("_data")))
        published = emitted.withColumn(
            ORDER, F.concat(F.col(ORDER), F.array(*(F.lit(i) for i in (info.index, 0, 1)))))
        assert info.target is not None
        streams.setdefault(info.target, []).append(published)
    return _union(outputs)


def _union(frames: list[DataFrame]) -> DataFrame:
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _input(source: DataFrame, layout: InputLayout, stream: str) -> DataFrame:
    columns = layout.columns(stream)
    attributes = layout.attributes(stream)
    return source.where(F.col(STREAM) == stream).select(
        SEQ, TS, F.array(F.lit(1)).alias(ORDER),
        *(F.col(c).alias(a.name) for c, a in zip(columns, attributes)))


def _apply(analyzed: AnalyzedApp, info: QueryInfo, frame: DataFrame) -> DataFrame:
    """Filters then projects ``frame`` (the input stream's rows) as the query says."""
    compiler = spark_compiler(analyzed, lambda var: frame[f"`{var.attribute}`"])
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    for handler in source.handlers:
        assert isinstance(handler, ast.Filter)
        frame = frame.where(compiler.compile_condition(handler.expression))
    selected: list[Column]
    if info.query.selector.attributes is None:
        selected = [frame[f"`{a.name}`"] for a in info.outputs]
    else:
        selected = [compiler.compile(a.expression).alias(name.name)
                    for a, name in zip(info.query.selector.attributes, info.outputs)]
    return frame.select(SEQ, TS, ORDER, *selected)
