"""What a pattern's expressions read: ``e1.x``, ``e1[0].x``, ``e2[last].x``, ``e1 is null``.

Expressions compile to closures (:mod:`eddy.runtime.evaluate`); here is how such a
closure finds a value in a :class:`~eddy.runtime.pattern.match.Match`. The index
rules are the reference's (``ExpressionParser.parseVariable``):

- in a state's filter, a reference without an index reads the *last* event of the state's
  chain (``SiddhiConstants.CURRENT``); in the selector it reads the *first* (index 0), but a
  counting state named without an index (``select e1.x``) is the list of every event's
  value (an OBJECT attribute, as the analyser types it);
- ``[last]`` is the last event, ``[last-1]`` the one before; a missing event gives null;
- inside the filter of counting state ``e2``, ``e2[last]`` means the event *before* the one
  being tested (that one is already the chain's last), so the index shifts by one.

A filter's closure reads the match itself; a selector's reads ``(kind, ts, match)`` events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eddy.lang import ast
from eddy.lang.inputs import source_of
from eddy.lang.scope import Scope, SemanticError, Source
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import walk_states
from eddy.runtime.context import Context
from eddy.runtime.expressions import CompileError
from eddy.runtime.pattern.match import Match, pick
from eddy.runtime.selector import Frame
from eddy.runtime.table import Table
from eddy.runtime.table_query import TableExpressionCompiler

Getter = Callable[[Any], Any]
MatchGetter = Callable[[Match], Any]

FILTER_DEFAULT = -1  # the chain's last event
SELECT_DEFAULT = 0  # the chain's first event


@dataclass(frozen=True)
class Current:
    """The state whose filter is being compiled (None: the selector)."""

    state_id: int
    source: Source
    ref: str | None
    counted: bool


class References:
    """Maps the analyser's sources (one per named state) to the runtime's state ids;
    ``tables`` are the group's, which conditions may test (``(T.k == k) in T``)."""

    def __init__(self, info: QueryInfo, analyzed: AnalyzedApp,
                 tables: Mapping[str, Table] | None = None) -> None:
        stream = info.query.input
        assert isinstance(stream, ast.StateInputStream)
        self.info = info
        self.analyzed = analyzed
        self.tables: Mapping[str, Table] = tables or {}
        self.scope: Scope = info.scope
        elements = [s for s in walk_states(stream.state) if isinstance(s, ast.StreamStateElement)]
        self.source_index = {id(e): i for i, e in enumerate(elements)}
        self.state_ids: dict[int, int] = {}  # index in scope.sources -> state id
        self.counted: set[int] = set()

    def bind(self, element: ast.StreamStateElement, state_id: int, counted: bool) -> Current:
        """Records ``element``'s state id; returns it as the current state of its filter."""
        index = self.source_index[id(element)]
        self.state_ids[index] = state_id
        if counted:
            self.counted.add(state_id)
        return Current(state_id, self.scope.sources[index], element.ref, counted)

    def absent(self, element: ast.AbsentStreamStateElement, state_id: int) -> Current:
        name = element.stream.stream
        if element.stream.inner and self.info.partition is not None:
            info = self.analyzed.partition(self.info.partition).inner_streams[name]
        else:
            info = self.analyzed.streams[element.stream.key]
        return Current(state_id, source_of(info, frozenset()), None, False)

    def state_of(self, source: Source, current: Current | None) -> int:
        if current is not None and source is current.source:
            return current.state_id
        for i, candidate in enumerate(self.scope.sources):
            if candidate is source:
                return self.state_ids[i]
        raise CompileError(f"'{source.stream}' is not a state of this pattern")

    def event_state(self, name: str) -> int | None:
        """The state id an event reference (``e1``) names, if ``name`` is one."""
        source = self.scope.by_ref(name)
        if source is None or not source.pattern_state:
            return None
        return self.state_of(source, None)

    # -- variables -------------------------------------------------------------------------
    def variable(self, var: ast.Variable, current: Current | None) -> MatchGetter:
        """A getter of ``var``'s value over a match."""
        scope = self.scope if current is None else self.scope.with_current(current.source)
        resolved = scope.resolve(var)
        source = resolved.source
        state_id = self.state_of(source, current)
        position = next(i for i, a in enumerate(source.attributes) if a.name == var.attribute)
        index = self.index(var.stream, var.stream_index, current, state_id)
        if index is None:
            return chain_values(state_id, position)
        return chain_value(state_id, index, position, state_id in self.counted)

    def index(self, stream: str | None, index: int | None, current: Current | None,
              state_id: int) -> int | None:
        """The Python index into the chain (None: the reference's multi-value list)."""
        if index is None:
            if current is not None:
                return FILTER_DEFAULT
            if stream is not None and state_id in self.counted:
                return None
            return SELECT_DEFAULT
        if current is not None and current.ref is not None and stream == current.ref \
                and index < 0:
            return index - 1  # e2[last] inside e2's filter: before the event under test
        return index

    def is_null(self, name: str, index: int | None, current: Current | None) -> MatchGetter:
        """``e1 is null`` / ``e1[2] is null``: whether that event is missing."""
        state_id = self.event_state(name)
        if state_id is None:
            raise CompileError(f"'{name}' is not an event of this pattern")
        chain_index = self.index(name, index, current, state_id)
        position = SELECT_DEFAULT if chain_index is None else chain_index

        def missing(match: Match) -> bool:
            return pick(match.slots[state_id], position) is None
        return missing


def chain_values(state_id: int, position: int) -> MatchGetter:
    """Attribute ``position`` of every event of a state's chain, as a list (the reference's
    ``MultiValueVariableFunctionExecutor``: ``select e1.x`` of a counting state); empty
    when the state has no event, as the reference's walk of a missing chain gives."""
    def values(match: Match) -> list[Any]:
        chain = match.slots[state_id]
        return [] if chain is None else [event[1][position] for event in chain]
    return values


def chain_value(state_id: int, index: int, position: int, counted: bool) -> MatchGetter:
    """Attribute ``position`` of event ``index`` of a state's chain, None if missing."""
    if not counted and index in (0, -1):
        # A plain state's chain is one event: skip the bounds check on the hot path.
        def single(match: Match) -> Any:
            chain = match.slots[state_id]
            return None if chain is None else chain[index][1][position]
        return single

    def indexed(match: Match) -> Any:
        event = pick(match.slots[state_id], index)
        return None if event is None else event[1][position]
    return indexed


class PatternExpressions(TableExpressionCompiler):
    """Compiles a pattern query's expressions over matches (filters) or ``(kind, ts,
    match)`` events (selector), handling the pattern-only forms the base compiler cannot;
    ``expr in T`` reads the group's tables as in any other query (the reference's
    ``ExpressionParser`` has the same table map for every query kind)."""

    def __init__(self, references: References, context: Context, frame: Frame | None = None,
                 track_future: bool = False, destroy_groups: bool = False) -> None:
        analyzed = references.analyzed

        def no_position(var: ast.Variable) -> int:
            raise CompileError(f"'{var.attribute}' needs a pattern resolver")

        super().__init__(analyzed.type_of, no_position, context, frame, track_future,
                         destroy_groups, tables=references.tables)
        self.references = references
        self.current: Current | None = None

    def filter(self, expr: ast.Expression, current: Current) -> MatchGetter:
        """A state's filter: a condition over the match under test."""
        self.current = current
        refs = self.references
        return self.compile(expr, condition=True, resolve=lambda v: refs.variable(v, current))

    def over_match(self, expr: ast.Expression, current: Current) -> MatchGetter:
        """A value over the match (an index key side)."""
        self.current = current
        refs = self.references
        return self.compile(expr, resolve=lambda v: refs.variable(v, current))

    def selection(self, expr: ast.Expression, *, condition: bool = False,
                  resolve: Callable[[ast.Variable], Getter] | None = None) -> Getter:
        """A selector expression over ``(kind, ts, match)`` events."""
        self.current = None
        return self.compile(expr, condition=condition,
                            resolve=resolve or self.selected_variable)

    def selected_variable(self, var: ast.Variable) -> Getter:
        getter = self.references.variable(var, None)
        return lambda event: getter(event[2])

    def _override(self, expr: ast.Expression, resolve: Callable[[ast.Variable], Getter],
                  per_group: bool = True) -> Getter | None:
        refs, current = self.references, self.current
        null_check: MatchGetter | None = None
        if isinstance(expr, ast.IsNullStream):
            null_check = refs.is_null(expr.stream, expr.stream_index, current)
        elif isinstance(expr, ast.IsNull) and isinstance(expr.expression, ast.Variable):
            var = expr.expression
            if var.stream is None and refs.event_state(var.attribute) is not None \
                    and not _is_attribute(refs, var, current):
                null_check = refs.is_null(var.attribute, var.stream_index, current)
        elif isinstance(expr, ast.FunctionCall) and expr.name == "eventTimestamp" \
                and expr.namespace is None and not expr.args:
            if current is not None:
                return lambda match: match.ts
            return lambda event: event[1]
        if null_check is not None:
            if current is not None:
                return null_check
            check = null_check
            return lambda event: check(event[2])
        return super()._override(expr, resolve, per_group)


def _is_attribute(refs: References, var: ast.Variable, current: Current | None) -> bool:
    """The reference reads a bare name as an attribute first, an event reference second."""
    scope = refs.scope if current is None else refs.scope.with_current(current.source)
    try:
        scope.resolve(var)
    except SemanticError:
        return False
    return True
