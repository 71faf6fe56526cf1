"""A pattern query at run time: its receivers, its timers and its output.

The reference feeds a pattern through one receiver per input stream. Before each event the
receiver *stabilizes* the states (``within`` expiry, then handed-over matches become
pending); then the event is tried on the states of its stream — the last such state first,
so one event never fills two states of one match. Matches completed by an event go to the
selector one at a time, each its own chunk. Where the reference delivers the selected
events differs by receiver, and a downstream query sees the difference in its chunks:

- a stream that feeds one state (``PatternSingleProcessStreamReceiver``): each completed
  match's output is delivered on its own, after the whole incoming chunk was matched;
- a stream that feeds several states (``...MultiProcessStreamReceiver``): the outputs of one
  state's matches for one event are delivered together, as one chunk.

Absent states complete on timers; each match a timer completes is selected and delivered on
its own, at once. Everything is emitted through the query's ordinary tail
(:class:`~eddy.runtime.query.QueryRuntime`), with ``order`` paths as there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eddy.runtime.context import Context, Path
from eddy.runtime.events import Event, OutEvent
from eddy.runtime.pattern.absent import AbsentLogicalPre, AbsentStreamPre
from eddy.runtime.pattern.compile import Machine
from eddy.runtime.pattern.match import Match
from eddy.runtime.pattern.processors import StreamPre
from eddy.runtime.query import QueryRuntime
from eddy.runtime.ratelimit import RateLimiter
from eddy.runtime.selector import Selector

Receiver = Callable[[list[Event], Path], None]
TimerTarget = Callable[[int, Path], None]


class PatternQueryRuntime(QueryRuntime):
    """A pattern or sequence query: ``receivers`` subscribe to its input streams' junctions."""

    def __init__(self, query_id: str, index: int, context: Context, selector: Selector,
                 limiter: RateLimiter, target: str | None, machine: Machine,
                 partitioned: bool = False) -> None:
        super().__init__(query_id, index, context, [], None, [], selector, limiter, target)
        self.machine = machine
        self.receivers: dict[str, Receiver] = {
            stream: self._receiver(stream, states) for stream, states in machine.receivers.items()}
        self._timer_output: list[list[OutEvent]] = []
        for pre, scheduler in machine.absents:
            pre.emit = self._select_on_timer
            scheduler.target = self._timer(pre)
        if machine.absents and not partitioned:  # a partition calls partition_created
            context.start_hooks.append(self.partition_created)
        machine.start()

    # -- input -----------------------------------------------------------------------------
    def _receiver(self, stream: str, states: list[StreamPre]) -> Receiver:
        machine = self.machine
        if len(states) == 1:
            (pre,) = states

            def receive_single(chunk: list[Event], path: Path) -> None:
                completed: list[Match] = []
                for event in chunk:
                    machine.stabilize(stream, event[1])
                    completed += pre.process_and_return((event[1], event[2]))
                if completed:
                    self._emit_groups([self._select(m) for m in completed], path)
            return receive_single

        ordered = states[::-1]  # the reference's eventSequence: the last state first

        def receive_multi(chunk: list[Event], path: Path) -> None:
            groups: list[list[OutEvent]] = []
            for event in chunk:
                machine.stabilize(stream, event[1])
                stream_event = (event[1], event[2])
                for state in ordered:
                    completed = state.process_and_return(stream_event)
                    if completed:
                        outputs: list[OutEvent] = []
                        for match in completed:
                            outputs += self._select(match)
                        groups.append(outputs)
            if groups:
                self._emit_groups(groups, path)
        return receive_multi

    def _timer(self, pre: AbsentStreamPre | AbsentLogicalPre) -> Callable[[int, Path], None]:
        def fire(time: int, path: Path) -> None:
            self._timer_output = []
            pre.on_timer(time)
            groups, self._timer_output = self._timer_output, []
            self._emit_groups(groups, path)
        return fire

    def partition_created(self, time: int) -> None:
        """The query starts (the app with its first event, or a partition key with its
        first event): leading absent states start waiting (the reference's
        ``partitionCreated``)."""
        for pre, _ in self.machine.absents:
            pre.partition_created(time)

    # -- output ----------------------------------------------------------------------------
    def _select(self, match: Match) -> list[OutEvent]:
        selected = self.selector.process([(match.kind, match.ts, match)])
        if selected is None:
            return []
        return self.limiter.process(selected) or []

    def _select_on_timer(self, match: Match) -> None:
        self._timer_output.append(self._select(match))

    def _emit_groups(self, groups: list[list[OutEvent]], path: Path) -> None:
        emission = 0
        for outputs in groups:
            if outputs:
                self._emit(outputs, path, emission)
                emission += 1

    # -- state -----------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        state["pattern"] = self.machine.get_state()
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self.machine.set_state(state["pattern"])

    def pending_count(self) -> int:
        """How many partial matches this query holds."""
        return self.machine.pending_count()
