"""Pending matches indexed by the equality conditions of their state's filter.

``every e1=T -> e2=T[e1.roomNo == roomNo and ...]`` correlates an arriving event only with
the matches whose ``e1.roomNo`` equals its ``roomNo``. The reference tries every pending
match (DESIGN.md §4: 5.5 K events/s on the seed's pattern with 1,000 rooms); this index
keys them by the earlier side of each such equality, so an event tries only the matches with
its key. The output is identical because skipping a match is exactly what the reference's
failed filter does in a pattern: nothing (the match stays pending, untouched). A sequence
drops the matches an event does not continue, so sequences are never indexed.

A key is computed once, when a match becomes pending. That is sound only if the values it
reads cannot change while the match waits: an equality qualifies when one side reads only
the state's own event and the other only *plain* (not counting) earlier states, whose one
event is fixed once set. Both sides are compared as Siddhi's ``==`` does: integral with
integral, floating with floating, or the same type; a null or NaN side never equals
anything, so such matches wait outside the index (they still expire in order).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.walk import walk_expression
from eddy.runtime.events import EXPIRED
from eddy.runtime.pattern.match import Match, PreState, StreamEvent, arrival_order
from eddy.runtime.pattern.processors import Condition, StreamPre
from eddy.runtime.pattern.references import Current, PatternExpressions, References

_INTEGRAL = {AttrType.INT, AttrType.LONG}
_FLOATING = {AttrType.FLOAT, AttrType.DOUBLE}
_PLAIN = (ast.Variable, ast.Constant, ast.BinaryOperation, ast.Negate)
_ARITHMETIC = {"+", "-", "*", "/", "%"}


def conjuncts(expr: ast.Expression) -> list[ast.Expression]:
    """The operands of a top-level ``and`` chain."""
    if isinstance(expr, ast.BinaryOperation) and expr.op == "and":
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


class EqualityKeys:
    """How to key a pending match and an arriving event of one state."""

    def __init__(self, match_keys: list[Callable[[Match], Any]],
                 event_keys: list[Callable[[Any], Any]], used: list[ast.Expression]) -> None:
        self.match_keys = match_keys
        self.event_keys = event_keys
        self.used = used  # the equalities keyed: a candidate with the event's key meets them

    def residual(self, filters: list[ast.Expression]) -> list[ast.Expression]:
        """The conjuncts of ``filters`` that the keys do not already decide."""
        return [part for expr in filters for part in conjuncts(expr)
                if not any(part is used for used in self.used)]

    def of_match(self, match: Match) -> Any:
        return _key([get(match) for get in self.match_keys])

    def of_event(self, data: Any) -> Any:
        return _key([get(data) for get in self.event_keys])


def _key(values: list[Any]) -> Any:
    for value in values:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
    return values[0] if len(values) == 1 else tuple(values)


def equality_keys(filters: list[ast.Expression], current: Current, references: References,
                  compiler: PatternExpressions) -> EqualityKeys | None:
    """The index keys of a plain state's filters, or None if no equality qualifies."""
    match_keys: list[Callable[[Match], Any]] = []
    event_keys: list[Callable[[Any], Any]] = []
    used: list[ast.Expression] = []
    for expr in filters:
        for part in conjuncts(expr):
            if not (isinstance(part, ast.BinaryOperation) and part.op == "=="):
                continue
            sides = _sides(part, current, references)
            if sides is None:
                continue
            earlier, own = sides
            match_keys.append(compiler.over_match(earlier, current))
            event_keys.append(_event_getter(own, current, compiler))
            used.append(part)
    if not match_keys:
        return None
    return EqualityKeys(match_keys, event_keys, used)


def _sides(part: ast.BinaryOperation, current: Current,
           references: References) -> tuple[ast.Expression, ast.Expression] | None:
    """(earlier side, own side) of an equality the index can use."""
    type_of = references.analyzed.type_of
    left, right = type_of(part.left), type_of(part.right)
    if not (left == right and left in (AttrType.STRING, AttrType.BOOL)
            or {left, right} <= _INTEGRAL or {left, right} <= _FLOATING):
        return None
    left_states = _states(part.left, current, references)
    right_states = _states(part.right, current, references)
    if left_states is None or right_states is None:
        return None
    own = {current.state_id}

    def earlier(states: set[int]) -> bool:
        return bool(states) and current.state_id not in states and not (
            states & references.counted)

    if left_states == own and earlier(right_states):
        return part.right, part.left
    if right_states == own and earlier(left_states):
        return part.left, part.right
    return None


def _states(expr: ast.Expression, current: Current, references: References) -> set[int] | None:
    """The states ``expr`` reads, or None if it is not a plain function of their events."""
    found: set[int] = set()
    scope = references.scope.with_current(current.source)
    for node in walk_expression(expr):
        if not isinstance(node, _PLAIN):
            return None
        if isinstance(node, ast.BinaryOperation) and node.op not in _ARITHMETIC:
            return None
        if isinstance(node, ast.Variable):
            resolved = scope.resolve(node)
            state_id = references.state_of(resolved.source, current)
            if state_id == current.state_id and node.stream_index is not None:
                return None  # only the event under test, not the chain before it
            found.add(state_id)
    return found


def _event_getter(expr: ast.Expression, current: Current,
                  compiler: PatternExpressions) -> Callable[[Any], Any]:
    """The own side over an arriving event's data (its variables are the state's own)."""
    positions = {a.name: i for i, a in reversed(list(enumerate(current.source.attributes)))}

    def resolve(var: ast.Variable) -> Callable[[Any], Any]:
        position = positions[var.attribute]
        return lambda data: data[position]

    getter: Callable[[Any], Any] = compiler.compile(expr, resolve=resolve)
    return getter


class IndexedState(PreState):
    """Pending matches in arrival order (``entries``), and by key (``buckets``)."""

    __slots__ = ("entries", "buckets", "next_id")

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[int, tuple[Match, Any]] = {}
        self.buckets: dict[Any, dict[int, Match]] = {}
        self.next_id = 0


class IndexedStreamPre(StreamPre):
    """A plain pattern state whose pending matches are indexed by :class:`EqualityKeys`."""

    def __init__(self, sequence: bool, size: int, keys: EqualityKeys) -> None:
        assert not sequence, "sequences drop non-matching candidates: never indexed"
        super().__init__(sequence, size)
        self.keys = keys
        self.residual: Condition | None = None  # the filter less what the key decides

    def fresh_state(self) -> PreState:
        return IndexedState()

    @property
    def indexed(self) -> IndexedState:
        return cast(IndexedState, self.state)

    def update_state(self) -> None:
        state = self.indexed
        if not state.new:
            return
        state.new.sort(key=arrival_order)
        entries, buckets, key_of = state.entries, state.buckets, self.keys.of_match
        next_id = state.next_id
        for match in state.new:
            key = key_of(match)
            entries[next_id] = (match, key)
            if key is not None:
                bucket = buckets.get(key)
                if bucket is None:
                    bucket = buckets[key] = {}
                bucket[next_id] = match
            next_id += 1
        state.next_id = next_id
        state.new = []

    @staticmethod
    def _drop(state: IndexedState, entry_id: int) -> None:
        _, key = state.entries.pop(entry_id)
        if key is not None:
            bucket = state.buckets[key]
            del bucket[entry_id]
            if not bucket:
                del state.buckets[key]

    def clear_pending(self) -> None:
        state = self.indexed
        state.entries = {}
        state.buckets = {}

    def pending_empty(self) -> bool:
        return not self.indexed.entries

    def pending_count(self) -> int:
        return len(self.indexed.entries) + len(self.state.new)

    def expire_events(self, now: int) -> None:
        if self.within is None:
            return
        state = self.indexed
        expired: Match | None = None
        dropped: list[int] = []
        for entry_id, (match, _) in state.entries.items():
            if not self.is_expired(match, now):
                break
            dropped.append(entry_id)
            if match.kind != EXPIRED:
                match.kind = EXPIRED
                expired = match
        for entry_id in dropped:
            self._drop(state, entry_id)
        expired = self.expire_new(now, expired)
        self.restart_expired(expired)

    def process_and_return(self, event: StreamEvent) -> list[Match]:
        last = self.last
        state = self.indexed
        condition = self.condition
        if last.returned:
            # A stale flag makes the reference return whichever match it tries first:
            # try them all, in order, as it does.
            candidates = [(i, m) for i, (m, _) in state.entries.items()]
        else:
            key = self.keys.of_event(event[1])
            bucket = state.buckets.get(key) if key is not None else None
            if not bucket:
                return []
            candidates = list(bucket.items())
            condition = self.residual
        returned: list[Match] = []
        state_id, post = self.state_id, self.post
        for entry_id, match in candidates:
            match.slots[state_id] = [event]
            state.changed = False  # self.process, with the residual condition
            if condition is None or condition(match):
                post.process(match)
            if last.returned:
                last.returned = False
                returned.append(match)
            if state.changed:
                self._drop(state, entry_id)
            else:
                match.slots[state_id] = None
        return returned
