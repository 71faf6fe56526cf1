"""Sliding windows: ``length``, ``time``, ``timeLength``, ``externalTime``, ``delay``, ``sort``.

Each current event passes through at once, and the events it pushes out go just before it
in the same chunk, as expired events stamped with the clock (``externalTime``: with the
pushing event's external time). ``time`` and ``timeLength`` also expire on their own timers:
the timer chunk carries only the expired events, stamped with the clock, i.e. the
timestamp of the input that moved the clock past them.
"""

from __future__ import annotations

from collections import deque
from functools import cmp_to_key

from eddy.runtime.events import CURRENT, EXPIRED, RESET, Event, java_compare
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs, time_param

LONG_MIN = -(1 << 63)


class QueueState(Slots):
    __slots__ = ("queue", "count", "last")

    def __init__(self) -> None:
        self.queue: deque[Event] = deque()
        self.count = 0
        self.last = LONG_MIN


class LengthWindow(Window):
    """``#window.length(n)``: the last ``n`` events."""

    def configure(self, args: WindowArgs) -> None:
        self.length = int(args.constant(0))

    def fresh_state(self) -> QueueState:
        return QueueState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: QueueState = self.state
        now = self.context.now
        queue = state.queue
        length = self.length
        out: Chunk = []
        for event in chunk:
            expired = (EXPIRED, event[1], event[2])
            if state.count < length:
                state.count += 1
                queue.append(expired)
                out.append(event)
            elif queue:
                oldest = queue.popleft()
                out.append((EXPIRED, now, oldest[2]))
                out.append(event)
                queue.append(expired)
            else:  # length 0: the event expires as it arrives, and resets the aggregates
                out.append(event)
                out.append(expired)
                out.append((RESET, event[1], event[2]))
        return [out]


class TimeWindow(Window):
    """``#window.time(t)``: events of the last ``t`` ms (``ts > now - t``)."""

    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.time = time_param(args, 0, "time")

    def fresh_state(self) -> QueueState:
        return QueueState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: QueueState = self.state
        queue = state.queue
        span = self.time
        out: Chunk = []
        for event in chunk:
            now = self.context.now
            while queue and queue[0][1] - now + span <= 0:
                out.append((EXPIRED, now, queue.popleft()[2]))
            if event[0] == CURRENT:
                queue.append((EXPIRED, event[1], event[2]))
                out.append(event)
                if state.last < event[1]:
                    self.notify_at(event[1] + span)
                    state.last = event[1]
        return [out] if out else []


class TimeLengthWindow(Window):
    """``#window.timeLength(t, n)``: at most ``n`` events, none older than ``t`` ms."""

    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.time = time_param(args, 0, "timeLength")
        self.length = int(args.constant(1))

    def fresh_state(self) -> QueueState:
        return QueueState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: QueueState = self.state
        queue = state.queue
        now = self.context.now
        span = self.time
        out: Chunk = []
        for event in chunk:
            while queue and queue[0][1] - now + span <= 0:
                state.count -= 1
                out.append((EXPIRED, now, queue.popleft()[2]))
            if event[0] == CURRENT:
                expired = (EXPIRED, event[1], event[2])
                if state.count < self.length:
                    state.count += 1
                    queue.append(expired)
                elif queue:
                    out.append((EXPIRED, now, queue.popleft()[2]))
                    queue.append(expired)
                out.append(event)
                self.notify_at(event[1] + span)
        return [out] if out else []


class ExternalTimeWindow(Window):
    """``#window.externalTime(tsAttr, t)``: a time window on a timestamp attribute."""

    def configure(self, args: WindowArgs) -> None:
        self.position = args.index(0)
        self.time = time_param(args, 1, "externalTime")

    def fresh_state(self) -> QueueState:
        return QueueState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        queue = self.state.queue
        position, span = self.position, self.time
        out: Chunk = []
        for event in chunk:
            now = event[2][position]
            while queue and queue[0][2][position] - now + span <= 0:
                out.append((EXPIRED, now, queue.popleft()[2]))
            if event[0] == CURRENT:
                queue.append((EXPIRED, event[1], event[2]))
            out.append(event)
        return [out]


class DelayWindow(Window):
    """``#window.delay(t)``: each event, released ``t`` ms later with the clock as timestamp."""

    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.delay = time_param(args, 0, "delay")

    def fresh_state(self) -> QueueState:
        return QueueState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: QueueState = self.state
        queue = state.queue
        delay = self.delay
        out: Chunk = []
        for event in chunk:
            now = self.context.now
            while queue and queue[0][1] - now + delay <= 0:
                out.append((CURRENT, now, queue.popleft()[2]))
            if event[0] == CURRENT:
                queue.append(event)
                if state.last < event[1]:
                    self.notify_at(event[1] + delay)
                    state.last = event[1]
        return [out] if out else []


class SortState(Slots):
    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[Event] = []


class SortWindow(Window):
    """``#window.sort(n, attr [, 'asc'|'desc'], …)``: keeps the ``n`` events that sort first;
    an arrival beyond ``n`` expires the one sorting last (the newest among equals)."""

    def configure(self, args: WindowArgs) -> None:
        self.length = int(args.constant(0))
        keys: list[tuple[int, int]] = []
        i = 1
        while i < len(args):
            position = args.index(i)
            order = 1
            if i + 1 < len(args) and isinstance(args.constant(i + 1), str):
                order = -1 if str(args.constant(i + 1)).lower() == "desc" else 1
                i += 1
            keys.append((position, order))
            i += 1

        def compare(a: Event, b: Event) -> int:
            for position, order in keys:
                result = java_compare(a[2][position], b[2][position])
                if result:
                    return order * result
            return 0

        self.sort_key = cmp_to_key(compare)

    def fresh_state(self) -> SortState:
        return SortState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        kept = self.state.events
        now = self.context.now
        out: Chunk = []
        for event in chunk:
            out.append(event)
            kept.append((EXPIRED, event[1], event[2]))
            if len(kept) > self.length:
                kept.sort(key=self.sort_key)
                out.append((EXPIRED, now, kept.pop()[2]))
        return [out]
