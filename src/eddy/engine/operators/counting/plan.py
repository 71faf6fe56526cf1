"""Which counting patterns the vectorised counting operator runs, and what it needs to know.

The shape is a counting first state followed by one plain state::

    from [every] e1=S1[f]<n:m> -> e2=S2[c] [within t]
    select <e1[i].x, e1[last].x, e1[last-k].x, e2.x …> insert into Out;

(``<n>`` for exactly ``n``, ``<n:>`` unbounded), ``S1`` and ``S2`` one stream or two,
optionally the only query of a ``partition with (k of S1, k of S2)`` value partition. ``f``
reads ``e1``'s own event only and runs in Spark SQL. ``c`` is split into its conjuncts: those
on ``e2`` alone run in Spark SQL, ``e1[i].a == b`` equalities (``i < n``: the first ``n``
events are fixed once the match may complete) become the match key, and the rest, reading
``e1[i]`` (``i < n``) and ``e2``, run as numpy columns. With ``within t`` (in the reference a
counting match that expires restarts its ``every``, so matches multiply with the data) the
operator walks the rows as the reference does (:mod:`.walk`). Anything else stays in the
per-event runtime: ``e1`` without an index in ``c`` (the chain's last event, which moves)
or in the selection (the list of all events), counting states elsewhere, sequences'
``*``/``+``/``?``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import Node, NotColumnar, compile_columnar
from eddy.engine.operators.followed_by.plan import (
    FIRST,
    SECOND,
    filtered_only,
    order_prefix,
    partition_of,
    per_match_query,
    state_filters,
    states_read,
)
from eddy.engine.operators.operator_columns import OperatorColumns, state_of
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import Scope, SemanticError
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import walk_expression
from eddy.runtime.pattern.index import conjuncts
from eddy.runtime.pattern.processors import MAX_COUNT

_KEY_TYPES = (AttrType.INT, AttrType.LONG, AttrType.STRING, AttrType.BOOL)


def at_index(column: str, index: int) -> str:
    """The name under which the kernel's expressions read ``e1``'s column ``column`` of the
    chain's event ``index``."""
    return f"{column}@{index}"


@dataclass(frozen=True)
class Picked:
    """One selected attribute: ``column`` of ``e2`` (``index`` None) or of ``e1``'s event
    ``index`` (from the chain's first, or with ``index < 0`` from its last: ``-1`` is
    ``[last]``); null when the chain has no such event."""

    name: str
    type: AttrType
    column: str
    index: int | None


@dataclass(frozen=True)
class CountingSpec:
    """What the operator needs, as plain data (pickled to Spark's Python workers).

    ``least``/``most`` are the count's bounds (``most`` the reference's ``Integer.MAX_VALUE``
    when unbounded); ``columns`` the operator's attribute columns with their types (``a<i>``
    for ``e1``'s, ``b<i>`` for ``e2``'s) and ``physical`` the row column each is read from;
    ``keys`` are ``(i, a, b)``: ``e1[i]``'s column ``a`` must equal ``e2``'s ``b``;
    ``residual`` is the rest of ``c`` reading ``e1`` (its ``e1[i]`` columns named by
    :func:`at_index`, listed in ``fixed`` as ``(name, i, column)``); ``within`` is in ms;
    ``one_stream``: ``S1`` and ``S2`` are one stream."""

    least: int
    most: int
    every: bool
    partitioned: bool
    columns: tuple[tuple[str, AttrType], ...]
    physical: tuple[tuple[str, str], ...]
    keys: tuple[tuple[int, str, str], ...]
    residual: Node | None
    fixed: tuple[tuple[str, int, str], ...]
    selected: tuple[Picked, ...]
    order_prefix: tuple[int, ...]
    within: int | None = None
    one_stream: bool = False


@dataclass(frozen=True)
class CountingPlan:
    """A query the operator runs and how its rows are made from the group's input: the
    Spark-side parts (the filters on one event, the partition attributes) stay AST. Its
    fields are those a followed-by plan gives
    :func:`~eddy.engine.operators.followed_by.spark.pattern_rows` (no ``e3``)."""

    info: QueryInfo
    first: str
    second: str
    first_filters: tuple[ast.Expression, ...]
    second_filters: tuple[ast.Expression, ...]
    partition_attributes: dict[str, str]
    attributes: dict[str, tuple[str, str]]  # physical column -> (stream, attribute)
    spec: CountingSpec
    right: str | None = None
    right_filters: tuple[ast.Expression, ...] = ()

    def spark_filters(self) -> tuple[ast.Expression, ...]:
        """Every condition that runs in Spark SQL."""
        return (*self.first_filters, *self.second_filters)


def plan_counting(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                  layout: InputLayout) -> CountingPlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one query of the shape
    above, else None."""
    found = per_match_query(rest, "pattern")
    if found is None:
        return None
    info, stream = found
    states = _states(stream.state)
    if states is None or len(info.scope.sources) != 2:
        return None
    every, count, second = states
    first = count.element
    streams = {first.stream.stream, second.stream.stream}
    if not streams <= set(dict(layout.streams)):
        return None
    partition = partition_of(analyzed, info, streams)
    if partition is None:
        return None
    within = stream.within.millis if stream.within is not None else None
    try:
        return _plan(analyzed, info, every, count, second, partition, within)
    except (NotColumnar, SemanticError):
        return None


def _states(state: ast.StateElement) -> tuple[bool, ast.CountStateElement,
                                              ast.StreamStateElement] | None:
    """``[every] e1=S1[f]<n:m> -> e2=S2[c]``'s ``every``, counting state and second state,
    or None for any other shape."""
    if not isinstance(state, ast.NextStateElement):
        return None
    count = state.element
    every = isinstance(count, ast.EveryStateElement)
    if isinstance(count, ast.EveryStateElement):
        count = count.element
    second = state.next
    if not (isinstance(count, ast.CountStateElement) and count.notation == "collect"
            and count.min_count >= 1 and type(count.element) is ast.StreamStateElement
            and type(second) is ast.StreamStateElement):
        return None
    if not (filtered_only(count.element.stream) and filtered_only(second.stream)):
        return None
    return every, count, second


def _plan(analyzed: AnalyzedApp, info: QueryInfo, every: bool, count: ast.CountStateElement,
          second: ast.StreamStateElement, partition: dict[str, str],
          within: int | None) -> CountingPlan | None:
    scope, sources = info.scope, info.scope.sources
    named = OperatorColumns(sources, (FIRST, SECOND))
    least = count.min_count
    first_scope = scope.with_current(sources[0])
    first_filters = state_filters(count.element.stream)
    if any(states_read(f, first_scope, sources) - {0} or _indexed(f)
           for f in first_filters):
        return None
    current = scope.with_current(sources[1])
    keys: list[tuple[int, str, str]] = []
    alone: list[ast.Expression] = []
    fixed: dict[str, tuple[int, str]] = {}
    residual: Node | None = None
    for part in (c for f in state_filters(second.stream) for c in conjuncts(f)):
        reads = states_read(part, current, sources)
        if reads <= {1} and not _indexed(part):
            alone.append(part)
            continue
        if not reads <= {0, 1} or not _fixed_only(part, current, least):
            return None  # something no state's, or e1's moving last event
        pair = _key_pair(part, current, named, least)
        if pair is not None:
            keys.append(pair)
            continue
        node = compile_columnar(part, analyzed.type_of, _resolver(current, named, fixed))
        residual = node if residual is None else Node("and", AttrType.BOOL, (residual, node))
    selected = _selection(info, named)
    if selected is None:
        return None
    most = MAX_COUNT if count.max_count is None else count.max_count
    spec = CountingSpec(least, most, every, bool(partition), tuple(named.types.items()),
                        tuple(named.physical.items()), tuple(keys), residual,
                        tuple((n, i, c) for n, (i, c) in fixed.items()), selected,
                        order_prefix(analyzed, info), within,
                        count.element.stream.stream == second.stream.stream)
    return CountingPlan(info, count.element.stream.stream, second.stream.stream,
                        tuple(first_filters), tuple(alone), partition, named.attributes, spec)


def _indexed(expr: ast.Expression) -> bool:
    """Whether ``expr`` reads an event by index (``e1[0].x``, ``e2[last].x``)."""
    return any(isinstance(n, ast.Variable) and n.stream_index is not None
               for n in walk_expression(expr))


def _fixed_only(expr: ast.Expression, scope: Scope, least: int) -> bool:
    """Whether every ``e1`` attribute ``expr`` reads is ``e1[i]`` with ``0 <= i < least``
    (fixed once the match may complete) and every ``e2`` one has no index."""
    for node in walk_expression(expr):
        if isinstance(node, ast.Variable):
            state = state_of(scope.resolve(node).source, scope.sources)
            index = node.stream_index
            if state == 0 and not (index is not None and 0 <= index < least):
                return False
            if state == 1 and index is not None:
                return False
    return True


def _key_pair(part: ast.Expression, scope: Scope, named: OperatorColumns,
              least: int) -> tuple[int, str, str] | None:
    """``e1[i].a == b`` (either way round, both of one key type): ``(i, a's column, b's
    column)``."""
    if not (isinstance(part, ast.BinaryOperation) and part.op == "=="
            and isinstance(part.left, ast.Variable) and isinstance(part.right, ast.Variable)):
        return None
    ends = {}
    for var in (part.left, part.right):
        resolved = scope.resolve(var)
        ends[state_of(resolved.source, scope.sources)] = (var.stream_index, resolved.attribute)
    if set(ends) != {0, 1}:
        return None
    (index, a), (_, b) = ends[0], ends[1]
    assert index is not None and 0 <= index < least  # checked by _fixed_only
    integral = {a.type, b.type} <= {AttrType.INT, AttrType.LONG}
    if not (integral or (a.type == b.type and a.type in _KEY_TYPES)):
        return None
    return index, named.column(0, a), named.column(1, b)


def _resolver(scope: Scope, named: OperatorColumns, fixed: dict[str, tuple[int, str]]
              ) -> Callable[[ast.Variable], str | None]:
    """Columns of ``e1[i]`` (named by :func:`at_index` and listed in ``fixed``) and ``e2``."""
    def column_of(var: ast.Variable) -> str | None:
        resolved = scope.resolve(var)
        state = state_of(resolved.source, scope.sources)
        if state is None:
            return None
        column = named.column(state, resolved.attribute)
        if state == 1:
            return column
        assert var.stream_index is not None
        name = at_index(column, var.stream_index)
        fixed[name] = (var.stream_index, column)
        return name
    return column_of


def _selection(info: QueryInfo, named: OperatorColumns) -> tuple[Picked, ...] | None:
    """The selection when it is ``e1[i].x``/``e1[last-k].x`` and plain ``e2`` attributes."""
    picked = []
    for item, out in zip(info.query.selector.attributes or (), info.outputs):
        expr = item.expression
        if not isinstance(expr, ast.Variable):
            return None
        resolved = info.scope.resolve(expr)
        state = state_of(resolved.source, info.scope.sources)
        if state is None or out.type is not resolved.attribute.type \
                or (state == 0) != (expr.stream_index is not None):
            return None  # e1 without an index is the list of its events
        picked.append(Picked(out.name, out.type, named.column(state, resolved.attribute),
                             expr.stream_index))
    return tuple(picked)
