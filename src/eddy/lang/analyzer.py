"""Semantic analysis: resolve every name, infer every type, reject what Siddhi would reject.

The analyser walks an app the way Siddhi builds its runtime: definitions first, then each
query and partition. A query may read a stream that a later query defines implicitly with
``insert into``; such queries wait until their inputs are known, so the written order of
queries does not matter. Every fault found is collected; one fault does not hide others,
and the streams a faulty query would have defined are poisoned so that they raise no
follow-on errors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from eddy.lang import ast
from eddy.lang.ast import Attribute
from eddy.lang.annotation_checks import annotation_issues
from eddy.lang.definitions import check_definitions
from eddy.lang.errors import AppIssue, SiddhiAppError, Span, did_you_mean
from eddy.lang.inputs import (
    fault_stream_info,
    join_scope,
    single_scope,
    source_of,
    state_scope,
)
from eddy.lang.scope import Scope, SemanticError, Source, schema_text
from eddy.lang.selection import check_selector
from eddy.lang.table_writes import check_assignments, check_insert_compatible
from eddy.lang.star_args import with_arguments
from eddy.lang.semantic import AnalyzedApp, OutputKind, PartitionInfo, QueryInfo, StreamInfo
from eddy.lang.typecheck import ExpressionTyper
from eddy.lang.walk import state_streams


class _Deferred(Exception):
    """The query reads a stream that a query not yet analysed will define."""


class _Poisoned(Exception):
    """The query reads a stream whose producer was faulty; its errors would only repeat."""


@dataclass
class _Unit:
    element: ast.ExecutionElement
    index: int


class Analyzer:
    """Checks one app; use :func:`analyze`."""

    def __init__(self, app: ast.SiddhiApp, source: str, filename: str | None) -> None:
        self.result = AnalyzedApp(app, source, filename)
        self.issues: list[AppIssue] = []
        self.functions: dict[str, ast.FunctionDefinition] = {}
        self.typer = ExpressionTyper(self.functions, self.table_source)
        self.result.types = self.typer.types
        self.poisoned: set[str] = set()
        self.pending_targets: set[str] = set()
        self.inner: dict[str, StreamInfo] | None = None
        self.partition_index: int | None = None
        self.query_count = 0
        self.used_ids: set[str] = {q.name for q in _all_queries(app) if q.name}
        self.rewritten: list[tuple[ast.Query, ast.Query]] = []  # (as written, '*' expanded)

    # -- lookups used by inputs.py ---------------------------------------------------------
    def lookup(self, name: str, span: Span, *, inner: bool = False) -> StreamInfo:
        """The element ``name`` refers to, or a fault saying it is not defined."""
        if inner:
            if self.inner is None:
                raise SemanticError(f"inner stream '#{name}' can only be used inside a partition",
                                    span)
            if name in self.inner:
                return self.inner[name]
            if f"#{name}" in self.pending_targets:
                raise _Deferred()
            if f"#{name}" in self.poisoned:
                raise _Poisoned()
            guess = did_you_mean(name, list(self.inner))
            raise SemanticError(f"inner stream '#{name}' is not defined in this partition", span,
                                f"did you mean '#{guess}'?" if guess else
                                f"define it with 'insert into #{name}' in this partition")
        if name in self.result.streams:
            return self.result.streams[name]
        if name in self.pending_targets:
            raise _Deferred()
        if name in self.poisoned:
            raise _Poisoned()
        guess = did_you_mean(name, list(self.result.streams))
        hint = None
        if guess:
            where = self.result.streams[guess].span.line
            hint = f"did you mean '{guess}' (defined at line {where})?" if where else \
                f"did you mean '{guess}'?"
        raise SemanticError(f"stream '{name}' is not defined", span, hint)

    def table_source(self, name: str) -> Source | None:
        """Table ``name`` as an input (``expr in T`` sees its columns), or None if it is not
        a table."""
        info = self.result.streams.get(name)
        if info is None or info.kind != "table":
            return None
        return source_of(info, frozenset({name}))

    # -- driver ---------------------------------------------------------------------------
    def run(self) -> AnalyzedApp:
        """Checks the app; raises :class:`SiddhiAppError` with every fault, in text order."""
        app = self.result.app
        self.issues.extend(annotation_issues(app))
        for info, issue in check_definitions(app, self.typer, self.functions, self.lookup):
            if issue is not None:
                self.issues.append(issue)
            elif info is not None:
                self.result.streams[info.name] = info
        for info in list(self.result.streams.values()):  # '!S' of @OnError(action='STREAM')
            fault = fault_stream_info(info)
            if fault is not None:
                self.result.streams[fault.name] = fault
        units = [_Unit(e, i) for i, e in enumerate(app.elements)]
        self.pending_targets = {t for u in units for t in _targets(u.element)}
        self._drain(units)
        if self.issues:
            raise SiddhiAppError(sorted(self.issues, key=lambda i: (i.span.line, i.span.column)),
                                 self.result.source, self.result.filename)
        self.result.queries.sort(key=lambda q: (q.index, q.partition or 0))
        if self.rewritten:
            self._keep_rewritten()
        return self.result

    def _keep_rewritten(self) -> None:
        """Puts the queries rewritten for ``f(*)`` into the app's AST and its partitions."""
        new = {id(old): query for old, query in self.rewritten}
        partitions: dict[int, ast.Partition] = {}
        elements: list[ast.ExecutionElement] = []
        for element in self.result.app.elements:
            if isinstance(element, ast.Query):
                elements.append(new.get(id(element), element))
                continue
            queries = tuple(new.get(id(q), q) for q in element.queries)
            if queries != element.queries or any(a is not b for a, b in
                                                 zip(queries, element.queries)):
                partitions[id(element)] = dataclasses.replace(element, queries=queries)
            elements.append(partitions.get(id(element), element))
        self.result.app = dataclasses.replace(self.result.app, elements=tuple(elements))
        self.result.partitions = [
            dataclasses.replace(p, partition=partitions.get(id(p.partition), p.partition))
            for p in self.result.partitions]

    def _drain(self, units: list[_Unit]) -> None:
        while units:
            waiting: list[_Unit] = []
            for unit in units:
                if not self._try(unit, final=False):
                    waiting.append(unit)
            if len(waiting) == len(units):
                # Nothing progressed: the remaining inputs are never defined. Report them.
                self.pending_targets = set()
                for unit in waiting:
                    self._try(unit, final=True)
                return
            units = waiting
            self.pending_targets = {t for u in units for t in _targets(u.element)}

    def _try(self, unit: _Unit, *, final: bool) -> bool:
        try:
            if isinstance(unit.element, ast.Partition):
                self._partition(unit.element, unit.index)
            else:
                info = self._analyze_query(unit.element, unit.index, None)
                self.result.queries.append(info)
        except _Deferred:
            if final:
                raise AssertionError("deferred after all producers were analysed") from None
            return False
        except _Poisoned:
            self.poisoned.update(_targets(unit.element))
        except SemanticError as fault:
            self.issues.append(fault.issue)
            self.poisoned.update(_targets(unit.element))
        return True

    # -- partitions ------------------------------------------------------------------------
    def _partition(self, partition: ast.Partition, index: int) -> None:
        streams: list[str] = []
        for ptype in partition.partition_types:
            info = self.lookup(ptype.stream, ptype.span)
            if info.kind not in ("stream", "trigger", "window"):
                raise SemanticError(f"only streams and windows can be partitioned; "
                                    f"'{info.name}' is a "
                                    f"{info.kind}", ptype.span)
            if ptype.stream in streams:
                raise SemanticError(f"stream '{ptype.stream}' is partitioned twice", ptype.span)
            streams.append(ptype.stream)
            scope = Scope((source_of(info, frozenset({info.name})),))
            if isinstance(ptype, ast.ValuePartitionType):
                self.typer.infer(ptype.expression, scope)
            else:
                for cond in ptype.ranges:
                    self.typer.expect_bool(cond.condition, scope, "a range partition condition")
        saved = (self.inner, self.partition_index, self.pending_targets)
        self.inner, self.partition_index = {}, index
        queries: list[QueryInfo] = []
        try:
            remaining, inner_pending = list(partition.queries), True
            while remaining:
                # Inner streams written by queries still waiting count as "coming"; once a
                # pass makes no progress they are reported as undefined instead.
                self.pending_targets = saved[2] | ({t for q in remaining for t in _targets(q)
                                                    if t.startswith("#")}
                                                   if inner_pending else set())
                waiting = []
                for query in remaining:
                    try:
                        queries.append(self._analyze_query(query, index, index))
                    except _Deferred:
                        waiting.append(query)
                if len(waiting) == len(remaining):
                    if not inner_pending:
                        raise _Deferred()
                    inner_pending = False
                remaining = waiting
            inner = self.inner
        finally:
            self.inner, self.partition_index, self.pending_targets = saved
        self.result.queries.extend(queries)
        self.result.partitions.append(PartitionInfo(partition, index, tuple(streams), inner,
                                                    tuple(queries)))

    # -- queries ---------------------------------------------------------------------------
    def _analyze_query(self, query: ast.Query, index: int, partition: int | None) -> QueryInfo:
        """Checks a query; one with ``f(*)`` is checked again as rewritten with the
        attributes the ``*`` stands for, and that rewritten query is the one kept."""
        self.typer.expanded.clear()
        info = self._query(query, index, partition)
        if not self.typer.expanded:
            return info
        rewritten = with_arguments(query, dict(self.typer.expanded))
        self.typer.expanded.clear()
        self.query_count -= 1
        if not query.name:
            self.used_ids.discard(info.id)
        self.rewritten.append((query, rewritten))
        return self._query(rewritten, index, partition)

    def _query(self, query: ast.Query, index: int, partition: int | None) -> QueryInfo:
        scope, inputs = self._input_scope(query.input)
        single = isinstance(query.input, (ast.SingleInputStream, ast.AnonymousInputStream))
        output_id = getattr(query.output, "target", None)
        outputs, aggregates = check_selector(query.selector, scope, self.typer,
                                             single_input=single, output_id=output_id)
        target, kind = self._output(query.output, outputs, scope)
        self.query_count += 1
        return QueryInfo(query, self._query_id(query), index, partition, inputs, target, kind,
                         outputs, scope, aggregates)

    def _query_id(self, query: ast.Query) -> str:
        if query.name:
            return query.name
        n = self.query_count
        while f"query-{n}" in self.used_ids:
            n += 1
        self.used_ids.add(f"query-{n}")
        return f"query-{n}"

    def _input_scope(self, input_stream: ast.InputStream) -> tuple[Scope, tuple[str, ...]]:
        match input_stream:
            case ast.SingleInputStream():
                return single_scope(self, input_stream), (input_stream.key,)
            case ast.JoinInputStream():
                return join_scope(self, input_stream), (input_stream.left.key,
                                                        input_stream.right.key)
            case ast.StateInputStream():
                scope = state_scope(self, input_stream)
                names = tuple(dict.fromkeys(
                    s.key for s in state_streams(input_stream.state)))
                return scope, names
            case ast.AnonymousInputStream():
                inner = self._query(input_stream.query, -1, self.partition_index)
                self.query_count -= 1
                source = Source("", "stream", inner.outputs, frozenset())
                return Scope((source,)), inner.inputs
        raise SemanticError(f"unsupported input {type(input_stream).__name__}",
                            input_stream.span)

    # -- outputs ---------------------------------------------------------------------------
    def _output(self, output: ast.OutputStream, outputs: tuple[Attribute, ...],
                scope: Scope) -> tuple[str | None, OutputKind]:
        if isinstance(output, ast.ReturnStream):
            return None, "return"
        if isinstance(output, ast.InsertIntoStream):
            return self._insert(output, outputs)
        assert isinstance(output, (ast.DeleteStream, ast.UpdateStream, ast.UpdateOrInsertStream))
        table = self._mutable_table(output.target, output.span)
        table_scope = Scope((source_of(table, frozenset({table.name})),), outputs=outputs)
        if isinstance(output, ast.UpdateOrInsertStream):
            check_insert_compatible(table, outputs, output.span)
        if isinstance(output, (ast.UpdateStream, ast.UpdateOrInsertStream)):
            check_assignments(self.typer, table, output.set or (), table_scope)
        if output.on is not None:
            self.typer.expect_bool(output.on, table_scope, "the 'on' condition")
        return table.name, "table"

    def _mutable_table(self, name: str, span: Span) -> StreamInfo:
        info = self.result.streams.get(name)
        if info is None or info.kind != "table":
            tables = [n for n, i in self.result.streams.items() if i.kind == "table"]
            guess = did_you_mean(name, tables)
            what = f"a {info.kind}" if info else "not defined"
            raise SemanticError(f"'{name}' is {what}; only tables can be updated or deleted from",
                                span, f"did you mean '{guess}'?" if guess else None)
        return info

    def _insert(self, output: ast.InsertIntoStream,
                outputs: tuple[Attribute, ...]) -> tuple[str, OutputKind]:
        if output.inner:
            if self.inner is None:
                raise SemanticError(f"inner stream '#{output.target}' can only be written inside "
                                    "a partition", output.span)
            return self._define_or_match(self.inner, output, outputs, "inner"), "inner"
        if output.fault:
            raise SemanticError("a query cannot insert into a fault stream", output.span)
        existing = self.result.streams.get(output.target)
        if existing is not None and existing.kind in ("table", "window"):
            check_insert_compatible(existing, outputs, output.span)
            return existing.name, existing.kind
        if existing is not None and existing.kind in ("aggregation", "trigger"):
            raise SemanticError(f"cannot insert into {existing.kind} '{existing.name}'",
                                output.span)
        return self._define_or_match(self.result.streams, output, outputs, "stream"), "stream"

    def _define_or_match(self, streams: dict[str, StreamInfo], output: ast.InsertIntoStream,
                         outputs: tuple[Attribute, ...], kind: OutputKind) -> str:
        existing = streams.get(output.target)
        wanted = tuple(Attribute(a.name, a.type) for a in outputs)
        if existing is None:
            streams[output.target] = StreamInfo(output.target, "inner" if kind == "inner"
                                                 else "stream", wanted, output.span,
                                                 partition=self.partition_index
                                                 if kind == "inner" else None)
            return output.target
        have = tuple((a.name, a.type) for a in existing.attributes)
        if have != tuple((a.name, a.type) for a in wanted):
            where = f"at line {existing.span.line}" if existing.span.line else "earlier"
            raise SemanticError(
                f"this query writes {schema_text(wanted)} into '{output.target}', but it is "
                f"defined {where} as {schema_text(existing.attributes)}", output.span,
                "select the same attribute names and types, or write to another stream")
        return output.target


def _queries(element: ast.ExecutionElement) -> tuple[ast.Query, ...]:
    return element.queries if isinstance(element, ast.Partition) else (element,)


def _targets(element: ast.ExecutionElement) -> set[str]:
    """Streams an element defines by ``insert into`` (inner ones as ``#name``)."""
    found: set[str] = set()
    for query in _queries(element):
        if isinstance(query.output, ast.InsertIntoStream):
            found.add(("#" if query.output.inner else "") + query.output.target)
    return found


def _all_queries(app: ast.SiddhiApp) -> list[ast.Query]:
    return [query for element in app.elements for query in _queries(element)]


def analyze(app: ast.SiddhiApp, source: str = "", filename: str | None = None) -> AnalyzedApp:
    """Checks ``app``; raises :class:`SiddhiAppError` listing every semantic fault."""
    return Analyzer(app, source, filename).run()
