"""The state processors of a pattern or sequence: one pre/post pair per state.

This is the reference's design (``StreamPreStateProcessor`` / ``StreamPostStateProcessor``
and the counting variants), reproduced step for step because its output depends on the
details: which list a match is in, when handed-over matches become pending
(``update_state``, only when the state's own stream delivers an event), how ``within``
prunes (from the head of the pending list, stopping at the first match still in time), how
a sequence drops a match that the next event does not continue, and the flags the
processors pass each other (``changed``, ``returned``).

A *pre* processor holds the matches waiting for its state. An arriving event is tried
against each of them (``process_and_return``): set into the match's slot, filtered, and on
success the *post* processor hands the match on (to the next state, back to the ``every``
start as a fresh copy, or to the selector when this is the last state). The matches the
last state completes are returned to the receiver, which feeds them to the selector.
"""

from __future__ import annotations

from collections.abc import Callable

from eddy.runtime.events import CURRENT, EXPIRED
from eddy.runtime.pattern.match import Match, PreState, StreamEvent, arrival_order

Condition = Callable[[Match], bool]

MAX_COUNT = 2**31 - 1
"""``Integer.MAX_VALUE``: the reference's maximum for an unbounded count (``<2:>``)."""


class StreamPost:
    """After a state accepted an event: hand the match on."""

    def __init__(self) -> None:
        self.state_id = 0
        self.pre: StreamPre
        self.next_pre: StreamPre | None = None
        self.next_every: StreamPre | None = None
        self.callback: CountPre | None = None
        self.selects = False  # the reference's ``nextProcessor != null``: the last state
        self.returned = False  # ``isEventReturned``: the pre returns the match to the receiver

    def set_next_pre(self, pre: StreamPre) -> None:
        self.next_pre = pre

    def set_next_every(self, pre: StreamPre) -> None:
        self.next_every = pre

    def process(self, match: Match) -> None:
        self.pre.state.changed = True
        chain = match.slots[self.state_id]
        assert chain is not None
        match.ts = chain[0][0]
        if self.selects:
            self.returned = True
        self.hand_on(match)

    def hand_on(self, match: Match) -> None:
        if self.next_pre is not None:
            self.next_pre.add_state(match)
        if self.next_every is not None:
            self.next_every.add_every_state(match)
        if self.callback is not None:
            self.callback.start_state_reset()


class StreamPre:
    """Waiting matches of one state and the event test that advances them."""

    is_absent = False
    removes_unchanged = True  # a sequence drops a match the event did not continue

    def __init__(self, sequence: bool, size: int) -> None:
        self.sequence = sequence
        self.size = size
        self.state_id = 0
        self.start = False
        self.within: int | None = None
        self.start_ids: tuple[int, ...] = ()
        self.within_every: StreamPre | None = None
        self.condition: Condition | None = None
        self.post: StreamPost
        self.last: StreamPost  # whose ``returned`` flag says a match completed the pattern
        self.state = self.fresh_state()

    def fresh_state(self) -> PreState:
        return PreState()

    # -- the protocol every state processor shares -----------------------------------------
    def init(self) -> None:
        """Seeds a start state with an empty match (again, under ``every``)."""
        state = self.state
        next_pre = self.post.next_pre
        if self.start and (not state.initialized or self.post.next_every is not None or (
                self.sequence and next_pre is not None and next_pre.is_absent)):
            self.add_state(Match.fresh(self.size))
            state.initialized = True

    def add_state(self, match: Match) -> None:
        """A match handed over by the previous state (shared, not copied)."""
        new = self.state.new
        if not self.sequence or not new:
            new.append(match)

    def add_every_state(self, match: Match) -> None:
        """``every`` restarts here: a copy with this and later states cleared."""
        self.state.new.append(self.restart_copy(match))

    def restart_copy(self, match: Match) -> Match:
        clone = match.copy()
        clone.kind = CURRENT
        for i in range(self.state_id, self.size):
            clone.slots[i] = None
        return clone

    def reset_state(self) -> None:
        """Sequences, before each event: forget pending matches; re-seed a start state."""
        state = self.state
        self.clear_pending()
        if self.start and not state.new:
            if self.waits_for_next():
                return
            self.init()

    def waits_for_next(self) -> bool:
        """A sequence without ``every`` whose next state still waits does not restart."""
        next_pre = self.post.next_pre
        return (self.sequence and self.post.next_every is None and next_pre is not None
                and not next_pre.pending_empty())

    def update_state(self) -> None:
        """Handed-over matches become pending (sorted by time, unset last)."""
        state = self.state
        if state.new:
            state.new.sort(key=arrival_order)
            state.pending.extend(state.new)
            state.new = []

    def clear_pending(self) -> None:
        self.state.pending = []

    def pending_empty(self) -> bool:
        return not self.state.pending

    def is_expired(self, match: Match, now: int) -> bool:
        """``within``: the match started (at a start state's first event) too long ago."""
        within = self.within
        if within is None:
            return False
        for state_id in self.start_ids:
            chain = match.slots[state_id]
            if chain is not None and abs(chain[0][0] - now) > within:
                return True
        return False

    def expire_events(self, now: int) -> None:
        """Drops matches ``within`` no longer allows: pending ones from the head up to the
        first one still in time (the reference stops there), handed-over ones all."""
        if self.within is None:
            return
        state = self.state
        expired: Match | None = None
        pending = state.pending
        count = 0
        for match in pending:
            if not self.is_expired(match, now):
                break
            count += 1
            if match.kind != EXPIRED:
                match.kind = EXPIRED
                expired = match
        if count:
            del pending[:count]
        expired = self.expire_new(now, expired)
        self.restart_expired(expired)

    def expire_new(self, now: int, expired: Match | None) -> Match | None:
        state = self.state
        if state.new:
            kept = []
            for match in state.new:
                if self.is_expired(match, now):
                    if match.kind != EXPIRED:
                        match.kind = EXPIRED
                        expired = match
                else:
                    kept.append(match)
            state.new = kept
        return expired

    def restart_expired(self, expired: Match | None) -> None:
        if expired is not None and self.within_every is not None:
            self.within_every.add_every_state(expired)
            self.within_every.update_state()

    def process(self, match: Match) -> None:
        """Runs the state's filters on ``match`` (its slot holds the new event)."""
        self.state.changed = False
        condition = self.condition
        if condition is None or condition(match):
            self.post.process(match)

    def process_and_return(self, event: StreamEvent) -> list[Match]:
        """Tries ``event`` on every pending match; returns the matches it completed."""
        state = self.state
        returned: list[Match] = []
        kept: list[Match] = []
        state_id, last = self.state_id, self.last
        for match in state.pending:
            match.slots[state_id] = [event]
            self.process(match)
            if last.returned:
                last.returned = False
                returned.append(match)
            if state.changed:
                continue
            match.slots[state_id] = None
            if self.sequence:
                if not self.removes_unchanged:
                    kept.append(match)
                if self.post.callback is not None:
                    self.post.callback.start_state_reset()
            else:
                kept.append(match)
        state.pending = kept
        return returned

    def pending_count(self) -> int:
        return len(self.state.pending) + len(self.state.new)


class CountPost(StreamPost):
    """After ``S<min:max>`` accepted one more event."""

    def __init__(self, min_count: int, max_count: int) -> None:
        super().__init__()
        self.min_count = min_count
        self.max_count = max_count

    def set_next_pre(self, pre: StreamPre) -> None:
        self.next_pre = pre
        this = self.pre
        if this.start and this.sequence and self.min_count == 0:
            assert isinstance(this, CountPre)
            pre.post.callback = this

    def process(self, match: Match) -> None:
        pre = self.pre
        chain = match.slots[self.state_id]
        assert chain is not None
        count = len(chain)
        pre.state.success = True
        match.ts = chain[-1][0]
        if count >= self.min_count:
            if pre.sequence:
                if self.next_pre is not None:
                    self.next_pre.add_state(match)
                if count != self.max_count:
                    pre.add_state(match)
            elif count == self.min_count:
                self.min_count_reached(match)
            if count == self.max_count:
                pre.state.changed = True

    def min_count_reached(self, match: Match) -> None:
        """Patterns emit (or move on) once, when the minimum is reached; later events extend
        the same, shared match."""
        if self.selects:
            self.pre.state.changed = True
            self.returned = True
        if self.next_pre is not None:
            self.next_pre.add_state(match)
        if self.next_every is not None:
            self.next_every.add_every_state(match)


class CountPre(StreamPre):
    """The waiting matches of ``S<min:max>``: a match stays while it may take more events."""

    def __init__(self, sequence: bool, size: int, min_count: int, max_count: int) -> None:
        super().__init__(sequence, size)
        self.min_count = min_count
        self.max_count = max_count
        self.count_post: CountPost

    def process_and_return(self, event: StreamEvent) -> list[Match]:
        state = self.state
        returned: list[Match] = []
        kept: list[Match] = []
        state_id, last, size = self.state_id, self.last, self.size
        for match in state.pending:
            # Once a later state took an event, this count is closed for the match.
            if state_id + 1 < size and match.slots[state_id + 1] is not None:
                continue
            if state_id + 2 < size and match.slots[state_id + 2] is not None:
                continue
            match.add_event(state_id, event)
            state.success = False
            self.process(match)
            if last.returned:
                last.returned = False
                returned.append(match)
            removed = state.changed
            if not state.success:
                match.remove_last_event(state_id)
                if self.sequence:
                    removed = True
            if not removed:
                kept.append(match)
        state.pending = kept
        return returned

    def add_state(self, match: Match) -> None:
        super().add_state(match)
        if self.min_count == 0 and match.slots[self.state_id] is None:
            self.count_post.min_count_reached(match)

    def start_state_reset(self) -> None:
        """A sequence's optional start count (``e1=S*``) re-seeds at the next update."""
        self.state.start_reset = True
        pre = self.count_post.pre
        if self.post.callback is not None and pre is not self:
            assert isinstance(pre, CountPre)
            pre.start_state_reset()

    def update_state(self) -> None:
        state = self.state
        if state.start_reset:
            state.start_reset = False
            self.init()
        super().update_state()
