"""The base values of an incremental aggregation, and how its selection is computed from them.

As in the reference (``query/selector/attribute/aggregator/incremental``), each aggregate
of ``define aggregation … select`` is kept as *base values* that roll up from seconds to
years and merge across shards:

- ``sum(x)`` keeps ``AGG_SUM_x``; ``count()`` keeps ``AGG_COUNT`` (one column shared by every
  count and avg, counting events); ``avg(x)`` keeps ``AGG_SUM_x`` and ``AGG_COUNT`` and is
  ``AGG_SUM_x / AGG_COUNT`` at retrieval; ``min(x)``/``max(x)`` keep ``AGG_MIN_x``/``AGG_MAX_x``;
  ``distinctCount(x)`` keeps ``AGG_SET_x`` (the set of values) and is its size.
- Identical base columns are shared (``avg(price)`` and ``sum(price)`` use one ``AGG_SUM_price``).
- Plain attributes (group-by ones, and any other) are "last value": the data of the bucket's
  event with the latest event time (ties go to the later arrival) is kept, and every
  non-aggregate part of the selection is computed from it.

A row's values are ``[last_time, last_data, base_0, base_1, …]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.formatter import format_expression
from eddy.lang.walk import walk_expression
from eddy.runtime.context import Context
from eddy.runtime.events import CURRENT
from eddy.runtime.expressions import CompileError, ExpressionCompiler

__all__ = ["BaseColumn", "BasePlan"]

Getter = Callable[[Any], Any]

_FLOATING = (AttrType.FLOAT, AttrType.DOUBLE)


@dataclass(frozen=True)
class BaseColumn:
    """One base column: ``kind`` is SUM, COUNT, MIN, MAX or SET; ``name`` the WSO2 column
    name (``AGG_SUM_price``); ``arg`` reads its argument from an input event."""

    kind: str
    name: str
    arg: Getter | None
    floating: bool = False
    type: AttrType = AttrType.LONG
    """The argument's type (LONG for ``count()``): the column type of a stored row."""


def _column_suffix(expr: ast.Expression) -> str:
    if isinstance(expr, ast.Variable):
        return expr.attribute
    return "".join(c if c.isalnum() else "_" for c in format_expression(expr))


class BasePlan:
    """The base columns of one aggregation and the closures that fill, merge and finish
    them."""

    def __init__(self, selector: ast.Selector, attributes: Sequence[ast.Attribute],
                 type_of: Callable[[ast.Expression], AttrType],
                 position_of: Callable[[ast.Variable], int], context: Context) -> None:
        self.columns: list[BaseColumn] = []
        self._index: dict[tuple[str, str], int] = {}
        self.type_of = type_of
        arg_compiler = ExpressionCompiler(type_of, position_of, context)
        self._arg_compiler = arg_compiler
        items = selector.attributes
        if items is None:  # 'select *': every input attribute as its last value
            self.outputs: list[Getter] = [_last_data(i) for i in range(len(attributes))]
            return
        for item in items:
            for expr in walk_expression(item.expression):
                if isinstance(expr, ast.FunctionCall) and expr.namespace is None and \
                        expr.name in ("sum", "avg", "count", "min", "max", "distinctCount"):
                    self._bases_of(expr)
        final = _FinalCompiler(self, type_of, position_of, context)
        self.outputs = [final.compile(item.expression) for item in items]

    # -- planning ------------------------------------------------------------------------------
    def _column(self, kind: str, arg: ast.Expression | None) -> int:
        suffix = _column_suffix(arg) if arg is not None else ""
        key = (kind, suffix)
        found = self._index.get(key)
        if found is not None:
            return found
        getter = self._arg_compiler.compile(arg) if arg is not None else None
        arg_type = self.type_of(arg) if arg is not None else AttrType.LONG
        floating = arg_type in _FLOATING
        name = f"AGG_{kind}_{suffix}" if arg is not None else f"AGG_{kind}"
        self._index[key] = len(self.columns)
        self.columns.append(BaseColumn(kind, name, getter, floating, arg_type))
        return self._index[key]

    def _bases_of(self, call: ast.FunctionCall) -> list[int]:
        arg = call.args[0] if call.args else None
        if call.name == "count":
            return [self._column("COUNT", None)]
        if arg is None:
            raise CompileError(f"'{call.name}()' needs an argument in an aggregation")
        if call.name == "avg":
            return [self._column("SUM", arg), self._column("COUNT", None)]
        kind = {"sum": "SUM", "min": "MIN", "max": "MAX", "distinctCount": "SET"}[call.name]
        return [self._column(kind, arg)]

    def final(self, call: ast.FunctionCall) -> Callable[[list[Any]], Any]:
        """Computes the aggregate ``call`` from a row's values."""
        offsets = [2 + i for i in self._bases_of(call)]
        if call.name == "avg":
            total, count = offsets

            def average(values: list[Any]) -> Any:
                if values[total] is None or not values[count]:
                    return None
                return values[total] / values[count]
            return average
        only = offsets[0]
        if call.name == "distinctCount":
            return lambda values: len(values[only])
        return lambda values: values[only]

    # -- rows ------------------------------------------------------------------------------------
    def new_row(self) -> list[Any]:
        """The values of a bucket no event has reached."""
        row: list[Any] = [None, None]
        for column in self.columns:
            row.append(0 if column.kind == "COUNT" else set() if column.kind == "SET" else None)
        return row

    def add(self, row: list[Any], event: Any, time: int) -> None:
        """Adds one input event (at event time ``time``) to ``row``."""
        if row[0] is None or time >= row[0]:
            row[0] = time
            row[1] = event[2]
        for i, column in enumerate(self.columns, 2):
            kind = column.kind
            if kind == "COUNT":
                row[i] += 1
                continue
            assert column.arg is not None
            value = column.arg(event)
            if kind == "SET":
                row[i].add(value)
            elif value is None:
                continue
            elif kind == "SUM":
                value = float(value) if column.floating else value
                row[i] = value if row[i] is None else row[i] + value
            elif kind == "MIN":
                row[i] = value if row[i] is None or value < row[i] else row[i]
            else:
                row[i] = value if row[i] is None or value > row[i] else row[i]

    def merge(self, into: list[Any], other: list[Any]) -> None:
        """Merges the values ``other`` into ``into`` (roll-ups, shards, late rows)."""
        if other[0] is not None and (into[0] is None or other[0] >= into[0]):
            into[0], into[1] = other[0], other[1]
        for i, column in enumerate(self.columns, 2):
            value = other[i]
            kind = column.kind
            if kind == "SET":
                into[i] = into[i] | value
            elif value is None:
                continue
            elif into[i] is None:
                into[i] = value
            elif kind in ("SUM", "COUNT"):
                into[i] = into[i] + value
            elif kind == "MIN":
                into[i] = min(into[i], value)
            else:
                into[i] = max(into[i], value)

    def copy(self, row: list[Any]) -> list[Any]:
        """A copy of ``row`` that merging into leaves ``row`` alone."""
        return [set(v) if isinstance(v, set) else v for v in row]

    def select(self, timestamp: int, row: list[Any]) -> tuple[Any, ...]:
        """The aggregation's visible row: ``AGG_TIMESTAMP`` and its selected attributes."""
        context = (CURRENT, timestamp, row[1], row)
        return (timestamp,) + tuple(output(context) for output in self.outputs)


def _last_data(position: int) -> Getter:
    return lambda context: context[2][position]


class _FinalCompiler(ExpressionCompiler):
    """Compiles a selected expression over ``(CURRENT, AGG_TIMESTAMP, last_data, values)``:
    variables read the last event's data, aggregates the row's base values."""

    def __init__(self, plan: BasePlan, type_of: Callable[[ast.Expression], AttrType],
                 position_of: Callable[[ast.Variable], int], context: Context) -> None:
        super().__init__(type_of, position_of, context)
        self.plan = plan

    def _aggregate(self, call: ast.FunctionCall, resolve: Callable[[ast.Variable], Getter],
                   per_group: bool = True) -> Getter:
        if call.namespace is not None or call.name not in (
                "sum", "avg", "count", "min", "max", "distinctCount"):
            raise CompileError(f"'{call.name}' cannot be used in an aggregation definition")
        final = self.plan.final(call)
        return lambda context: final(context[3])
