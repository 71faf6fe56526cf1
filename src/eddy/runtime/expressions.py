"""Compiling a query's expressions to closures over runtime events.

:func:`eddy.runtime.evaluate.compile_python` does the Siddhi semantics; this module
tells it how to read an event (``(kind, ts, data)``: a variable is a position in ``data``)
and supplies what it cannot know: aggregate functions, whose value depends on the query's
aggregate state, and ``currentTimeMillis()``, which is the group's clock.

An aggregate compiles to a *step*: it adds the argument for a current event, removes it
for an expired one and drops all group states on a reset, returning the new value. It finds
its state table and the current group key through a :class:`~.selector.Frame` that the
selector points at its state before each chunk, so no closure holds state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.functions import REGISTRY
from eddy.runtime.aggregators import Aggregator, make_aggregator
from eddy.runtime.context import Context
from eddy.runtime.evaluate import compile_python
from eddy.runtime.events import CURRENT, EXPIRED, RESET
from eddy.runtime.selector import Frame

Getter = Callable[[Any], Any]
TypeOf = Callable[[ast.Expression], AttrType]


class CompileError(ValueError):
    """An expression the runtime cannot run (the query is then unsupported)."""


def is_aggregate_call(expr: ast.Expression) -> bool:
    return isinstance(expr, ast.FunctionCall) and REGISTRY.is_aggregate(expr.namespace,
                                                                        expr.name)


def data_getter(position: int) -> Getter:
    """Reads attribute ``position`` of an event's data."""
    def get(event: Any) -> Any:
        return event[2][position]
    return get


class ExpressionCompiler:
    """Compiles the expressions of one query (or one named window).

    ``position_of`` maps a variable to its position in the event data; ``frame`` and
    ``track_future`` are needed only where aggregates may appear; ``destroy_groups`` is
    true with ``group by`` (group states are dropped when empty).
    """

    def __init__(self, type_of: TypeOf, position_of: Callable[[ast.Variable], int],
                 context: Context, frame: Frame | None = None, track_future: bool = False,
                 destroy_groups: bool = False) -> None:
        self.type_of = type_of
        self.position_of = position_of
        self.context = context
        self.frame = frame
        self.track_future = track_future
        self.destroy_groups = destroy_groups
        self.slots: list[Aggregator] = []

    def compile(self, expr: ast.Expression, *, condition: bool = False,
                resolve: Callable[[ast.Variable], Getter] | None = None,
                per_group: bool = True) -> Getter:
        """A closure computing ``expr`` for an event (or a context ``resolve`` reads).

        ``per_group=False`` gives its aggregates one state for all groups: the reference
        parses a ``having`` condition without ``group by`` (``SelectorParser``), so outside a
        partition a ``having max(v) > 1`` aggregates over every group's events.
        """
        resolver = resolve or self._resolve
        try:
            return compile_python(expr, self.type_of, resolver, _event_time,
                                  override=lambda e: self._override(e, resolver, per_group),
                                  condition=condition)
        except (ValueError, KeyError) as error:
            raise CompileError(str(error)) from error

    def _resolve(self, var: ast.Variable) -> Getter:
        return data_getter(self.position_of(var))

    def _override(self, expr: ast.Expression, resolve: Callable[[ast.Variable], Getter],
                  per_group: bool = True) -> Getter | None:
        if isinstance(expr, ast.FunctionCall):
            if is_aggregate_call(expr):
                return self._aggregate(expr, resolve, per_group)
            if expr.name == "currentTimeMillis" and expr.namespace is None:
                context = self.context
                return lambda ctx: context.now
        if isinstance(expr, ast.In):
            raise CompileError("'in <table>' needs tables, which this runtime does not run yet")
        return None

    def _aggregate(self, call: ast.FunctionCall, resolve: Callable[[ast.Variable], Getter],
                   per_group: bool = True) -> Getter:
        if self.frame is None:
            raise CompileError(f"aggregate '{call.name}()' is not allowed here")
        if len(call.args) > 1:
            raise CompileError(f"aggregate '{call.name}()' takes at most one argument")
        arg_type = self.type_of(call.args[0]) if call.args else None
        aggregator = make_aggregator(call.name, arg_type, self.track_future)
        slot = len(self.slots)
        self.slots.append(aggregator)
        argument = self.compile(call.args[0], resolve=resolve, per_group=per_group) \
            if call.args else None
        return _step(self.frame, slot, aggregator, argument, self.destroy_groups, per_group)


def _event_time(event: Any) -> Any:
    return event[1]


def _step(frame: Frame, slot: int, aggregator: Aggregator, argument: Getter | None,
          destroy: bool, per_group: bool = True) -> Getter:
    """The closure that feeds one event to one aggregate and returns its value (its state
    is the current group's, or with ``per_group=False`` the one state of all groups)."""
    add, remove = aggregator.add, aggregator.remove
    new, can_destroy = aggregator.new, aggregator.can_destroy

    def step(event: Any) -> Any:
        kind = event[0]
        table = frame.aggs[slot]
        if kind == RESET:
            table.clear()
            return None
        value = argument(event) if argument is not None else None
        key = frame.key if per_group else None
        state = table.get(key)
        if state is None:
            state = table[key] = new()
        if kind == CURRENT:
            result = add(state, value)
        elif kind == EXPIRED:
            result = remove(state, value)
        else:
            return None
        if destroy and can_destroy(state):
            del table[key]
        return result

    return step
