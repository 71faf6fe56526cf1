"""The selector and rate limiter of a pattern query.

A completed match reaches the query's ordinary selector tail as an event ``(kind, ts,
match)``: its timestamp is the match's (the event that completed it, or the timer time of
an absent state), and its expressions read the match through
:class:`~eddy.runtime.pattern.references.PatternExpressions`. Chunk semantics,
aggregates, ``group by``, ``having``, ``order by``, ``limit``/``offset`` and rate limiting
are the single-stream query's (:mod:`eddy.runtime.selector`,
:mod:`eddy.runtime.ratelimit`); only how values are read differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.semantic import QueryInfo
from eddy.lang.typecheck import constant_value
from eddy.lang.walk import walk_states
from eddy.runtime.context import Context
from eddy.runtime.events import float_key
from eddy.runtime.expressions import CompileError, is_aggregate_call
from eddy.runtime.pattern.match import Match
from eddy.runtime.pattern.references import PatternExpressions, References
from eddy.runtime.query_builder import QueryBuilder, SchedulerIndex
from eddy.runtime.ratelimit import RateLimiter
from eddy.runtime.ratelimit_snapshot import output_event_type
from eddy.runtime.selector import Frame, OrderKey, Selector, SelectorPlan

Getter = Callable[[Any], Any]


def build_selector(info: QueryInfo, references: References, context: Context) -> Selector:
    """The query's selector over ``(kind, ts, match)`` events."""
    query = info.query
    selector = query.selector
    frame = Frame()
    group_by = bool(selector.group_by)
    expects_expired = output_event_type(query) != "current"
    compiler = PatternExpressions(references, context, frame, track_future=expects_expired,
                                  destroy_groups=group_by)
    items: list[Getter] = []
    aggregate_positions: list[int] = []
    for position, expression in enumerate(_selection(info)):
        items.append(compiler.selection(expression))
        if is_aggregate_call(expression):
            aggregate_positions.append(position)
    outputs = {out.name: i for i, out in enumerate(info.outputs)}
    selected = info.scope.with_outputs(info.outputs)

    def having_variable(var: ast.Variable) -> Getter:
        resolved = selected.resolve(var)
        if resolved.source.kind == "output":
            position = outputs[resolved.attribute.name]
            return lambda ctx: ctx[3][position]
        getter = references.variable(var, None)
        return lambda ctx: getter(ctx[2])

    having = None
    if selector.having is not None:
        having = compiler.selection(selector.having, condition=True, resolve=having_variable)
    order_by = []
    hidden: list[Getter] = []
    for order in selector.order_by:
        resolved = selected.resolve(order.variable)
        if resolved.source.kind == "output":
            position = outputs[resolved.attribute.name]
        else:
            # An input attribute that is not selected: a hidden projected value, as the
            # reference's order by falls back to the pattern's events.
            position = len(items) + len(hidden)
            hidden.append(compiler.selection(order.variable))
        order_by.append(OrderKey(position, not order.descending,
                                 resolved.attribute.type.value))
    rate = query.output_rate
    plan = SelectorPlan(
        project=_projector(items + hidden),
        having=having,
        group_key=_group_key(info, references),
        order_by=order_by,
        limit=_count(selector.limit),
        offset=_count(selector.offset),
        current_on=output_event_type(query) in ("current", "all"),
        expired_on=output_event_type(query) in ("expired", "all"),
        aggregates=info.aggregates,
        aggregate_slots=len(compiler.slots),
        batching=not (rate is not None and rate.unit == "snapshot"),
        aggregate_positions=aggregate_positions,
        visible=len(items) if hidden else None,
    )
    return Selector(plan, frame)


def _selection(info: QueryInfo) -> list[ast.Expression]:
    """The selected expressions; ``select *`` is every attribute of every state, by name."""
    attributes = info.query.selector.attributes
    if attributes is not None:
        return [item.expression for item in attributes]
    stream = info.query.input
    assert isinstance(stream, ast.StateInputStream)
    names = [a.name for a in info.outputs]
    absent = any(isinstance(s, ast.AbsentStreamStateElement) for s in walk_states(stream.state))
    if absent or len(set(names)) != len(names):
        # The reference fails on duplicate names, and lists absent states' attributes too.
        raise CompileError("'select *' in this pattern selects duplicate or absent states' "
                           "attributes; name the attributes")
    return [ast.Variable(name) for name in names]


def _group_key(info: QueryInfo, references: References) -> Getter | None:
    variables = info.query.selector.group_by
    if not variables:
        return None
    getters: list[Getter] = []
    for var in variables:
        floating = info.scope.resolve(var).type in (AttrType.FLOAT, AttrType.DOUBLE,
                                                    AttrType.OBJECT)
        getters.append(_key_part(references.variable(var, None), floating))
    if len(getters) == 1:
        return getters[0]
    return lambda event: tuple(g(event) for g in getters)


def _key_part(getter: Callable[[Match], Any], floating: bool) -> Getter:
    """One ``group by`` value of a ``(kind, ts, match)`` event; doubles keyed as Java does."""
    if floating:
        return lambda event: float_key(getter(event[2]))
    return lambda event: getter(event[2])


def _projector(items: list[Getter]) -> Callable[[Any], tuple[Any, ...]]:
    if len(items) == 1:
        (only,) = items
        return lambda event: (only(event),)
    if len(items) == 2:
        first, second = items
        return lambda event: (first(event), second(event))
    if len(items) == 3:
        a, b, c = items
        return lambda event: (a(event), b(event), c(event))
    return lambda event: tuple([f(event) for f in items])


def _count(expr: ast.Expression | None) -> int | None:
    if expr is None:
        return None
    value = constant_value(expr)
    return int(value) if isinstance(value, (int, float)) else None


class _LimiterFactory(QueryBuilder):
    """The single-stream builder's rate-limiter factory, without its single-stream setup."""

    def __init__(self, info: QueryInfo, context: Context,  # noqa: D107 - see class
                 scheduler_index: SchedulerIndex) -> None:
        self.info = info
        self.context = context
        self.scheduler_index = scheduler_index
        self.group_by = bool(info.query.selector.group_by)


def build_limiter(info: QueryInfo, context: Context, scheduler_index: SchedulerIndex,
                  selector: Selector) -> RateLimiter:
    """The query's output rate limiter, as for a single-stream query without a window."""
    return _LimiterFactory(info, context, scheduler_index)._limiter(False, selector.plan)
