"""Which pattern queries the vectorised followed-by operator runs, and what it needs to know.

The shape is the seed's query-2 and its kin::

    from every e1=S1[f1] -> e2=S2[c] within t select <e1/e2 attributes> insert into Out;

(or without ``every``: the first match only; or completed by either of two states,
``-> (e2=S2[c2] or e3=S3[c3])``), optionally a query of a
``partition with (k of S1[, k of S2])`` value partition, over its streams or an inner stream
``#T`` whose filler selects the partition's attribute (the key of each ``#T`` event).
Each ``e1`` starts a partial match that the first later ``S2`` event meeting ``c`` completes,
unless ``within`` dropped it first (:mod:`.matching` says when exactly). ``c`` is split into
its conjuncts: ``e1.a == b`` equalities of integral, string or bool attributes become the
match key (the index DESIGN.md §4 asks for), conjuncts that read ``e2`` alone run in Spark
SQL, the rest as numpy columns (:mod:`eddy.engine.operators.columnar_expressions`). The selection
is plain attributes of ``e1`` and ``e2``. Anything else — other pattern shapes, ``in`` a
table, rate limiting, ``group by`` — stays in the per-event runtime (and with it the app's
tables, named windows and aggregations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import Node, NotColumnar, compile_columnar
from eddy.engine.operators.operator_columns import OperatorColumns, Selected, state_of
from eddy.engine.operators.operator_part import order_prefix as junction_order
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import Scope, SemanticError, Source
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical.heads import inner_key
from eddy.runtime.pattern.index import conjuncts

_KEY_TYPES = (AttrType.INT, AttrType.LONG, AttrType.STRING, AttrType.BOOL)
FIRST, SECOND = "a", "b"
"""Column prefixes of ``e1``'s and ``e2``'s attributes in the operator's rows."""
SIDES = (SECOND, "c")
"""Column prefixes of the completing states': ``e2``, and ``e3`` of ``(e2 or e3)``."""


@dataclass(frozen=True)
class Side:
    """How an event completes a match through one completing state: ``keys`` pairs an
    ``e1`` column with the state's column it must equal, ``residual`` is the rest of the
    state's condition that reads ``e1`` (None: nothing)."""

    keys: tuple[tuple[str, str], ...]
    residual: Node | None


@dataclass(frozen=True)
class FollowedBySpec:
    """What the operator needs, as plain data (pickled to Spark's Python workers).

    ``columns`` are the operator's attribute columns with their types (``a<i>`` for
    ``e1``, ``b<i>`` for ``e2``) and ``physical`` the row column each is read from (the
    same for ``e1.x`` and ``e2.x`` of one stream, so it crosses into Python once); ``keys``
    pairs an ``e1`` column with the ``e2`` column it must equal; ``residual`` is the rest of
    ``c`` that reads ``e1``; ``within`` is in ms; ``every`` False: only the first ``S1``
    event that passes ``f`` starts a match (per instance, ever); ``right`` is ``e3`` of
    ``e1 -> (e2 or e3)``, whose attributes are ``c<i>``."""

    within: int | None
    partitioned: bool
    columns: tuple[tuple[str, AttrType], ...]
    physical: tuple[tuple[str, str], ...]
    keys: tuple[tuple[str, str], ...]
    residual: Node | None
    selected: tuple[Selected, ...]
    order_prefix: tuple[int, ...]
    every: bool = True
    right: Side | None = None

    def sides(self) -> tuple[Side, ...]:
        """The completing states: ``e2``, then ``e3`` of ``(e2 or e3)``."""
        return (Side(self.keys, self.residual), *(() if self.right is None else (self.right,)))


@dataclass(frozen=True)
class FollowedByPlan:
    """A query the operator runs and how its rows are made from the group's input: the
    Spark-side parts (filters over one event, the partition attributes) stay AST."""

    info: QueryInfo
    first: str
    second: str
    first_filters: tuple[ast.Expression, ...]
    second_filters: tuple[ast.Expression, ...]
    partition_attributes: dict[str, str]
    attributes: dict[str, tuple[str, str]]  # operator column -> (stream, attribute)
    spec: FollowedBySpec
    right: str | None = None
    right_filters: tuple[ast.Expression, ...] = ()

    def spark_filters(self) -> tuple[ast.Expression, ...]:
        """Every condition that runs in Spark SQL."""
        return (*self.first_filters, *self.second_filters, *self.right_filters)


def plan_followed_by(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                     layout: InputLayout) -> FollowedByPlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one query of the shape
    above, else None."""
    found = per_match_query(rest, "pattern")
    if found is None:
        return None
    info, stream = found
    states = _states(stream.state)
    if states is None or len(info.scope.sources) != 1 + len(states[2]):
        return None
    every, first, seconds = states
    streams = {read_name(first.stream), *(read_name(s.stream) for s in seconds)}
    if not streams <= set(dict(layout.streams)):
        return None
    partition = partition_of(analyzed, info, streams)
    if partition is None:
        return None
    try:
        return _plan(analyzed, info, stream, every, first, seconds, partition)
    except (NotColumnar, SemanticError):
        return None


def per_match_query(rest: Sequence[QueryInfo], kind: str
                    ) -> tuple[QueryInfo, ast.StateInputStream] | None:
    """The one query of ``rest`` (the group's non-native queries) and its input, when it is a
    ``kind`` (``pattern`` or ``sequence``) query that :func:`selects_per_match`, else None."""
    if len(rest) != 1:
        return None
    info = rest[0]
    stream = info.query.input
    if not (isinstance(stream, ast.StateInputStream) and stream.kind == kind
            and selects_per_match(info)):
        return None
    return info, stream


def selects_per_match(info: QueryInfo) -> bool:
    """Whether a pattern or sequence query inserts one current event per match into a
    stream: a selection without aggregates, grouping, ordering, limits or rate limiting."""
    query, selector = info.query, info.query.selector
    return (isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind in ("stream", "inner") and query.output.event_type == "current"
            and query.output_rate is None and not selector.group_by
            and selector.having is None and not selector.order_by
            and selector.limit is None and selector.offset is None
            and selector.attributes is not None and not info.aggregates)


def _states(state: ast.StateElement) -> tuple[bool, ast.StreamStateElement,
                                              list[ast.StreamStateElement]] | None:
    """``[every] e1=S1[f] -> e2=S2[c]``'s (or ``… -> (e2=S2[c] or e3=S3[d])``'s) ``every``,
    first state and completing states, or None for any other shape."""
    if not isinstance(state, ast.NextStateElement):
        return None
    first = state.element
    every = isinstance(first, ast.EveryStateElement)
    if isinstance(first, ast.EveryStateElement):
        first = first.element
    second = state.next
    seconds = [second.left, second.right] if isinstance(second, ast.LogicalStateElement) \
        and second.op == "or" else [second]
    if not all(type(s) is ast.StreamStateElement for s in (first, *seconds)):
        return None
    plain = [s for s in (first, *seconds) if isinstance(s, ast.StreamStateElement)]
    if not all(filtered_only(s.stream, inner=True) for s in plain):
        return None
    return every, plain[0], plain[1:]


def filtered_only(stream: ast.SingleInputStream, *, inner: bool = False) -> bool:
    """Whether a state reads an input stream through filters alone (no window, function or
    fault stream; ``inner``: a partition's inner stream too, read as ``#T``)."""
    return not ((stream.inner and not inner) or stream.fault) and \
        all(isinstance(h, ast.Filter) for h in stream.handlers)


def read_name(stream: ast.SingleInputStream) -> str:
    """The stream a state reads as the rows name it: ``#T`` for a partition's inner one."""
    return f"#{stream.stream}" if stream.inner else stream.stream


def partition_of(analyzed: AnalyzedApp, info: QueryInfo,
                 streams: set[str]) -> dict[str, str] | None:
    """Stream → partition attribute (empty: unpartitioned); None when the partition is not a
    value partition by a plain attribute of every stream the pattern reads (of an inner
    stream ``#T``: the attribute its filler selected the key into,
    :func:`~eddy.plan.physical.heads.inner_key`)."""
    if info.partition is None:
        return {}
    attributes: dict[str, str] = {}
    for ptype in analyzed.partition(info.partition).partition.partition_types:
        if not (isinstance(ptype, ast.ValuePartitionType)
                and isinstance(ptype.expression, ast.Variable)):
            return None
        attributes[ptype.stream] = ptype.expression.attribute
    for stream in streams - set(attributes):  # an inner stream: its key's attribute
        key = inner_key(analyzed, info, stream)
        if key is None:
            return None
        attributes[stream] = key
    for stream in streams:
        kind = next(a.type for a in analyzed.read_stream(stream, info.partition).attributes
                    if a.name == attributes[stream])
        if kind not in _KEY_TYPES:
            return None  # a double's key is Java's toString: left to the runtime
    return {s: attributes[s] for s in sorted(streams)}


def _plan(analyzed: AnalyzedApp, info: QueryInfo, stream: ast.StateInputStream, every: bool,
          first: ast.StreamStateElement, seconds: Sequence[ast.StreamStateElement],
          partition: dict[str, str]) -> FollowedByPlan | None:
    scope = info.scope
    sources = scope.sources
    named = OperatorColumns(sources, (FIRST, *SIDES[:len(seconds)]),
                            [read_name(s.stream) for s in (first, *seconds)])
    first_scope = scope.with_current(sources[0])
    first_filters = state_filters(first.stream)
    if any(states_read(f, first_scope, sources) - {0} for f in first_filters):
        return None
    split = [completing_side(analyzed, named, scope, 1 + j, element)
             for j, element in enumerate(seconds)]
    if None in split:
        return None
    sides = [s for s in split if s is not None]
    selected = named.selection(info)
    if selected is None:
        return None
    within = stream.within.millis if stream.within is not None else None
    (left, alone), right = sides[0], sides[1:]
    spec = FollowedBySpec(within, bool(partition), tuple(named.types.items()),
                          tuple(named.physical.items()), left.keys, left.residual,
                          selected, order_prefix(analyzed, info), every,
                          right[0][0] if right else None)
    return FollowedByPlan(info, read_name(first.stream), read_name(seconds[0].stream),
                          tuple(first_filters), alone, partition, named.attributes, spec,
                          read_name(seconds[1].stream) if right else None,
                          right[0][1] if right else ())


def completing_side(analyzed: AnalyzedApp, named: OperatorColumns, scope: Scope, state: int,
                    element: ast.StreamStateElement | ast.AbsentStreamStateElement
                    ) -> tuple[Side, tuple[ast.Expression, ...]] | None:
    """A completing state's conditions split: ``e1.a == b`` keys and the residual (reading
    ``e1``) for the kernel, and the conjuncts on its own event alone for Spark SQL; None
    when a conjunct reads another completing state or something no state's."""
    current = scope.with_current(scope.sources[state])
    keys: list[tuple[str, str]] = []
    alone: list[ast.Expression] = []
    residual: Node | None = None
    for part in (c for f in state_filters(element.stream) for c in conjuncts(f)):
        reads = states_read(part, current, scope.sources)
        pair = key_pair(part, current, scope.sources, (0, state))
        if pair is not None:
            keys.append((named.column(0, pair[0]), named.column(state, pair[1])))
        elif reads <= {state}:
            alone.append(part)
        elif reads <= {0, state}:
            node = compile_columnar(part, analyzed.type_of, named.resolver(current))
            residual = node if residual is None else \
                Node("and", AttrType.BOOL, (residual, node))
        else:
            return None
    return Side(tuple(keys), residual), tuple(alone)


def state_filters(stream: ast.SingleInputStream) -> list[ast.Expression]:
    """The filter conditions of a state's stream (see :func:`filtered_only`)."""
    return [h.expression for h in stream.handlers if isinstance(h, ast.Filter)]


def states_read(expr: ast.Expression, scope: Scope, sources: Sequence[Source]) -> set[int]:
    """The states whose events ``expr`` reads (-1: something that is no state's)."""
    from eddy.lang.walk import walk_expression

    states: set[int] = set()
    for node in walk_expression(expr):
        if isinstance(node, ast.Variable):
            state = state_of(scope.resolve(node).source, sources)
            states.add(-1 if state is None else state)
        elif isinstance(node, (ast.IsNullStream, ast.FunctionCall)):
            states.add(-1)
    return states


def key_pair(part: ast.Expression, scope: Scope, sources: Sequence[Source],
             states: tuple[int, int] = (0, 1)) -> tuple[ast.Attribute, ast.Attribute] | None:
    """``e1.a == b`` (either way round) with both of one key type: (e1's, e2's) attribute
    (for a join: the left's and the right's; ``states`` the sources they are of)."""
    if not (isinstance(part, ast.BinaryOperation) and part.op == "=="
            and isinstance(part.left, ast.Variable) and isinstance(part.right, ast.Variable)
            and part.left.stream_index is None and part.right.stream_index is None):
        return None
    left, right = scope.resolve(part.left), scope.resolve(part.right)
    sides = {state_of(left.source, sources): left.attribute,
             state_of(right.source, sources): right.attribute}
    if set(sides) != set(states):
        return None
    a, b = sides[states[0]], sides[states[1]]
    integral = {a.type, b.type} <= {AttrType.INT, AttrType.LONG}
    if not (integral or (a.type == b.type and a.type in _KEY_TYPES)):
        return None
    return a, b


def order_prefix(analyzed: AnalyzedApp, info: QueryInfo) -> tuple[int, ...]:
    """The ``_order`` the runtime gives the query's outputs, up to the output's position
    (:func:`~eddy.engine.operators.operator_part.order_prefix`, from the group's input)."""
    return junction_order(info, analyzed.place(info))