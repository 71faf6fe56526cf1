"""Stateless queries compiled to Spark SQL, running in the JVM.

A query that only filters and projects one stream (no window, no aggregate, no rate limit,
no table) has nothing per-event that Spark lacks: it becomes ``where`` and ``select`` over
the group's input rows, and never crosses into Python. All native queries of a group, chains
included, are computed on each source row by one chain of projections whose outputs are
exploded at the end, so the source is scanned once however many queries read it. A query
stays in the Python runtime when it needs state, when one of its expressions cannot run in
Spark, or when its input or output is shared with a query that runs in the runtime (the
runtime only sees the group's source rows).

Outputs carry the same ``_order`` path the runtime gives (``(1, index)`` for an input
reaching a query, ``+ (emission, 0, i)`` for an emitted event, ``+ (emission, 1, index)``
for a downstream subscriber), so native and runtime outputs merge into the reference order.

The same projections serve two kinds of chains with a stateful query
(:mod:`eddy.plan.physical.rules.tail`, :mod:`eddy.plan.physical.heads`): the *tails* of a
stateful query, computed from its operator's output rows (:func:`with_tails`), and the
events of a filter that feeds one, computed on the input rows for its operator to read
(:func:`as_input`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.compile.expressions import SparkExpressionCompiler
from eddy.engine.compile.scalar_functions import object_to_json
from eddy.engine.compile.spark_sql_support import script_functions
from eddy.engine.operators.operator_part import value_columns, writer_frame
from eddy.engine.spark.row_layout import (
    SEQ,
    STREAM,
    TS,
    InputLayout,
    output_field,
    value_slots,
)
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical.heads import Fed
from eddy.plan.physical.rules.spark_sql import native_queries, partition_key

ORDER = "_order"


@dataclass(frozen=True)
class NativePlan:
    """Which queries run in Spark SQL, in an order where producers come first."""

    queries: tuple[QueryInfo, ...]

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(q.id for q in self.queries)


def plan_native(analyzed: AnalyzedApp, layout: InputLayout) -> NativePlan:
    """The queries the physical planner runs in Spark SQL over ``layout``'s streams
    (:mod:`eddy.plan.physical.rules.spark_sql`), producers first."""
    from eddy.engine.compile.operator_facts import EngineFacts

    native = native_queries(analyzed, analyzed.queries, [name for name, _ in layout.streams],
                            EngineFacts(), {})
    return native_plan(analyzed, native)


def native_plan(analyzed: AnalyzedApp, ids: Iterable[str]) -> NativePlan:
    """The queries ``ids`` in an order where producers come first."""
    wanted = set(ids)
    producers: dict[str, list[QueryInfo]] = {}
    for info in analyzed.queries:
        if info.target:
            producers.setdefault(info.output_stream or "", []).append(info)
    chosen = [q for q in analyzed.queries if q.id in wanted]
    return NativePlan(tuple(_producers_first(chosen, producers)))


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
    return SparkExpressionCompiler(analyzed.type_of, resolve,  # type: ignore[arg-type]
                                   F.col(TS), script_functions=script_functions(analyzed))


def compile_native(analyzed: AnalyzedApp, plan: NativePlan, source: DataFrame,
                   layout: InputLayout, *, typed: bool = True) -> DataFrame | None:
    """The native queries' outputs in the writer's schema, or None when there are none;
    ``typed`` False puts every output's values in ``_data`` (what real-time mode writes).

    Every native query is computed on the same source row, as columns added by one chain of
    projections, and the outputs leave as one array exploded at the end: a plan that forked
    the source once per query (a union of per-query branches) made Spark scan the Python
    source once per branch. A query reading a stream that native queries produce reads it
    once per producing path (``_order`` differs), as the runtime delivers each event.
    """
    if not plan.queries:
        return None
    names = (f"_n{i}" for i in itertools.count())
    frame, emitted, _ = _outputs(analyzed, plan.queries, source, {}, layout, names, typed)
    if not emitted:  # only heads of a partition's stateful queries (read through them)
        return None
    fields = list(dict.fromkeys(name for _, columns in emitted for name in columns))
    structs = [F.when(keep, _struct(columns, fields)) for keep, columns in emitted]
    if len(structs) == 1:  # one output: no array to explode
        frame = frame.select(SEQ, TS, structs[0].alias("_out")).where(F.col("_out").isNotNull())
    else:
        frame = frame.select(SEQ, TS, F.explode(F.filter(F.array(*structs),
                                                        lambda out: out.isNotNull()))
                             .alias("_out"))
    return writer_frame(frame, {SEQ: F.col(SEQ), TS: F.col(TS), "_expired": F.lit(False),
                                **{name: F.col(f"_out.{name}") for name in fields}})


def as_input(analyzed: AnalyzedApp, fed: Fed, source: DataFrame, layout: InputLayout
             ) -> tuple[DataFrame, InputLayout, tuple[int, ...]]:
    """``source`` with each event the heads of ``fed`` insert into ``fed.stream`` in place
    of the input row that caused it (its attributes in new columns), the layout with that
    stream added, and the order path at which such an event reaches a subscriber: the rows
    a query fed through the heads reads (:mod:`eddy.plan.physical.heads`). Every other row,
    and every row's time, is unchanged."""
    names = (f"_h{i}" for i in itertools.count())
    frame, _, produced = _outputs(analyzed, fed.heads, source, {}, layout, names, True)
    (output,) = produced[fed.stream]
    attributes = analyzed.read_stream(fed.stream, fed.head.partition).attributes
    fed_layout = InputLayout((*layout.streams, (fed.stream, attributes)))
    passes = F.col(output.keep)
    return frame.select(
        *(F.col(c) for c in source.columns if c != STREAM),
        F.when(passes, F.lit(fed.stream)).otherwise(F.col(STREAM)).alias(STREAM),
        *(F.when(passes, F.col(f"`{output.columns[a.name]}`")).alias(column)
          for a, column in zip(attributes, fed_layout.columns(fed.stream)))), fed_layout, \
        output.order


def with_tails(analyzed: AnalyzedApp, frame: DataFrame, producers: Sequence[QueryInfo],
               tails: NativePlan) -> DataFrame:
    """``frame`` (output rows in the writer's schema, from an operator running
    ``producers``) with the outputs of ``tails`` — native queries reading what the
    producers insert, and what they insert in turn — after the rows that caused them.

    A producer's output row is an event of its target stream (expired ones too: the
    reference's junction hands every emitted event on as current) at its order path
    ``P + (emission, 0, i)``; a tail reached from it gets ``P + (emission, 1, place, …)``
    and keeps ``i`` as its position (the runtime numbers the tail's own outputs of the
    emission; ``i`` sorts them alike). Each row becomes itself and its tails' outputs, one
    exploded array, so the producer's operator runs once."""
    if not tails.queries:
        return frame
    names = (f"_t{i}" for i in itertools.count())
    entries: dict[str, list[_Path]] = {}
    head = frame.columns
    base = F.concat(F.expr(f"slice({ORDER}, 1, size({ORDER}) - 2)"), F.array(F.lit(1)))
    for info in producers:
        assert info.output_stream is not None
        slots = value_slots(list(info.outputs))
        assert slots is not None, f"{info.id}: a tail reads no object attribute (planner)"
        keep = next(names)
        frame = frame.select("*", ((F.col("_query") == info.id)
                                   & (F.col("_target") == info.target)).alias(keep))
        entries[info.output_stream] = [_Path(keep, (), dict(zip((a.name for a in info.outputs),
                                                         slots)),
                                      base, F.element_at(F.col(ORDER), -1))]
    frame, emitted, _ = _outputs(analyzed, tails.queries, frame, entries, None, names, True)
    emitted = [(keep, {SEQ: F.col(SEQ), TS: F.col(TS), "_expired": F.lit(False), **columns})
               for keep, columns in emitted]
    fields = list(dict.fromkeys([*head, *(name for _, columns in emitted for name in columns)]))
    rows = [_struct({name: F.col(name) for name in head}, fields),
            *(F.when(keep, _struct(columns, fields)) for keep, columns in emitted)]
    return frame.select(F.explode(F.filter(F.array(*rows), lambda out: out.isNotNull()))
                        .alias("_out")).select("_out.*")


def _struct(columns: dict[str, Column], fields: Sequence[str]) -> Column:
    """One output as a struct of every one of ``fields`` (nulls where it has none), each
    cast to the writer's type, so the outputs of several queries share one array."""
    return F.struct(*(columns.get(name, F.lit(None)).cast(output_field(name).dataType)
                      .alias(name) for name in fields))


def _outputs(analyzed: AnalyzedApp, queries: Sequence[QueryInfo], frame: DataFrame,
             entries: dict[str, list[_Path]], layout: InputLayout | None,
             names: Iterator[str], typed: bool
             ) -> tuple[DataFrame, list[tuple[Column, dict[str, Column]]],
                        dict[str, list[_Path]]]:
    """``frame`` with the columns of ``queries``' outputs (producers first), per output the
    column saying whether the row has one and its writer columns, and per stream the paths
    of its events. A query's input is one of ``entries`` or a native query's output, else
    (with ``layout``) a group input."""
    produced = {stream: list(paths) for stream, paths in entries.items()}
    emitted: list[tuple[Column, dict[str, Column]]] = []
    for info in queries:
        stream = info.inputs[0]
        if stream in produced:
            inputs = produced[stream]
        else:  # an external input: its rows of the wide layout
            assert layout is not None, f"{info.id} reads {stream}, which no entry provides"
            frame, path = _input_path(analyzed, info, frame, layout, names)
            inputs = [path]
        assert info.output_stream is not None
        place = analyzed.place(info)
        for path in inputs:
            frame, output = _apply(analyzed, info, frame, path, names)
            if info.target_kind != "inner":  # an inner stream's events feed its partition only
                values = value_columns([(F.col(f"`{output.columns[a.name]}`"), a)
                                        for a in info.outputs], typed=typed)
                emitted.append((F.col(output.keep), {
                    ORDER: path.order_of(place), "_query": F.lit(info.id),
                    "_target": F.lit(info.target), **values}))
            produced.setdefault(info.output_stream, []).append(output.downstream(place))
    return frame, emitted, produced


def _input_path(analyzed: AnalyzedApp, info: QueryInfo, frame: DataFrame,
                layout: InputLayout, names: Iterator[str]) -> tuple[DataFrame, _Path]:
    """``frame`` with a column saying whether the row is an event of the input stream
    ``info`` reads, and the path of those events (reaching their subscribers at ``(1, …)``;
    a query of a value partition at ``(1, the partition's place, 0, …)``, through the
    event's one key, which a null key does not reach: :func:`partition_key`)."""
    stream = info.inputs[0]
    keep = next(names)
    columns = dict(zip((a.name for a in layout.attributes(stream)), layout.columns(stream)))
    passes = F.col(STREAM) == stream
    order: tuple[int, ...] = (1,)
    key = partition_key(analyzed, info)
    if key is not None:
        compiler = spark_compiler(analyzed, lambda var: F.col(f"`{columns[var.attribute]}`"))
        passes = passes & compiler.compile(key).isNotNull()
        order = (1, info.index, 0)
    return frame.select("*", passes.alias(keep)), _Path(keep, order, columns)


@dataclass(frozen=True)
class _Path:
    """One way events reach a stream on a row: the boolean column saying whether this row
    carries such an event, its ``_order`` so far (``base``, a column, then ``order``), its
    attributes' columns, and its position in its emission (``position``; else 0)."""

    keep: str
    order: tuple[int, ...]
    columns: dict[str, str]
    base: Column | None = None
    position: Column | None = None

    def order_of(self, index: int) -> Column:
        """The ``_order`` of the output of the query at ``index`` reading this path."""
        tail = self.order + (index, 0, 0)
        if self.base is None:
            return _ints(tail + (0,))
        return F.concat(self.base, _ints(tail), F.array(
            self.position if self.position is not None else F.lit(0)))

    def downstream(self, index: int) -> _Path:
        """The path of what the query at ``index`` emits to its subscribers."""
        return _Path(self.keep, self.order + (index, 0, 1), self.columns, self.base,
                     self.position)


def _ints(values: tuple[int, ...]) -> Column:
    return F.array(*(F.lit(v) for v in values))


def _apply(analyzed: AnalyzedApp, info: QueryInfo, frame: DataFrame, path: _Path,
           names: Iterator[str]) -> tuple[DataFrame, _Path]:
    """``frame`` with the columns of ``info``'s output for the events of ``path``: whether
    the query emits one (its filters, evaluated only where ``path`` has an event, as a
    filtered frame would) and the selected values (only computed where it does)."""
    compiler = spark_compiler(analyzed, lambda var: F.col(f"`{path.columns[var.attribute]}`"))
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    conditions = [compiler.compile_condition(h.expression) for h in source.handlers
                  if isinstance(h, ast.Filter)]
    keep = path.keep
    if conditions:
        keep = next(names)
        passes = conditions[0]
        for condition in conditions[1:]:
            passes = F.when(passes, condition).otherwise(F.lit(False))
        frame = frame.select("*", F.when(F.col(path.keep), passes).otherwise(F.lit(False))
                             .alias(keep))
    if info.query.selector.attributes is None:
        columns = {a.name: path.columns[a.name] for a in info.outputs}
    else:
        columns = {name.name: next(names) for name in info.outputs}
        frame = frame.select("*", *(
            F.when(F.col(keep), _as_column(compiler.compile(a.expression), name))
            .alias(columns[name.name])
            for a, name in zip(info.query.selector.attributes, info.outputs)))
    return frame, _Path(keep, path.order, columns, path.base, path.position)


def _as_column(value: Column, attribute: ast.Attribute) -> Column:
    """A computed value as the columns hold it (an ``object`` variant as JSON text, so a
    downstream query reads every ``object`` column alike)."""
    return object_to_json(value) if attribute.type is AttrType.OBJECT else value
