"""``A and B`` / ``A or B`` states: two partner processors sharing their matches.

As in the reference (``LogicalPreStateProcessor``, ``LogicalPostStateProcessor``), a match
handed to a logical state is put into both partners' lists as the *same* object. With
``and``, the first side to match records its event and drops the match from its own list;
the other side completes it. With ``or``, the first side completes it, and the other side
discards it when it next sees it (its partner's slot is filled).
"""

from __future__ import annotations

from eddy.runtime.events import CURRENT
from eddy.runtime.pattern.match import Match, StreamEvent
from eddy.runtime.pattern.processors import StreamPost, StreamPre


class LogicalPost(StreamPost):
    """After one side of ``and`` / ``or`` accepted an event."""

    def __init__(self, either: bool) -> None:
        super().__init__()
        self.either = either  # ``or``
        self.partner_pre: LogicalPre
        self.partner_post: LogicalPost

    def set_next_pre(self, pre: StreamPre) -> None:
        self.next_pre = pre
        self.partner_post.next_pre = pre

    def set_next_every(self, pre: StreamPre) -> None:
        self.next_every = pre
        self.partner_post.next_every = pre

    def process(self, match: Match) -> None:
        if not self.either:
            partner = self.partner_pre
            if partner.is_absent:
                proceed = partner.partner_can_proceed(match)
            else:
                proceed = match.slots[partner.state_id] is not None
            if proceed:
                super().process(match)
            else:
                self.pre.state.changed = True
            return
        super().process(match)
        partner_post = self.partner_post
        if partner_post.selects and self.pre.last is partner_post:
            partner_post.returned = True  # ``from A or B select ...``


class LogicalPre(StreamPre):
    """The waiting matches of one side of a logical state."""

    def __init__(self, sequence: bool, size: int, either: bool) -> None:
        super().__init__(sequence, size)
        self.either = either
        self.partner: LogicalPre

    def partner_can_proceed(self, match: Match) -> bool:
        raise NotImplementedError  # only absent sides decide for their partner

    def add_state(self, match: Match) -> None:
        new, partner = self.state.new, self.partner
        if self.start or self.sequence:
            if not new:
                new.append(match)
            if not partner.state.new:
                partner.state.new.append(match)
        else:
            new.append(match)
            partner.state.new.append(match)

    def add_every_state(self, match: Match) -> None:
        clone = match.copy()
        clone.kind = CURRENT
        for i in range(self.state_id, self.size):
            clone.slots[i] = None
        self.state.new.append(clone)
        clone.slots[self.partner.state_id] = None
        self.partner.state.new.append(clone)

    def reset_state(self) -> None:
        state, partner = self.state, self.partner
        if self.either or len(state.pending) == len(partner.state.pending):
            state.pending = []
            partner.state.pending = []
            if self.start and not state.new:
                if self.waits_for_next():
                    return
                self.init()

    def update_state(self) -> None:
        super().update_state()
        self.partner.move_new_to_pending()

    def move_new_to_pending(self) -> None:
        StreamPre.update_state(self)

    def process_and_return(self, event: StreamEvent) -> list[Match]:
        state = self.state
        returned: list[Match] = []
        kept: list[Match] = []
        state_id, last, partner_id = self.state_id, self.last, self.partner.state_id
        for match in state.pending:
            if self.either and match.slots[partner_id] is not None:
                continue
            match.slots[state_id] = [event]
            self.process(match)
            if last.returned:
                last.returned = False
                returned.append(match)
            if state.changed:
                continue
            match.slots[state_id] = None
            if not self.sequence:
                kept.append(match)
        state.pending = kept
        return returned

