"""Absent states: ``not S for t`` and ``not S and T`` / ``not S or T``.

An absent state completes when its stream does *not* deliver a matching event for a while,
so it needs a timer: each absent processor owns a scheduler of the group's
:class:`~eddy.runtime.context.Context` (created in the reference's order, so timers
fire before the input that reaches them, scheduler by scheduler). A matching event kills
the waiting matches (or, at the start of a pattern, restarts the wait).

The logic is the reference's (``AbsentStreamPreStateProcessor``,
``AbsentLogicalPreStateProcessor`` and their post processors) step for step, including
which timers are re-armed when, because the firing times decide what is emitted.
"""

from __future__ import annotations

from collections.abc import Callable

from eddy.runtime.context import Context, Scheduler
from eddy.runtime.events import CURRENT
from eddy.runtime.pattern.logical import LogicalPost, LogicalPre
from eddy.runtime.pattern.match import EMPTY_EVENT, Match, StreamEvent
from eddy.runtime.pattern.processors import StreamPost, StreamPre

Emit = Callable[[Match], None]


class AbsentStreamPost(StreamPost):
    """After the absent stream *did* deliver a matching event."""

    def process(self, match: Match) -> None:
        pre = self.pre
        assert isinstance(pre, AbsentStreamPre)
        pre.state.changed = True
        chain = match.slots[self.state_id]
        assert chain is not None
        match.ts = chain[0][0]
        self.returned = True
        if pre.start and self.next_every is pre:
            pre.add_every_state(match)
        pre.update_last_arrival_time(chain[0][0])


class AbsentStreamPre(StreamPre):
    """``not S[filter] for t``: a waiting match passes when ``t`` elapses without S."""

    is_absent = True
    removes_unchanged = False

    def __init__(self, sequence: bool, size: int, waiting: int) -> None:
        super().__init__(sequence, size)
        self.waiting = waiting
        self.scheduler: Scheduler
        self.context: Context
        self.emit: Emit

    def update_last_arrival_time(self, timestamp: int) -> None:
        state = self.state
        state.last_time = timestamp + self.waiting
        self.scheduler.notify_at(state.last_time)

    def add_state(self, match: Match) -> None:
        state = self.state
        if not state.active:
            return  # no 'every', and the pattern already completed once
        if self.sequence:
            state.new = [match]
        else:
            state.new.append(match)
        if not self.start:
            state.last_time = match.ts + self.waiting
            self.scheduler.notify_at(state.last_time)

    def add_every_state(self, match: Match) -> None:
        state = self.state
        state.new.append(self.restart_copy(match))
        state.last_time = match.ts + self.waiting
        self.scheduler.notify_at(state.last_time)

    def reset_state(self) -> None:
        self.clear_pending()
        if self.start:
            if self.waits_for_next():
                return
            self.init()

    def partition_created(self, now: int) -> None:
        """The app started: a leading ``not S for t`` starts waiting now."""
        state = self.state
        if not state.started:
            state.started = True
            if self.start and self.waiting != -1 and state.active:
                state.last_time = now + self.waiting
                self.scheduler.notify_at(state.last_time)

    def on_timer(self, time: int) -> None:
        """A timer at ``time``: emit (hand on) the matches whose wait is over."""
        state = self.state
        if not state.active:
            return
        initialize = self.start and not state.new and not state.pending
        if initialize and self.sequence and self.post.next_every is None and \
                state.last_time > 0:
            initialize = False  # a sequence without 'every' whose event already came
        if initialize:
            self.add_state(Match.fresh(self.size))
        elif self.sequence and state.new:
            self.reset_state()
        self.update_state()
        passed: list[Match] = []
        kept: list[Match] = []
        next_every = self.post.next_every
        for match in state.pending:
            if self.is_expired(match, time):
                if self.within_every is not None and next_every is not self and \
                        next_every is not None:
                    next_every.add_every_state(match)
                continue
            if (match.ts == -1 and time >= state.last_time) or \
                    (match.ts != -1 and time >= match.ts + self.waiting):
                match.ts = time
                passed.append(match)
                continue
            kept.append(match)
        state.pending = kept
        if self.within_every is not None:
            self.within_every.update_state()
        for match in passed:
            self.send_event(match)
        now = self.context.now
        if now > self.waiting + time:
            state.last_time = now + self.waiting
        if not passed and state.last_time < time:
            state.last_time = time + self.waiting
            self.scheduler.notify_at(state.last_time)

    def send_event(self, match: Match) -> None:
        post = self.post
        if post.selects:
            self.emit(match)
        if post.next_pre is not None:
            post.next_pre.add_state(match)
        if post.next_every is not None:
            post.next_every.add_every_state(match)
        elif self.start:
            self.state.active = False
        if post.callback is not None:
            post.callback.start_state_reset()

    def process_and_return(self, event: StreamEvent) -> list[Match]:
        if self.state.active:
            super().process_and_return(event)
        return []  # an absent state never completes on an event


class AbsentLogicalPost(LogicalPost):
    """After the absent side of ``not S and T`` did see a matching S."""

    def process(self, match: Match) -> None:
        pre = self.pre
        assert isinstance(pre, AbsentLogicalPre)
        pre.state.changed = True
        chain = match.slots[self.state_id]
        assert chain is not None
        self.returned = True
        pre.update_last_arrival_time(chain[0][0])


class AbsentLogicalPre(LogicalPre):
    """The absent side of ``not S [for t] and T`` / ``not S for t or T``."""

    is_absent = True

    def __init__(self, sequence: bool, size: int, either: bool, waiting: int | None) -> None:
        super().__init__(sequence, size, either)
        self.waiting = -1 if waiting is None else waiting
        self.scheduler: Scheduler
        self.context: Context
        self.emit: Emit

    def update_last_arrival_time(self, timestamp: int) -> None:
        self.state.last_time = timestamp

    def add_state(self, match: Match) -> None:
        if not self.state.active:
            return
        super().add_state(match)
        if not self.start and self.waiting != -1:
            self.scheduler.notify_at(match.ts + self.waiting)
            partner = self.partner
            if isinstance(partner, AbsentLogicalPre):
                partner.scheduler.notify_at(match.ts + partner.waiting)

    def add_every_state(self, match: Match) -> None:
        clone = match.copy()
        clone.kind = CURRENT
        chain = clone.slots[self.state_id]
        if chain is not None:
            clone.ts = chain[0][0]
        clone.slots[self.state_id] = None
        clone.slots[self.partner.state_id] = None
        self.state.new.append(clone)
        self.partner.state.new.append(clone)

    def partition_created(self, now: int) -> None:
        state = self.state
        if not state.started:
            state.started = True
            if self.start and self.waiting != -1 and state.active:
                self.scheduler.notify_at(now + self.waiting)

    def waiting_passed(self, time: int, match: Match) -> bool:
        chain = match.slots[self.state_id]
        if chain is None:
            return time >= match.ts + self.waiting
        return time >= chain[0][0] + self.waiting  # re-added by 'every' after an event

    def on_timer(self, time: int) -> None:
        state = self.state
        if not state.active:
            return
        passed: list[Match] = []
        if time >= state.last_time + self.waiting:
            if self.start and self.sequence and not state.new and not state.pending:
                self.add_state(Match.fresh(self.size))
            elif self.sequence and state.new:
                self.reset_state()
            self.update_state()
            expired: Match | None = None
            kept: list[Match] = []
            state_id, partner_id = self.state_id, self.partner.state_id
            for match in state.pending:
                if self.is_expired(match, time):
                    expired = match
                    continue
                if not self.waiting_passed(time, match):
                    kept.append(match)
                    continue
                partner_done = match.slots[partner_id] is not None
                if self.either and not partner_done:
                    match.add_event(state_id, EMPTY_EVENT)
                    passed.append(match)
                elif not self.either and partner_done:
                    passed.append(match)  # the partner came and waited for this side
                elif not self.either:
                    match.add_event(state_id, EMPTY_EVENT)  # the partner may still come
            state.pending = kept
            self.restart_expired(expired)
            for match in passed:
                match.ts = time
                self.send_event(match)
            state.last_time = 0
        if self.post.next_every is not None or (not passed and self.start):
            base = self.context.now if state.last_time == 0 else state.last_time
            self.scheduler.notify_at(base + self.waiting)

    def send_event(self, match: Match) -> None:
        post = self.post
        if post.selects:
            self.emit(match)
        if post.next_pre is not None:
            post.next_pre.add_state(match)
        if post.next_every is not None:
            post.next_every.add_every_state(match)
        elif self.start:
            self.state.active = False
            partner = self.partner
            if self.either and isinstance(partner, AbsentLogicalPre):
                partner.state.active = False
        if post.callback is not None:
            post.callback.start_state_reset()

    def process_and_return(self, event: StreamEvent) -> list[Match]:
        state = self.state
        if not state.active:
            return []
        kept: list[Match] = []
        state_id, last = self.state_id, self.last
        partner = self.partner
        restore = self.waiting != -1 or (self.sequence and not self.either
                                         and self.post.next_every is not None)
        for match in state.pending:
            if self.either and match.slots[partner.state_id] is not None:
                continue
            before = match.slots[state_id]
            match.slots[state_id] = [event]
            self.process(match)
            if restore:
                match.slots[state_id] = before
            removed = False
            if last.returned:
                # The absent stream came: this match is no longer a candidate.
                last.returned = False
                removed = True
                if self.sequence:
                    _remove_first(partner.state.pending, match)
            if not state.changed:
                match.slots[state_id] = before
                if self.sequence:
                    removed = True
            if not removed:
                kept.append(match)
        state.pending = kept
        return []

    def partner_can_proceed(self, match: Match) -> bool:
        """Whether the present side of ``not S and T`` may complete ``match``."""
        state = self.state
        if self.sequence and self.post.next_every is None and state.last_time > 0:
            return False
        if self.waiting == -1:
            if self.post.next_every is None:
                return match.slots[self.state_id] is None
            if state.last_time > 0:
                state.last_time = 0
                self.init()
                return False
            return True
        return match.slots[self.state_id] is not None


def _remove_first(matches: list[Match], match: Match) -> None:
    for i, candidate in enumerate(matches):
        if candidate is match:
            del matches[i]
            return
