"""Partial matches and the per-state bookkeeping that holds them.

A :class:`Match` is the reference's ``StateEvent``: one slot per pattern state, each slot
the chain of stream events that state accepted (one event for a plain state, several for a
counting state ``e1=S<2:5>``, nothing yet: None). The reference shares these objects
between the lists of several states (a counting state keeps extending a match that the next
state is already waiting on) and shallow-copies them when ``every`` restarts (the copy
shares the chains). Who sees a later change depends on exactly that sharing, so it is kept:
a slot holds a Python list that several matches may share, ``add_event`` appends to it in
place and ``remove_last_event`` pops from it in place, as the reference's linked stream
events do.

Everything here is plain data: pickling the whole group state in one ``pickle.dumps``
preserves the sharing, so a restored runtime continues exactly.
"""

from __future__ import annotations

from typing import Any

from eddy.runtime.events import CURRENT

StreamEvent = tuple[int, Any]
"""``(timestamp, data)`` of one event a state accepted."""

Chain = list[StreamEvent]

EMPTY_EVENT: StreamEvent = (-1, None)
"""The placeholder event the reference puts into an absent state that was satisfied."""


class Match:
    """One partial (or complete) match: the reference's ``StateEvent``.

    ``ts`` is the timestamp of the event that last advanced it (-1 before any), ``kind``
    CURRENT or EXPIRED (a match ``within`` dropped is marked expired, and the mark travels
    with every list still holding it).
    """

    __slots__ = ("slots", "ts", "kind")

    def __init__(self, slots: list[Chain | None], ts: int = -1, kind: int = CURRENT) -> None:
        self.slots = slots
        self.ts = ts
        self.kind = kind

    @staticmethod
    def fresh(size: int) -> Match:
        """A match with no state filled, as a start state creates it."""
        return Match([None] * size)

    def copy(self) -> Match:
        """``StateEventCloner.copyStateEvent``: a new match sharing the chains."""
        return Match(list(self.slots), self.ts, self.kind)

    def add_event(self, state: int, event: StreamEvent) -> None:
        """Appends ``event`` to a state's chain (in place: sharers see it)."""
        chain = self.slots[state]
        if chain is None:
            self.slots[state] = [event]
        else:
            chain.append(event)

    def remove_last_event(self, state: int) -> None:
        """Drops the last event of a state's chain; a one-event chain leaves this match only."""
        chain = self.slots[state]
        if chain is not None:
            if len(chain) > 1:
                chain.pop()
            else:
                self.slots[state] = None

    def __reduce__(self) -> tuple[type[Match], tuple[list[Chain | None], int, int]]:
        # Positional arguments pickle several times faster than the default slot state,
        # and a snapshot holds every pending match.
        return Match, (self.slots, self.ts, self.kind)

    def __repr__(self) -> str:
        return f"Match(ts={self.ts}, kind={self.kind}, slots={self.slots!r})"


def pick(chain: Chain | None, index: int) -> StreamEvent | None:
    """The event at ``index`` of a chain, Python-style (-1 is the last), None if missing."""
    if chain is None or not -len(chain) <= index < len(chain):
        return None
    return chain[index]


def arrival_order(match: Match) -> tuple[bool, int]:
    """The reference's sort key for newly added matches: by timestamp, unset (-1) last."""
    return match.ts == -1, match.ts


class PreState:
    """What one state processor holds between events (the reference's ``StreamPreState``
    and its count / absent / logical variants, in one shape).

    ``pending`` are the matches waiting for this state's event; ``new`` those handed over
    since the last ``update_state`` (they become pending then, so an event never advances a
    match through two states at once). ``last_time`` is the absent states' last scheduled
    time (``not S for t``) or last arrival time (``not S and T``).
    """

    __slots__ = ("pending", "new", "changed", "initialized", "started", "success",
                 "start_reset", "last_time", "active")

    def __init__(self) -> None:
        self.pending: list[Match] = []
        self.new: list[Match] = []
        self.changed = False
        self.initialized = False
        self.started = False
        self.success = False
        self.start_reset = False
        self.last_time = 0
        self.active = True
