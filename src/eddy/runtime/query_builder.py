"""Compiling an analysed single-stream query into a :class:`~.query.QueryRuntime`.

Everything an event needs is decided here, once: attribute positions, compiled expressions,
the selector's path (batching, group by, aggregates), the window processor and its scheduler,
the rate limiter. Queries the runtime cannot run yet (joins, patterns, sequences, partitions,
tables, anonymous inputs) raise :class:`UnsupportedQuery` naming the query and the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.typecheck import constant_value
from eddy.runtime.context import Context
from eddy.runtime.events import float_key
from eddy.runtime.expressions import CompileError, ExpressionCompiler, is_aggregate_call
from eddy.runtime.query import (
    FilterStage,
    LogStage,
    Pol2CartStage,
    QueryRuntime,
    Stage,
)
from eddy.runtime.ratelimit import (
    AllPerEvents,
    AllPerTime,
    FirstGroupByPerEvents,
    FirstGroupByPerTime,
    FirstPerEvents,
    FirstPerTime,
    LastGroupByPerEvents,
    LastGroupByPerTime,
    LastPerEvents,
    LastPerTime,
    RateLimiter,
)
from eddy.runtime.ratelimit_snapshot import (
    output_event_type,
    snapshot_conflict,
    snapshot_limiter,
)
from eddy.runtime.selector import Frame, OrderKey, Selector, SelectorPlan
from eddy.runtime.windows import Window, WindowArgs, window_class
from eddy.runtime.windows.expression import ExpressionBatchWindow, ExpressionWindow

Getter = Callable[[Any], Any]
SchedulerIndex = Callable[[str], int]

STREAM_FUNCTIONS = ("log", "pol2Cart")


class UnsupportedQuery(NotImplementedError):
    """A query this runtime cannot run (yet); ``query_id`` and ``reason`` say which and why."""

    def __init__(self, query_id: str, reason: str) -> None:
        super().__init__(f"query '{query_id}': {reason}")
        self.query_id = query_id
        self.reason = reason


def unsupported_reason(info: QueryInfo) -> str | None:
    """Why the runtime cannot run ``info``, or None if it can."""
    query = info.query
    stream = query.input
    if isinstance(stream, ast.JoinInputStream):
        from eddy.runtime.join import join_unsupported_reason  # join builds on this

        return join_unsupported_reason(info)
    if isinstance(stream, ast.StateInputStream):
        from eddy.runtime.pattern import pattern_unsupported_reason  # builds on this

        return pattern_unsupported_reason(info)
    if isinstance(stream, ast.AnonymousInputStream):
        return "anonymous (nested) input queries are not supported by this runtime yet"
    assert isinstance(stream, ast.SingleInputStream)  # '!S' is an input stream like any other
    if info.target_kind not in ("stream", "window", "return", "table", "inner"):
        return f"inserting into a {info.target_kind} is not supported by this runtime yet"
    for handler in stream.handlers:
        if isinstance(handler, ast.Window) and window_class(handler.namespace,
                                                             handler.name) is None:
            return f"window '{handler.name}' has no eddy implementation"
        if isinstance(handler, ast.StreamFunction) and (
                handler.namespace is not None or handler.name not in STREAM_FUNCTIONS):
            return f"stream function '{handler.name}' has no eddy implementation"
    return snapshot_conflict(query)


def uses_scheduler(handler: ast.StreamHandler) -> bool:
    cls = window_class(handler.namespace, handler.name) if isinstance(handler, ast.Window) \
        else None
    return cls is not None and cls.scheduling


def limiter_uses_scheduler(rate: ast.OutputRate | None) -> bool:
    if rate is None:
        return False
    return rate.unit == "snapshot" or (rate.unit == "time" and rate.type != "first")


class QueryBuilder:
    """Builds one query's runtime; see :func:`build_query`."""

    def __init__(self, info: QueryInfo, analyzed: AnalyzedApp, context: Context,
                 scheduler_index: SchedulerIndex,
                 compiler: Callable[..., ExpressionCompiler] = ExpressionCompiler) -> None:
        self.info = info
        self.analyzed = analyzed
        self.context = context
        self.scheduler_index = scheduler_index
        self.make_compiler = compiler  # the group's tables make 'in T' compilable
        query = info.query
        assert isinstance(query.input, ast.SingleInputStream)
        self.input = query.input
        self.source = info.scope.sources[0]
        self.positions: dict[str, int] = {}
        for i, attribute in enumerate(self.source.attributes):
            self.positions.setdefault(attribute.name, i)  # the scope resolves to the first
        self.expects_expired = output_event_type(query) != "current"
        self.group_by = bool(query.selector.group_by)
        self.frame = Frame()

    def position_of(self, var: ast.Variable) -> int:
        resolved = self.info.scope.resolve(var)
        return self.positions[resolved.attribute.name]

    def build(self) -> QueryRuntime:
        plain = self.make_compiler(self.analyzed.type_of, self.position_of, self.context)
        pre: list[Stage] = []
        post: list[Stage] = []
        window: Window | None = None
        mode = "BATCH"
        # How many attributes the events carry at each handler: stream functions append.
        width = len(self.source.attributes) - sum(map(_added_width, self.input.handlers))
        for handler in self.input.handlers:
            if isinstance(handler, ast.Filter):
                stage: Stage = FilterStage(plain.compile(handler.expression, condition=True))
            elif isinstance(handler, ast.StreamFunction):
                stage = self._stream_function(handler, plain)
                width += _added_width(handler)
            else:
                window = self._window(handler, plain, width)
                mode = _combine_mode(mode, window.processing_mode)
                continue
            (post if window is not None else pre).append(stage)
        track_future = mode == "SLIDE" or self.expects_expired
        rate = self.info.query.output_rate
        batching = not (rate is not None and rate.unit == "snapshot")
        selector = Selector(self._selector_plan(track_future, batching), self.frame)
        limiter = self._limiter(window is not None, selector.plan)
        target = self.info.target if self.info.target_kind in ("stream", "window") else None
        return QueryRuntime(self.info.id, self.info.index, self.context, pre, window, post,
                            selector, limiter, target)

    def _stream_function(self, handler: ast.StreamFunction,
                         compiler: ExpressionCompiler) -> Stage:
        args = [compiler.compile(a) for a in handler.args]
        if handler.name == "pol2Cart":
            return Pol2CartStage(args)
        message = None
        for arg, expr in zip(args, handler.args):
            if self.analyzed.type_of(expr) == AttrType.STRING:
                message = arg
                break
        return LogStage(self.info.id, message)

    def _window(self, handler: ast.Window, compiler: ExpressionCompiler, width: int) -> Window:
        cls = window_class(handler.namespace, handler.name)
        assert cls is not None
        args = WindowArgs(handler, self.analyzed.type_of, self.position_of, compiler.compile,
                          [a.type for a in self.source.attributes[:width]])
        try:
            window = cls(self.context, args, self.expects_expired)
        except (ValueError, TypeError) as error:
            raise UnsupportedQuery(self.info.id, str(error)) from error
        if cls.scheduling:
            window.scheduler = self.context.scheduler(
                self.scheduler_index(f"window:{self.info.id}"), self.info.id)
        if isinstance(window, (ExpressionWindow, ExpressionBatchWindow)):
            attributes = tuple(self.source.attributes[:width])
            try:
                window.bind(self.source.stream, self.source.refs, attributes)
            except ValueError as error:
                raise UnsupportedQuery(self.info.id, str(error)) from error
        return window

    # -- selection -------------------------------------------------------------------------
    def _selection(self) -> list[tuple[ast.Expression, Attribute]]:
        selector = self.info.query.selector
        if selector.attributes is None:
            return [(ast.Variable(a.name), a) for a in self.info.outputs]
        return [(item.expression, out) for item, out in zip(selector.attributes,
                                                             self.info.outputs)]

    def _selector_plan(self, track_future: bool, batching: bool) -> SelectorPlan:
        selector = self.info.query.selector
        compiler = self.make_compiler(self.analyzed.type_of, self.position_of, self.context,
                                      self.frame, track_future, destroy_groups=self.group_by)
        items: list[tuple[str, Any]] = []
        aggregate_positions: list[int] = []
        selection = self._selection()
        for position, (expr, _) in enumerate(selection):
            if isinstance(expr, ast.Variable) and selector.attributes is None:
                items.append(("var", self.positions[expr.attribute]))
            elif isinstance(expr, ast.Variable):
                items.append(("var", self.position_of(expr)))
            else:
                items.append(("fn", compiler.compile(expr)))
                if is_aggregate_call(expr):
                    aggregate_positions.append(position)
        outputs = {out.name: i for i, (_, out) in enumerate(selection)}
        selected = self.info.scope.with_outputs(self.info.outputs)
        having = None
        if selector.having is not None:
            having = compiler.compile(selector.having, condition=True,
                                      resolve=lambda v: self._having_variable(v, selected,
                                                                              outputs),
                                      per_group=self.info.partition is not None)
        order_by = []
        hidden: list[tuple[str, Any]] = []
        for order in selector.order_by:
            resolved = selected.resolve(order.variable)
            if resolved.source.kind == "output":
                position = outputs[resolved.attribute.name]
            else:
                # Over a join the reference's order by falls back to the inputs
                # (ExpressionParser.parseVariable, HAVING_STATE): a hidden projected value.
                position = len(items) + len(hidden)
                hidden.append(("var", self.position_of(order.variable)))
            order_by.append(OrderKey(position, not order.descending,
                                     resolved.attribute.type.value))
        return SelectorPlan(
            project=_projector(items + hidden),
            having=having,
            group_key=self._group_key(),
            order_by=order_by,
            limit=_count(selector.limit),
            offset=_count(selector.offset),
            current_on=output_event_type(self.info.query) in ("current", "all"),
            expired_on=output_event_type(self.info.query) in ("expired", "all"),
            aggregates=self.info.aggregates,
            aggregate_slots=len(compiler.slots),
            batching=batching,
            aggregate_positions=aggregate_positions,
            visible=len(items) if hidden else None,
        )

    def _having_variable(self, var: ast.Variable, selected: Any,
                         outputs: dict[str, int]) -> Getter:
        resolved = selected.resolve(var)
        if resolved.source.kind == "output":
            position = outputs[resolved.attribute.name]
            return lambda ctx: ctx[3][position]
        data_position = self.position_of(var)
        return lambda ctx: ctx[2][data_position]

    def _group_key(self) -> Getter | None:
        variables = self.info.query.selector.group_by
        if not variables:
            return None
        specs = []
        for var in variables:
            resolved = self.info.scope.resolve(var)
            floating = resolved.attribute.type in (AttrType.FLOAT, AttrType.DOUBLE,
                                                   AttrType.OBJECT)
            specs.append((self.position_of(var), floating))
        if len(specs) == 1:
            position, floating = specs[0]
            if floating:
                return lambda event: float_key(event[2][position])
            return lambda event: event[2][position]
        return lambda event: tuple(float_key(event[2][p]) if f else event[2][p]
                                   for p, f in specs)

    # -- rate limiting ---------------------------------------------------------------------
    def _limiter(self, windowed: bool, plan: SelectorPlan) -> RateLimiter:
        rate = self.info.query.output_rate
        if rate is None:
            return RateLimiter()
        group_by = self.group_by
        if rate.unit == "events":
            if rate.type == "all":
                return AllPerEvents(rate.value)
            if rate.type == "first":
                return FirstGroupByPerEvents(rate.value) if group_by else \
                    FirstPerEvents(rate.value)
            return LastGroupByPerEvents(rate.value) if group_by else LastPerEvents(rate.value)
        if rate.unit == "time" and rate.type == "first":
            return FirstGroupByPerTime(rate.value, self.context) if group_by else \
                FirstPerTime(rate.value, self.context)
        scheduler = self.context.scheduler(self.scheduler_index(f"limiter:{self.info.id}"),
                                           self.info.id)
        if rate.unit == "time":
            if rate.type == "all":
                return AllPerTime(rate.value, scheduler)
            return LastGroupByPerTime(rate.value, scheduler) if group_by else \
                LastPerTime(rate.value, scheduler)
        return snapshot_limiter(rate.value, scheduler, windowed=windowed, group_by=group_by,
                                aggregate_positions=plan.aggregate_positions,
                                outputs=len(self.info.outputs))


def build_query(info: QueryInfo, analyzed: AnalyzedApp, context: Context,
                scheduler_index: SchedulerIndex,
                compiler: Callable[..., ExpressionCompiler] = ExpressionCompiler) -> QueryRuntime:
    """The runtime of one supported single-stream query (see :func:`unsupported_reason`);
    ``compiler`` makes its expression compilers (one that knows the tables for ``in T``)."""
    reason = unsupported_reason(info)
    if reason is not None:
        raise UnsupportedQuery(info.id, reason)
    try:
        return QueryBuilder(info, analyzed, context, scheduler_index, compiler).build()
    except CompileError as error:
        raise UnsupportedQuery(info.id, str(error)) from error


def _added_width(handler: ast.StreamHandler) -> int:
    """How many attributes a handler appends to the events (``pol2Cart``: x, y [, z])."""
    if isinstance(handler, ast.StreamFunction) and handler.name == "pol2Cart":
        return 3 if len(handler.args) == 3 else 2
    return 0


def _combine_mode(current: str, update: str) -> str:
    """``ProcessingMode.findUpdatedProcessingMode`` of the reference."""
    if update == "BATCH":
        return current
    if update == "SLIDE":
        return "SLIDE"
    if update == "RESET":
        return "RESET" if current in ("RESET", "BATCH") else current
    if update == "HOP":
        return "HOP" if current in ("BATCH", "RESET", "HOP") else "SLIDE"
    if update == "GROUP":
        return "GROUP" if current in ("BATCH", "RESET", "GROUP") else "SLIDE"
    return current


def _count(expr: ast.Expression | None) -> int | None:
    if expr is None:
        return None
    value = constant_value(expr)
    return int(value) if isinstance(value, (int, float)) else None


def _projector(items: list[tuple[str, Any]]) -> Callable[[Any], tuple[Any, ...]]:
    """One generated function building the output row, without a per-attribute loop."""
    namespace: dict[str, Any] = {}
    parts = []
    for i, (kind, value) in enumerate(items):
        if kind == "var":
            parts.append(f"d[{int(value)}]")
        else:
            namespace[f"f{i}"] = value
            parts.append(f"f{i}(e)")
    source = "def project(e):\n    d = e[2]\n    return (" + ", ".join(parts) + \
        ("," if len(parts) == 1 else "") + ")\n"
    exec(compile(source, "<eddy selector>", "exec"), namespace)  # noqa: S102 - generated
    project: Callable[[Any], tuple[Any, ...]] = namespace["project"]
    return project
