"""Analysing on-demand (store) queries against an analysed app.

An on-demand query (``from T on … select …``, ``select … insert into T``, ``delete T on …``,
``update T set … on …``, ``update or insert into T set … on …``) runs against the tables,
named windows and aggregations of a deployed app. It is analysed like a query of that app,
with the scopes the reference builds for it (``OnDemandQueryParser``):

- a *find* (``from T …``) selects over the store's attributes, qualified by its name and
  alias; its ``on`` condition sees only the store;
- a *mutation* selects over the table's attributes when it has no ``select`` (the selection
  is then ``*`` of an all-null row), else over an empty input (``TInputStream``), so its
  selection is made of constants; ``on`` and ``set`` see the table and the selected
  attributes, as a streaming query's table output does.

``order by`` an attribute that is not selected sorts by the input's value, as in the
reference (its comparator reads the input event behind the output). The analysis makes such
attributes *hidden* outputs: they are appended to the selection, the ``order by`` names them,
and :attr:`OnDemandAnalysis.visible` says how many leading outputs a result row shows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.errors import SiddhiAppError, Span, did_you_mean
from eddy.lang.inputs import source_of
from eddy.lang.scope import Scope, SemanticError, Source
from eddy.lang.selection import check_selector
from eddy.lang.table_writes import check_assignments, check_insert_compatible
from eddy.lang.semantic import AnalyzedApp, StreamInfo
from eddy.lang.typecheck import ExpressionTyper

OnDemandKind = Literal["find", "insert", "delete", "update", "update_or_insert"]

__all__ = ["OnDemandAnalysis", "OnDemandKind", "analyze_on_demand", "check_on_demand"]


@dataclass(frozen=True)
class OnDemandAnalysis:
    """An on-demand query after analysis.

    ``query`` is the query with hidden ``order by`` attributes added to its selection;
    ``store`` the table, window or aggregation it reads or writes; ``scope`` what its
    selection sees and ``outputs`` what it selects (the first ``visible`` of them are the
    result's columns); ``target_scope`` is what a mutation's ``on`` and ``set`` see (the
    table and the selected attributes). ``types`` holds the type of every expression node of
    ``query``.
    """

    query: ast.OnDemandQuery
    kind: OnDemandKind
    store: StreamInfo
    scope: Scope
    outputs: tuple[Attribute, ...]
    visible: int
    aggregates: bool
    types: dict[int, AttrType]
    target_scope: Scope | None = None

    def type_of(self, expr: ast.Expression) -> AttrType:
        """The inferred type of an expression node of :attr:`query`."""
        return self.types[id(expr)]


def check_on_demand(analyzed: AnalyzedApp, text: str) -> OnDemandAnalysis:
    """Parses and analyses an on-demand query; raises SiddhiAppError (positions refer to
    ``text``) when it is invalid."""
    from eddy.lang.parser import parse_on_demand

    try:
        return analyze_on_demand(analyzed, parse_on_demand(text))
    except SiddhiAppError as error:
        raise error.with_source(text) from None


def analyze_on_demand(analyzed: AnalyzedApp, query: ast.OnDemandQuery) -> OnDemandAnalysis:
    """Analyses ``query`` against ``analyzed``; raises SiddhiAppError for a faulty query."""
    try:
        return _OnDemandAnalyzer(analyzed).run(query)
    except SemanticError as fault:
        raise SiddhiAppError([fault.issue]) from None


class _OnDemandAnalyzer:
    def __init__(self, analyzed: AnalyzedApp) -> None:
        self.analyzed = analyzed
        functions = {d.name: d for d in analyzed.app.definitions
                     if isinstance(d, ast.FunctionDefinition)}
        self.typer = ExpressionTyper(functions, self._table_source)

    def _table_source(self, name: str) -> Source | None:
        info = self.analyzed.streams.get(name)
        if info is None or info.kind != "table":
            return None
        return source_of(info, frozenset({name}))

    def run(self, query: ast.OnDemandQuery) -> OnDemandAnalysis:
        if query.input is not None:
            return self._find(query, query.input)
        output = query.output
        if output is None:
            raise SemanticError("an on-demand query needs 'from <store>' or an output "
                                "('insert into', 'delete', 'update')", query.span)
        return self._mutation(query, output)

    # -- from T on … select … -------------------------------------------------------------
    def _find(self, query: ast.OnDemandQuery, store: ast.StoreInput) -> OnDemandAnalysis:
        if query.output is not None and not isinstance(query.output, ast.ReturnStream):
            raise SemanticError("an on-demand query reading a store cannot also write one",
                                query.output.span)
        info = self._store(store.source, store.span, ("table", "window", "aggregation"))
        refs = frozenset({store.source} | ({store.alias} if store.alias else set()))
        scope = Scope((source_of(info, refs),))
        if info.kind == "aggregation":
            for expr in store.within:
                self.typer.infer(expr, scope)
            if store.per is not None:
                self.typer.infer(store.per, scope)
            if bool(store.within) != (store.per is not None):
                raise SemanticError(f"'{info.name}' needs both 'within' and 'per', or neither",
                                    store.span)
        elif store.within or store.per is not None:
            raise SemanticError("'within … per …' applies only to aggregations", store.span)
        if store.on is not None:
            self.typer.expect_bool(store.on, scope, "the 'on' condition")
        selector, outputs, visible, aggregates = self._selection(query.selector, scope)
        query = dataclasses.replace(query, selector=selector)
        return OnDemandAnalysis(query, "find", info, scope, outputs, visible, aggregates,
                                self.typer.types)

    # -- select … insert into / delete / update / update or insert ------------------------
    def _mutation(self, query: ast.OnDemandQuery, output: ast.OutputStream) -> OnDemandAnalysis:
        if isinstance(output, ast.ReturnStream):
            raise SemanticError("an on-demand query without 'from' must write a table",
                                output.span)
        assert isinstance(output, (ast.InsertIntoStream, ast.DeleteStream, ast.UpdateStream,
                                   ast.UpdateOrInsertStream))
        table = self._store(output.target, output.span, ("table",))
        if query.selector.attributes is None:
            # The reference selects '*' of the table's own (all-null) attributes.
            source = source_of(table, frozenset({table.name}))
        else:
            source = Source(f"{table.name}InputStream", "stream", (), frozenset())
        scope = Scope((source,))
        selector, outputs, visible, aggregates = self._selection(query.selector, scope)
        query = dataclasses.replace(query, selector=selector)
        target_scope = Scope((source_of(table, frozenset({table.name})),),
                             outputs=outputs[:visible])
        kind: OnDemandKind
        if isinstance(output, ast.InsertIntoStream):
            if output.inner or output.fault:
                raise SemanticError("an on-demand query can only insert into a table",
                                    output.span)
            check_insert_compatible(table, outputs[:visible], output.span)
            kind = "insert"
        else:
            if isinstance(output, ast.UpdateOrInsertStream):
                check_insert_compatible(table, outputs[:visible], output.span)
            if isinstance(output, (ast.UpdateStream, ast.UpdateOrInsertStream)):
                check_assignments(self.typer, table, output.set or (), target_scope)
            if output.on is not None:
                self.typer.expect_bool(output.on, target_scope, "the 'on' condition")
            kind = ("delete" if isinstance(output, ast.DeleteStream) else
                    "update" if isinstance(output, ast.UpdateStream) else "update_or_insert")
        return OnDemandAnalysis(query, kind, table, scope, outputs, visible, aggregates,
                                self.typer.types, target_scope)

    # -- shared ------------------------------------------------------------------------------
    def _store(self, name: str, span: Span, kinds: tuple[str, ...]) -> StreamInfo:
        info = self.analyzed.streams.get(name)
        if info is not None and info.kind in kinds:
            return info
        candidates = [n for n, i in self.analyzed.streams.items() if i.kind in kinds]
        guess = did_you_mean(name, candidates)
        what = f"a {info.kind}" if info is not None else "not defined"
        wanted = " or ".join(kinds)
        raise SemanticError(f"'{name}' is {what}; an on-demand query needs a {wanted} here",
                            span, f"did you mean '{guess}'?" if guess else None)

    def _selection(self, selector: ast.Selector, scope: Scope
                   ) -> tuple[ast.Selector, tuple[Attribute, ...], int, bool]:
        """The selector with hidden ``order by`` outputs, its outputs, how many are visible,
        and whether it aggregates."""
        outputs, aggregates = check_selector(selector, scope, self.typer)
        selected = scope.with_outputs(outputs)
        hidden: list[ast.OutputAttribute] = []
        order_by: list[ast.OrderByAttribute] = []
        taken = {a.name for a in outputs}
        for order in selector.order_by:
            if selected.resolve(order.variable).source.kind == "output":
                order_by.append(order)
                continue
            name = _fresh_name(taken)
            taken.add(name)
            hidden.append(ast.OutputAttribute(order.variable, name, span=order.variable.span))
            order_by.append(dataclasses.replace(
                order, variable=ast.Variable(name, span=order.variable.span)))
        if not hidden:
            return selector, outputs, len(outputs), aggregates
        assert selector.attributes is not None  # 'select *' selects every attribute
        rewritten = dataclasses.replace(selector, attributes=selector.attributes + tuple(hidden),
                                        order_by=tuple(order_by))
        all_outputs, aggregates = check_selector(rewritten, scope, self.typer)
        return rewritten, all_outputs, len(outputs), aggregates


def _fresh_name(taken: set[str]) -> str:
    n = 0
    while f"_order{n}" in taken:
        n += 1
    return f"_order{n}"

