"""``#window.externalTimeBatch(tsAttr, t [, start.time [, timeout [, replace.with.batchtime]]])``.

A tumbling window on a timestamp attribute: a batch closes when an event at or after its end
arrives (the window's clock is the largest external timestamp seen), and goes out stamped
with that external time. The first batch starts at the first event's time, or on the grid
of ``start.time`` (a constant, or an attribute read from the first event).

With a ``timeout`` a timer flushes the open batch when no event closes it in time; if events
then arrive for that already-flushed batch, the next flush re-sends the earlier events as
current events again (the reference's ``appendToOutputChunk``), a behaviour kept here.
"""

from __future__ import annotations

from eddy.runtime.events import CURRENT, EXPIRED, RESET, TIMER, Event, java_rem
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs, time_param


class ExternalBatchState(Slots):
    __slots__ = ("current", "expired", "reset", "end_time", "start_time", "last_scheduled",
                 "last_current", "flushed")

    def __init__(self, keep_expired: bool, start_time: int) -> None:
        self.current: list[Event] = []
        self.expired: list[Event] | None = [] if keep_expired else None
        self.reset: Event | None = None
        self.end_time = -1
        self.start_time = start_time
        self.last_scheduled = 0
        self.last_current = 0
        self.flushed = False


class ExternalTimeBatchWindow(Window):
    mode = "BATCH"
    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.position = args.index(0)
        self.time = time_param(args, 1, "externalTimeBatch")
        self.start_enabled = len(args) >= 3
        self.common_start = 0
        self.start_position: int | None = None
        if self.start_enabled:
            if args.is_constant(2):
                self.common_start = int(args.constant(2))
            else:
                self.start_position = args.index(2)
        self.timeout = int(args.constant(3)) if len(args) >= 4 else 0
        self.replace_timestamp = bool(args.constant(4)) if len(args) >= 5 else False

    def fresh_state(self) -> ExternalBatchState:
        keep = self.expects_expired or self.find or self.timeout > 0
        return ExternalBatchState(keep, self.common_start)

    def _end_time(self, time: int, start: int) -> int:
        return time + (self.time - java_rem(time - start, self.time))

    def _schedule_timeout(self, state: ExternalBatchState) -> None:
        state.last_scheduled = self.context.now + self.timeout
        self.notify_at(state.last_scheduled)

    def process(self, chunk: Chunk) -> list[Chunk]:
        if not chunk:
            return []
        state: ExternalBatchState = self.state
        chunks: list[Chunk] = []
        self._init_timing(chunk[0], state)
        position = self.position
        for event in chunk:
            kind = event[0]
            if kind == TIMER:
                if state.last_scheduled <= event[1]:
                    if not state.flushed:
                        self._flush(chunks, state.last_current, True, state)
                        state.flushed = True
                    elif state.current:
                        self._append(chunks, state.last_current, True, state)
                    self._schedule_timeout(state)
                continue
            if kind != CURRENT:
                continue
            time = event[2][position]
            if state.last_current < time:
                state.last_current = time
            if time < state.end_time:
                self._clone_append(event, state)
            else:
                if state.flushed:
                    self._append(chunks, state.last_current, False, state)
                    state.flushed = False
                else:
                    self._flush(chunks, state.last_current, False, state)
                state.end_time = self._end_time(state.last_current, state.start_time)
                self._clone_append(event, state)
                if self.timeout > 0:
                    self._schedule_timeout(state)
        return chunks

    def _init_timing(self, first: Event, state: ExternalBatchState) -> None:
        if state.end_time >= 0 or first[0] == TIMER:
            return
        if self.start_enabled:
            if self.start_position is None:
                state.end_time = self._end_time(first[2][self.position], state.start_time)
            else:
                state.start_time = first[2][self.start_position]
                state.end_time = state.start_time + self.time
        else:
            state.start_time = first[2][self.position]
            state.end_time = state.start_time + self.time
        if self.timeout > 0:
            self._schedule_timeout(state)

    def _flush(self, chunks: list[Chunk], time: int, preserve: bool,
               state: ExternalBatchState) -> None:
        out: Chunk = []
        if self.expects_expired and state.expired:
            out.extend((EXPIRED, time, e[2]) for e in state.expired)
        if state.expired is not None:
            state.expired = []
        if state.current:
            assert state.reset is not None
            out.append((RESET, time, state.reset[2]))
            state.reset = None
            if preserve or state.expired is not None:
                if state.expired is None:
                    state.expired = []
                state.expired.extend((EXPIRED, e[1], e[2]) for e in state.current)
            out.extend(state.current)
        state.current = []
        if out:
            chunks.append(out)

    def _append(self, chunks: list[Chunk], time: int, preserve: bool,
                state: ExternalBatchState) -> None:
        out: Chunk = []
        if state.current:
            resent: Chunk = []
            if state.expired:
                for expired in state.expired:
                    if self.expects_expired:
                        out.append((EXPIRED, time, expired[2]))
                    resent.append((CURRENT, expired[1], expired[2]))
            assert state.reset is not None
            out.append((RESET, time, state.reset[2]))
            out.extend(resent)
            if preserve or state.expired is not None:
                if state.expired is None:
                    state.expired = []
                state.expired.extend((EXPIRED, e[1], e[2]) for e in state.current)
            out.extend(state.current)
        state.current = []
        if out:
            chunks.append(out)

    def _clone_append(self, event: Event, state: ExternalBatchState) -> None:
        data = event[2]
        if self.replace_timestamp:
            p = self.position
            data = data[:p] + (state.end_time,) + data[p + 1:]
        state.current.append((CURRENT, event[1], data))
        if state.reset is None:
            state.reset = (RESET, event[1], event[2])
