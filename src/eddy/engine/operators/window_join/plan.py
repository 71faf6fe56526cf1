"""Which joins the vectorised window join runs, and what it needs to know.

The shape is ``from L[f]#window.length(n) [unidirectional] [left|right|full outer] join
R[g]#window.time(t) on c select <expressions of L and R> insert into Out`` — each side a
stream (not a table, named window or aggregation) with filters and then a ``length`` or
``time`` window or none (a side without a window holds nothing, as the reference's empty
window: it is a length window of 0), no partition in the app. Both sides may
read the same stream (a self join: each event reaches the left side and then the right one).
``c`` is split as a pattern's condition is (:mod:`eddy.engine.operators.followed_by.plan`):
``L.a == R.b`` equalities of integral, string or bool attributes become the match key, the rest
runs as numpy columns. Filters before the windows run in Spark SQL (an event they drop never
enters the window). A window's expired events join too (``insert expired|all events``) when
both windows are length windows: a length window's events expire on its own side's arrivals,
whose place in the input is known; a time window's on the clock's timers, which the operator
does not replay. An inner join of two streams' length windows (or none) may aggregate its
joined events (:class:`JoinAggregation`, run by :mod:`.aggregating`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import Node, NotColumnar, compile_columnar
from eddy.engine.operators.followed_by.plan import key_pair
from eddy.engine.operators.operator_columns import OperatorColumns, Selected
from eddy.engine.operators.window_aggregates.plan import selected_output
from eddy.engine.operators.window_aggregates.spec import Output
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.formatter import format_expression
from eddy.lang.scope import SemanticError
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.typecheck import constant_value
from eddy.runtime.pattern.index import conjuncts

LEFT, RIGHT = "l", "r"
"""Column prefixes of the two sides' attributes in the operator's rows."""


@dataclass(frozen=True)
class JoinAggregation:
    """A join's selection that aggregates: ``count()``, ``avg`` and ``sum`` of doubles over
    the joined events, per ``group by`` attributes of either side (the operator's selected
    columns ``groups``), beside plain values of the last event. ``arguments`` are the
    selected columns the aggregates read, ``outputs`` the query's attributes over those
    columns, ``events`` what the query inserts (the operator itself emits every joined
    event, expired ones too, which leave the aggregates)."""

    groups: tuple[str, ...]
    arguments: tuple[str, ...]
    outputs: tuple[Output, ...]
    events: str


@dataclass(frozen=True)
class WindowJoinSpec:
    """What the operator needs, as plain data (pickled to Spark's Python workers):
    ``windows`` are the two windows, ``("length", n)`` or ``("time", ms)``, ``columns``
    the operator's attribute columns (``l<i>``/``r<i>``) with their types, ``keys`` the
    (left, right) column pairs that must be equal, ``residual`` the rest of the ``on``
    condition, ``physical`` the row column each operator column is read from (a self join
    reads one for both sides), ``triggers`` and ``outer`` per side whether its events join
    (not the other side's ``unidirectional``) and whether one without a match is emitted with
    nulls for the other side, ``events`` the kinds inserted (``current``, ``expired``,
    ``all``)."""

    windows: tuple[tuple[str, int], tuple[str, int]]
    columns: tuple[tuple[str, AttrType], ...]
    keys: tuple[tuple[str, str], ...]
    residual: Node | None
    selected: tuple[Selected, ...]
    order_prefix: tuple[int, ...]
    physical: tuple[tuple[str, str], ...]
    triggers: tuple[bool, bool]
    outer: tuple[bool, bool]
    events: str
    aggregation: JoinAggregation | None = None

    @property
    def clocked(self) -> bool:
        """Whether the operator reads the group's clock: a time window expires on it, and an
        expired event is stamped with it."""
        return self.events != "current" or any(kind == "time" for kind, _ in self.windows)


@dataclass(frozen=True)
class WindowJoinPlan:
    """A join the operator runs: its streams, their Spark-side filters, and the spec."""

    info: QueryInfo
    streams: tuple[str, str]
    filters: tuple[tuple[ast.Expression, ...], tuple[ast.Expression, ...]]
    attributes: dict[str, tuple[str, str]]  # operator column -> (stream, attribute)
    spec: WindowJoinSpec


def plan_window_join(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                     layout: InputLayout) -> WindowJoinPlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one join of the shape
    above, else None."""
    if len(rest) != 1 or analyzed.partitions:
        return None
    info = rest[0]
    query, selector = info.query, info.query.selector
    join = query.input
    if not (isinstance(join, ast.JoinInputStream) and not join.within and join.per is None
            and isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind in ("stream", "inner") and query.output_rate is None
            and selector.having is None and not selector.order_by
            and selector.limit is None and selector.offset is None
            and selector.attributes is not None):
        return None
    sides = (join.left, join.right)
    if (info.aggregates or selector.group_by) and (
            join.left.stream == join.right.stream or any(join.outer_sides)):
        return None  # (a self join's two sides emit for one input row; outer: null keys)
    inputs = dict(layout.streams)
    if len(info.scope.sources) != 2 or any(s.stream not in inputs for s in sides) or \
            any(source.kind != "stream" for source in info.scope.sources):
        return None
    windows = [_window(side) for side in sides]
    if windows[0] is None or windows[1] is None:
        return None
    if (query.output.event_type != "current" or info.aggregates or selector.group_by) and \
            any(kind != "length" for kind, _ in (windows[0], windows[1])):
        return None  # (expired joins, which aggregates also take, of length windows only)
    try:
        return _plan(analyzed, info, join, (windows[0], windows[1]))
    except (NotColumnar, SemanticError):
        return None


def _window(side: ast.SingleInputStream) -> tuple[str, int] | None:
    """``("length", n)`` or ``("time", ms)`` of a side that is filters then
    ``#window.length(n)`` or ``#window.time(t)``, ``("length", 0)`` of one that is filters
    alone, else None."""
    if side.inner or side.fault:
        return None
    *filters, window = side.handlers or (None,)
    if window is None or isinstance(window, ast.Filter):
        return ("length", 0) if all(isinstance(h, ast.Filter) for h in side.handlers) else None
    if not (isinstance(window, ast.Window) and window.namespace is None
            and window.name in ("length", "time") and len(window.args) == 1
            and all(isinstance(f, ast.Filter) for f in filters)):
        return None
    size = constant_value(window.args[0])
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        return None
    return window.name, size


def _plan(analyzed: AnalyzedApp, info: QueryInfo, join: ast.JoinInputStream,
          windows: tuple[tuple[str, int], tuple[str, int]]) -> WindowJoinPlan | None:
    scope = info.scope
    sources = scope.sources
    named = OperatorColumns(sources, (LEFT, RIGHT))
    column, column_of = named.column, named.resolver(scope)
    keys: list[tuple[str, str]] = []
    residual: Node | None = None
    for part in conjuncts(join.on) if join.on is not None else []:
        pair = key_pair(part, scope, sources)
        if pair is not None:
            keys.append((column(0, pair[0]), column(1, pair[1])))
            continue
        node = compile_columnar(part, analyzed.type_of, column_of)
        residual = node if residual is None else Node("and", AttrType.BOOL, (residual, node))
    assert isinstance(info.query.output, ast.InsertIntoStream)
    events = info.query.output.event_type
    aggregation = None
    if info.aggregates or info.query.selector.group_by:
        found = _aggregation(analyzed, info, named, events)
        if found is None:
            return None
        (aggregation, selected), events = found, "all"  # the expired joins leave the sums
    else:
        plain = named.selection(info, analyzed.type_of)
        if plain is None:
            return None
        selected = plain
    filters = tuple(tuple(h.expression for h in side.handlers if isinstance(h, ast.Filter))
                    for side in (join.left, join.right))
    spec = WindowJoinSpec(windows, tuple(named.types.items()), tuple(keys), residual,
                          selected, (1, info.index, 0, 0), tuple(named.physical.items()),
                          (join.unidirectional != "right", join.unidirectional != "left"),
                          join.outer_sides, events, aggregation)
    return WindowJoinPlan(info, (join.left.stream, join.right.stream),
                          (filters[0], filters[1]), named.attributes, spec)


def _aggregation(analyzed: AnalyzedApp, info: QueryInfo, named: OperatorColumns,
                 events: str) -> tuple[JoinAggregation, tuple[Selected, ...]] | None:
    """The aggregation of a join that aggregates or groups into ``events``, and the columns
    the operator selects for it from each joined event (group keys, the aggregates'
    arguments and the plain values selected), when the vectorised aggregates compute it,
    else None."""
    selected: list[Selected] = []
    types: dict[str, AttrType] = {}
    by_text: dict[str, str] = {}

    def column_of(expr: ast.Expression) -> str | None:
        text = format_expression(expr)
        if text not in by_text:
            kind = analyzed.type_of(expr)
            one = named.selected(info, f"c{len(selected)}", kind, expr, analyzed.type_of)
            if one is None:
                return None
            selected.append(one)
            types[one.name], by_text[text] = kind, one.name
        return by_text[text]

    groups = []
    for var in info.query.selector.group_by:
        column = column_of(var)
        if column is None or types[column] in (AttrType.DOUBLE, AttrType.FLOAT):
            return None  # (double keys group by Double.equals: NaN, -0.0)
        groups.append(column)
    arguments: list[str] = []
    outputs = []
    for item, attribute in zip(info.query.selector.attributes or (), info.outputs):
        output = selected_output(item.expression, attribute.name, column_of, types, arguments)
        if output is None or output.type is not attribute.type:
            return None
        outputs.append(output)
    return JoinAggregation(tuple(groups), tuple(arguments), tuple(outputs), events), \
        tuple(selected)
