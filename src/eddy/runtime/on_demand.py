"""On-demand (store) queries against a group's tables and named windows.

``from T [on cond] select … [group by … having … order by … limit … offset …]`` finds the
matching rows and runs them through a selector as *one chunk* (the reference's
``FindOnDemandQueryRuntime``): aggregates without ``group by`` give one row, ``group by``
one row per group in first-appearance order, and a store with no matching row gives no row
at all (not even ``count() = 0``). The selector starts afresh for every execution.

``select … insert into T``, ``delete T on …``, ``update T set … on …`` and ``update or insert
into T …`` select from a single event (all nulls of the table's attributes when there is no
``select``, else no attributes at all) and hand the selected event to the same table
operation a streaming query's output would; they return no rows.

Compiled plans are cached per runtime and query text, as the reference caches its
on-demand runtimes; they hold no state.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eddy.lang import ast
from eddy.lang.on_demand import OnDemandAnalysis, check_on_demand
from eddy.lang.semantic import QueryInfo
from eddy.runtime.aggregation.retrieval import aggregation_finder
from eddy.runtime.events import CURRENT, Event
from eddy.runtime.expressions import CompileError, ExpressionCompiler, Getter
from eddy.runtime.join_window import window_contents
from eddy.runtime.query import QueryRuntime
from eddy.runtime.query_builder import QueryBuilder, UnsupportedQuery
from eddy.runtime.table import Condition, Table
from eddy.runtime.table_query import TableOutput, pushdown, table_output

if TYPE_CHECKING:
    from eddy.runtime.group import Runtime

Row = tuple[Any, ...]

__all__ = ["OnDemandPlan", "run_store_query"]

_PLANS: weakref.WeakKeyDictionary[Any, dict[str, OnDemandPlan]] = weakref.WeakKeyDictionary()
_CACHE_SIZE = 50  # the reference keeps its 50 most recent on-demand runtimes


def run_store_query(runtime: Runtime, text: str) -> list[Row]:
    """Runs the on-demand query ``text`` against ``runtime``'s state; mutations give []."""
    plans = _PLANS.setdefault(runtime, {})
    plan = plans.pop(text, None)
    if plan is None:
        plan = OnDemandPlan(runtime, check_on_demand(runtime.analyzed, text))
    plans[text] = plan
    while len(plans) > _CACHE_SIZE:
        del plans[next(iter(plans))]
    return plan.run()


class OnDemandPlan:
    """One compiled on-demand query: its selector and what it reads or writes."""

    def __init__(self, runtime: Runtime, analysis: OnDemandAnalysis) -> None:
        self.runtime = runtime
        self.analysis = analysis
        self.context = runtime.context
        store = analysis.store
        self.name = f"store_query_{store.name}"
        self.analyzed = dataclasses.replace(
            runtime.analyzed, types={**runtime.analyzed.types, **analysis.types})
        self.selection = self._selection()
        self.table: Table | None = runtime.tables.get(store.name)
        self.find: Callable[[], list[Event]] | None = None
        self.output: TableOutput | None = None
        if analysis.kind == "find":
            self.find = self._finder()
        else:
            assert self.table is not None and analysis.query.output is not None
            compiler = runtime.compiler(self.analyzed.type_of, _no_position, self.context)
            self.output = table_output(self.table, analysis.query.output,
                                       analysis.outputs[:analysis.visible], compiler,
                                       self.analyzed.type_of)

    def _selection(self) -> QueryRuntime:
        analysis = self.analysis
        source = analysis.scope.sources[0]
        query = ast.Query((), ast.SingleInputStream(source.stream),
                          analysis.query.selector, ast.ReturnStream())
        info = QueryInfo(query, self.name, 0, None, (source.stream,), None, "return",
                         analysis.outputs, analysis.scope, analysis.aggregates)

        def no_scheduler(key: str) -> int:
            raise UnsupportedQuery(self.name, f"an on-demand query has no {key}")

        try:
            return QueryBuilder(info, self.analyzed, self.context, no_scheduler,
                                self.runtime.compiler).build()
        except CompileError as error:
            raise UnsupportedQuery(self.name, str(error)) from error

    def _finder(self) -> Callable[[], list[Event]]:
        analysis = self.analysis
        store = analysis.query.input
        assert store is not None
        positions = {a.name: i for i, a in enumerate(analysis.store.attributes)}
        scope = analysis.scope

        def position_of(var: ast.Variable) -> int:
            return positions[scope.resolve(var).attribute.name]

        compiler: ExpressionCompiler = self.runtime.compiler(self.analyzed.type_of,
                                                             position_of, self.context)
        if analysis.store.kind == "aggregation":
            # Rows are (AGG_TIMESTAMP, *selected), the scope's source; 'within … per …'
            # and 'on' are applied by the aggregation's reader.
            positions.clear()
            positions.update((a.name, i) for i, a in enumerate(scope.sources[0].attributes))
            context = self.context
            return aggregation_finder(self.runtime.aggregations[analysis.store.name], store,
                                      compiler, len(positions), lambda: context.now)
        on = (compiler.compile(store.on, condition=True) if store.on is not None
              else (lambda event: True))
        context = self.context
        table = self.table
        if table is not None:
            def value(expr: ast.Expression) -> Getter:
                get = compiler.compile(expr)
                return lambda ctx: get((CURRENT, ctx[1], None))

            sql = (pushdown(store.on, position_of, value, table) if store.on is not None
                   else None)
            condition = Condition(lambda ctx: on((CURRENT, ctx[1], ctx[2])), sql=sql)
            return lambda: [(CURRENT, context.now, row)
                            for row in table.find(condition, (None, context.now))]
        window = self.runtime.windows[analysis.store.name].window

        def find_in_window() -> list[Event]:
            now = context.now
            return [event for event in ((CURRENT, now, data) for data in window_contents(window))
                    if on(event)]
        return find_in_window

    def run(self) -> list[Row]:
        """Executes the query once."""
        selector = self.selection.selector
        selector.set_state(selector.fresh_state())
        if self.find is not None:
            found = self.find()
            if not found:
                return []
            selected = selector.process(found) or []
            visible = self.analysis.visible
            return [tuple(event[2][:visible]) for event in selected if event[0] == CURRENT]
        width = len(self.analysis.scope.sources[0].attributes)
        now = self.context.now
        selected = selector.process([(CURRENT, now, (None,) * width)]) or []
        assert self.output is not None
        visible = self.analysis.visible
        events = [(event[2][:visible], now) for event in selected if event[0] == CURRENT]
        if events:
            self.output.apply(events)
        return []


def _no_position(var: ast.Variable) -> int:
    raise KeyError(var.attribute)  # table operations resolve every variable themselves
