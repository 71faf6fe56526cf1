"""Which sequence queries the vectorised sequence operator runs, and what it needs to know.

The shape is a chain of plain states, the first under ``every`` (or none at all)::

    from every e1=S1[f1], e2=S2[f2], ..., en=Sn[fn] within t
    select <expressions of e1..en> insert into Out;

optionally the only query of a ``partition with (k of S1, ...)`` value partition by plain
integral, string or bool attributes. In a sequence each state must take the very next event
of the instance (:mod:`.matching` says why), so a match is a run of ``n`` consecutive rows and
no search is needed. Each ``fk`` is split into its conjuncts: those that read ``ek`` alone run
in Spark SQL, the rest (reading earlier states) as numpy columns
(:mod:`eddy.engine.operators.columnar_expressions`). Counting states (``*``, ``+``, ``<m:n>``),
logical and absent states, ``every`` around a group, rate limiting, ``group by`` and tables
stay in the per-event runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import Node, NotColumnar, compile_columnar
from eddy.engine.operators.followed_by.plan import (
    filtered_only,
    order_prefix,
    partition_of,
    per_match_query,
    state_filters,
    states_read,
)
from eddy.engine.operators.operator_columns import OperatorColumns, Selected
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import SemanticError
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.runtime.pattern.index import conjuncts

MAX_STATES = 8
PREFIXES = "abcdefgh"
"""The column prefix of each state's attributes in the operator's rows."""


def passes(state: int) -> str:
    """The row column saying an event is of state ``state``'s stream and passes the
    conjuncts of its filter that read it alone."""
    return f"_p{state}"


def arrives(state: int) -> str:
    """The row column saying an event is of state ``state``'s stream (whether or not it
    passes the state's conditions)."""
    return f"_a{state}"


@dataclass(frozen=True)
class SequenceSpec:
    """What the operator needs, as plain data (pickled to Spark's Python workers).

    ``columns`` are the operator's attribute columns with their types (``a<i>`` for ``e1``,
    ``b<i>`` for ``e2``, …) and ``physical`` the row column each is read from (one per
    stream attribute, however many states read it); ``residuals[k]`` is the part of state
    ``k``'s filter that reads earlier states (None: nothing); ``every`` says whether each
    event may start a match (else only an instance's first event does); ``within`` is in
    ms; ``logical`` ``and``/``or`` when the first two states are one logical state
    ``(e1 and|or e2)`` (:mod:`eddy.engine.operators.logical`)."""

    states: int
    every: bool
    within: int | None
    partitioned: bool
    columns: tuple[tuple[str, AttrType], ...]
    physical: tuple[tuple[str, str], ...]
    residuals: tuple[Node | None, ...]
    selected: tuple[Selected, ...]
    order_prefix: tuple[int, ...]
    logical: str | None = None


@dataclass(frozen=True)
class SequencePlan:
    """A query the operator runs and how its rows are made from the group's input: the
    Spark-side parts (each state's conditions on its own event, the partition attributes)
    stay AST."""

    info: QueryInfo
    streams: tuple[str, ...]
    filters: tuple[tuple[ast.Expression, ...], ...]
    partition_attributes: dict[str, str]
    attributes: dict[str, tuple[str, str]]  # physical column -> (stream, attribute)
    spec: SequenceSpec

    def spark_filters(self) -> tuple[ast.Expression, ...]:
        """Every condition that runs in Spark SQL."""
        return tuple(f for filters in self.filters for f in filters)


def plan_sequence(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                  layout: InputLayout) -> SequencePlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one query of the shape
    above, else None."""
    found = per_match_query(rest, "sequence")
    if found is None:
        return None
    info, stream = found
    chain = chain_states(stream.state)
    if chain is None or len(info.scope.sources) != len(chain[1]):
        return None
    every, states = chain
    within = stream.within.millis if stream.within is not None else None
    return chain_plan(analyzed, info, every, within, states, layout)


def chain_plan(analyzed: AnalyzedApp, info: QueryInfo, every: bool, within: int | None,
               states: Sequence[ast.StreamStateElement], layout: InputLayout,
               *, residuals: bool = True, logical: str | None = None) -> SequencePlan | None:
    """The plan of a chain of plain states reading streams of ``layout``, optionally the
    only query of a value partition by plain key attributes of them (None: not such a
    chain; ``residuals`` False: also when a condition reads an earlier state; ``logical``:
    the spec's, see :class:`SequenceSpec`)."""
    streams = tuple(s.stream.stream for s in states)
    if not set(streams) <= set(dict(layout.streams)):
        return None
    partition = partition_of(analyzed, info, set(streams))
    if partition is None:
        return None
    try:
        plan = _plan(analyzed, info, every, within, states, partition, logical)
    except (NotColumnar, SemanticError):
        return None
    if plan is not None and not residuals and any(plan.spec.residuals):
        return None
    return plan


def chain_states(state: ast.StateElement) -> tuple[bool, list[ast.StreamStateElement]] | None:
    """``[every] e1=S1[f1], …, en=Sn[fn]``'s ``every`` and states, or None for any other
    shape."""
    states: list[ast.StreamStateElement] = []
    every = False
    while isinstance(state, ast.NextStateElement):
        element = state.element
        if not states and isinstance(element, ast.EveryStateElement):
            every, element = True, element.element
        if type(element) is not ast.StreamStateElement:
            return None
        states.append(element)
        state = state.next
    if type(state) is not ast.StreamStateElement or not 1 <= len(states) < MAX_STATES:
        return None
    states.append(state)
    if not all(filtered_only(s.stream) for s in states):
        return None
    return every, states


def _plan(analyzed: AnalyzedApp, info: QueryInfo, every: bool, within: int | None,
          states: Sequence[ast.StreamStateElement],
          partition: dict[str, str], logical: str | None) -> SequencePlan | None:
    scope = info.scope
    sources = scope.sources
    named = OperatorColumns(sources, PREFIXES[:len(states)])
    alone: list[tuple[ast.Expression, ...]] = []
    residuals: list[Node | None] = []
    for k, state in enumerate(states):
        current = scope.with_current(sources[k])
        own: list[ast.Expression] = []
        residual: Node | None = None
        for part in (c for f in state_filters(state.stream) for c in conjuncts(f)):
            reads = states_read(part, current, sources)
            if reads <= {k}:
                own.append(part)
                continue
            if not reads <= set(range(k + 1)):
                return None  # a later state's (null here) or something no state's
            node = compile_columnar(part, analyzed.type_of, named.resolver(current))
            residual = node if residual is None else \
                Node("and", AttrType.BOOL, (residual, node))
        alone.append(tuple(own))
        residuals.append(residual)
    selected = named.selection(info, analyzed.type_of)
    if selected is None:
        return None
    spec = SequenceSpec(len(states), every, within, bool(partition),
                        tuple(named.types.items()), tuple(named.physical.items()),
                        tuple(residuals), selected, order_prefix(analyzed, info), logical)
    return SequencePlan(info, tuple(s.stream.stream for s in states), tuple(alone),
                        partition, named.attributes, spec)
