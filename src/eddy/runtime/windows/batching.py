"""Tumbling windows: ``lengthBatch``, ``timeBatch``, ``batch``.

A batch goes out as one chunk when it closes: first the previous batch as expired events
stamped with the clock (only when the query outputs expired events), then a reset event
(the aggregates start again), then the batch's current events with their own timestamps.
With ``stream.current.event`` each event passes at once and the batch boundary only emits
the expired events and the reset.
"""

from __future__ import annotations

from eddy.runtime.events import CURRENT, EXPIRED, RESET, Event, java_rem
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs, time_param


class BatchState(Slots):
    __slots__ = ("count", "current", "expired", "reset", "next_emit")

    def __init__(self, keep_current: bool, keep_expired: bool) -> None:
        self.count = 0
        self.current: list[Event] | None = [] if keep_current else None
        self.expired: list[Event] | None = [] if keep_expired else None
        self.reset: Event | None = None
        self.next_emit = -1


def _stamped(events: list[Event], now: int) -> list[Event]:
    return [(EXPIRED, now, e[2]) for e in events]


class LengthBatchWindow(Window):
    """``#window.lengthBatch(n [, stream.current.event])``."""

    mode = "BATCH"

    def configure(self, args: WindowArgs) -> None:
        self.length = int(args.constant(0))
        self.stream_current = bool(args.constant(1)) if len(args) > 1 else False

    def fresh_state(self) -> BatchState:
        return BatchState(not self.stream_current, self.expects_expired or self.find)

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: BatchState = self.state
        now = self.context.now
        chunks: list[Chunk] = []
        for event in chunk:
            out: Chunk = []
            if self.length == 0:
                out.append(event)
                if self.expects_expired:
                    out.append((EXPIRED, now, event[2]))
                out.append((RESET, now, event[2]))
            else:
                if state.reset is None:
                    state.reset = (RESET, event[1], event[2])
                if self.stream_current:
                    self._stream_current(event, out, now, state)
                else:
                    self._full_batch(event, out, now, state)
            if out:
                chunks.append(out)
        return chunks

    def _flush_expired_and_reset(self, out: Chunk, now: int, state: BatchState) -> None:
        if self.expects_expired and state.expired:
            out.extend(_stamped(state.expired, now))
            state.expired = []
        if state.reset is not None:
            out.append((RESET, now, state.reset[2]))
            state.reset = None

    def _full_batch(self, event: Event, out: Chunk, now: int, state: BatchState) -> None:
        assert state.current is not None
        state.current.append(event)
        state.count += 1
        if state.count == self.length:
            self._flush_expired_and_reset(out, now, state)
            if state.current:
                if state.expired is not None:
                    state.expired.extend((EXPIRED, e[1], e[2]) for e in state.current)
                out.extend(state.current)
                state.current = []
            state.count = 0

    def _stream_current(self, event: Event, out: Chunk, now: int, state: BatchState) -> None:
        state.count += 1
        if state.count == self.length + 1:
            self._flush_expired_and_reset(out, now, state)
            state.count = 1
        out.append(event)
        if state.expired is not None:
            state.expired.append((EXPIRED, event[1], event[2]))


class TimeBatchWindow(Window):
    """``#window.timeBatch(t [, start.time] [, stream.current.event])``.

    The first batch closes ``t`` after the first event (or at the next ``start.time + k·t``);
    each boundary is a timer, so a batch closes before the event that passes it arrives.
    """

    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.time = time_param(args, 0, "timeBatch")
        self.start_time: int | None = None
        self.stream_current = False
        if len(args) >= 2:
            second = args.constant(1)
            if isinstance(second, bool):
                self.stream_current = second
            else:
                self.start_time = int(second)
        if len(args) >= 3:
            self.stream_current = bool(args.constant(2))
        self.mode = "RESET" if self.stream_current else "BATCH"

    def fresh_state(self) -> BatchState:
        return BatchState(not self.stream_current, self.expects_expired or self.find)

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: BatchState = self.state
        now = self.context.now
        if state.next_emit == -1:
            if self.start_time is not None:
                elapsed = java_rem(now - self.start_time, self.time)
                state.next_emit = now + (self.time - elapsed)
            else:
                state.next_emit = now + self.time
            self.notify_at(state.next_emit)
        send = now >= state.next_emit
        if send:
            state.next_emit += self.time
            self.notify_at(state.next_emit)
        out: Chunk = []
        for event in chunk:
            if event[0] != CURRENT:
                if self.stream_current:
                    out.append(event)  # the timer stays in the chunk; the selector skips it
                continue
            if state.reset is None:
                state.reset = (RESET, event[1], event[2])
            if not self.stream_current:
                assert state.current is not None
                state.current.append(event)
            else:
                out.append(event)
                if state.expired is not None:
                    state.expired.append((EXPIRED, event[1], event[2]))
        if send:
            if self.expects_expired and state.expired:
                out.extend(_stamped(state.expired, now))
                state.expired = []
            if state.reset is not None:
                out.append(state.reset)
                state.reset = None
            if state.current:
                if state.expired is not None:
                    state.expired.extend((EXPIRED, e[1], e[2]) for e in state.current)
                out.extend(state.current)
                state.current = []
        return [out] if out else []


class BatchWindowState(Slots):
    __slots__ = ("expired", "reset")

    def __init__(self, keep_expired: bool) -> None:
        self.expired: list[Event] | None = [] if keep_expired else None
        self.reset: Event | None = None


class BatchWindow(Window):
    """``#window.batch([n])``: each arriving chunk is a batch (cut every ``n`` events).

    The previous batch's reset event goes out in front of the next batch, not when the
    batch closes: aggregates reset when the next chunk arrives.
    """

    mode = "BATCH"

    def configure(self, args: WindowArgs) -> None:
        self.length = int(args.constant(0)) if len(args) else 0

    def fresh_state(self) -> BatchWindowState:
        return BatchWindowState(self.expects_expired or self.find)

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: BatchWindowState = self.state
        now = self.context.now
        chunks: list[Chunk] = []
        out: Chunk = []
        if self.expects_expired:
            assert state.expired is not None
            if state.expired:
                out.extend(_stamped(state.expired, now))
                if state.reset is not None:
                    out.append(state.reset)
                    state.reset = None
            state.expired = []
        batch: list[Event] = []
        count = 0
        for event in chunk:
            if self.expects_expired:
                assert state.expired is not None
                state.expired.append((EXPIRED, event[1], event[2]))
            batch.append(event)
            count += 1
            if count == self.length:
                self._close(batch, out, state)
                batch, count = [], 0
                if out:
                    chunks.append(out)
                    out = []
        if batch:
            self._close(batch, out, state)
        if out:
            chunks.append(out)
        return chunks

    @staticmethod
    def _close(batch: list[Event], out: Chunk, state: BatchWindowState) -> None:
        if state.reset is not None:
            out.append(state.reset)
        first = batch[0]
        state.reset = (RESET, first[1], first[2])
        out.extend(batch)
