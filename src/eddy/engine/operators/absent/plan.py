"""Which pattern queries eddy's Java absent operator runs, and what it needs to know.

The shape is WSO2's heartbeat idiom::

    from every e1=S1[f] -> not S2[c] for t select <e1's attributes, eventTimestamp()> insert into Out;

(or without ``every``: the first ``e1`` only), without ``within``, both streams inputs of the
group, optionally the only query of a value partition by plain attributes of them (each
value its own instance, on the partition's keyed timers). ``f`` reads ``e1`` alone and runs in Spark SQL; ``c`` is split
as the followed-by splits its completing state's condition: ``e1.a == b`` equalities
become the key the pending matches are indexed by, conjuncts on the ``S2`` event alone run
in Spark SQL, the rest (reading ``e1``) in the operator. The selection is ``e1``'s plain
attributes and ``eventTimestamp()`` (a match goes out stamped with the timer that sent it).
Anything else — absent states elsewhere in a pattern, ``not S and e2=T``, sequences —
stays in the per-event runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import Node, NotColumnar
from eddy.engine.operators.followed_by.plan import (
    FIRST,
    SECOND,
    completing_side,
    filtered_only,
    partition_of,
    per_match_query,
    state_filters,
    states_read,
)
from eddy.engine.operators.operator_columns import OperatorColumns, Selected
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.inputs import source_of
from eddy.lang.scope import Scope, SemanticError
from eddy.lang.semantic import AnalyzedApp, QueryInfo

EMITTED_AT = "t"
"""The side of a selected ``eventTimestamp()``: the time of the timer that sends a match."""


@dataclass(frozen=True)
class AbsentSpec:
    """What the operator needs, as plain data: ``waiting`` the ``for`` time (ms),
    ``every`` whether every ``e1`` starts a match (else the first only), ``columns`` and
    ``physical`` as the followed-by's (``a<i>`` of ``e1``, ``b<i>`` of the ``S2`` event),
    ``keys`` and ``residual`` the split of ``c``, ``selected`` the outputs (side
    :data:`EMITTED_AT`: ``eventTimestamp()``), ``scheduler`` the absent state's scheduler
    number in the app (its timers' place in the outputs' order), ``partitioned`` whether
    each value of a partition has its own instance."""

    waiting: int
    every: bool
    partitioned: bool
    columns: tuple[tuple[str, AttrType], ...]
    physical: tuple[tuple[str, str], ...]
    keys: tuple[tuple[str, str], ...]
    residual: Node | None
    selected: tuple[Selected, ...]
    scheduler: int


@dataclass(frozen=True)
class AbsentPlan:
    """A query the operator runs: its streams and the filters that run in Spark SQL (AST),
    the attribute columns (operator column -> (stream, attribute)) and the spec."""

    info: QueryInfo
    first: str
    second: str
    first_filters: tuple[ast.Expression, ...]
    second_filters: tuple[ast.Expression, ...]
    second_scope: Scope
    attributes: dict[str, tuple[str, str]]
    partition_attributes: dict[str, str]
    spec: AbsentSpec

    def spark_filters(self) -> tuple[ast.Expression, ...]:
        """Every condition that runs in Spark SQL."""
        return (*self.first_filters, *self.second_filters)


def plan_absent(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                layout: InputLayout) -> AbsentPlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one query of the shape
    above, else None."""
    found = per_match_query(rest, "pattern")
    if found is None:
        return None
    info, stream = found
    state = stream.state
    if not (isinstance(state, ast.NextStateElement) and stream.within is None
            and len(info.scope.sources) == 1):
        return None
    first, absent = state.element, state.next
    every = isinstance(first, ast.EveryStateElement)
    if isinstance(first, ast.EveryStateElement):
        first = first.element
    if not (type(first) is ast.StreamStateElement and
            isinstance(absent, ast.AbsentStreamStateElement) and
            absent.waiting_time is not None and
            filtered_only(first.stream) and filtered_only(absent.stream)):
        return None
    streams = {first.stream.stream, absent.stream.stream}
    partition = partition_of(analyzed, info, streams)
    if partition is None or not streams <= set(dict(layout.streams)):
        return None
    from eddy.runtime.group import scheduler_order

    scheduler = scheduler_order(analyzed).get(f"absent:{info.id}:0")
    if scheduler is None:
        return None
    try:
        return _plan(analyzed, info, every, first, absent, scheduler, partition)
    except (NotColumnar, SemanticError):
        return None


def _plan(analyzed: AnalyzedApp, info: QueryInfo, every: bool,
          first: ast.StreamStateElement, absent: ast.AbsentStreamStateElement,
          scheduler: int, partition: dict[str, str]) -> AbsentPlan | None:
    # the absent state is no source of the query's scope: its filter sees its stream
    scope = Scope((*info.scope.sources,
                   source_of(analyzed.streams[absent.stream.stream], frozenset())))
    named = OperatorColumns(scope.sources, (FIRST, SECOND))
    first_filters = state_filters(first.stream)
    if any(states_read(f, info.scope.with_current(scope.sources[0]), scope.sources) - {0}
           for f in first_filters):
        return None
    split = completing_side(analyzed, named, scope, 1, absent)
    selected = _selection(info, named)
    if split is None or selected is None:
        return None
    side, alone = split
    assert absent.waiting_time is not None
    spec = AbsentSpec(absent.waiting_time.millis, every, bool(partition),
                      tuple(named.types.items()), tuple(named.physical.items()), side.keys,
                      side.residual, selected, scheduler)
    return AbsentPlan(info, first.stream.stream, absent.stream.stream, tuple(first_filters),
                      alone, scope.with_current(scope.sources[1]), named.attributes,
                      partition, spec)


def _selection(info: QueryInfo, named: OperatorColumns) -> tuple[Selected, ...] | None:
    """``e1``'s plain attributes and ``eventTimestamp()``, else None."""
    selected = []
    for item, out in zip(info.query.selector.attributes or (), info.outputs):
        expr = item.expression
        if isinstance(expr, ast.FunctionCall) and expr.namespace is None and \
                expr.name == "eventTimestamp" and not expr.args:
            selected.append(Selected(out.name, out.type, EMITTED_AT, ""))
            continue
        one = named.selected(info, out.name, out.type, expr)
        if one is None or one.side != FIRST:
            return None
        selected.append(one)
    return tuple(selected)
