"""Output rate limiting by event count and by time (``output [all|first|last] every …``).

Each limiter takes the selector's output chunk and returns what the query emits now (a
chunk, or None); the time-driven ones also get their own timer chunks through ``on_timer``.
They follow the reference's ``*PerEventOutputRateLimiter`` and ``*PerTimeOutputRateLimiter``
classes, quirks included:

- ``first every N events`` counts every event of a chunk, reset events too, and with
  ``N = 1`` emits only the very first event ever (its counter never returns to 1);
- ``first every <time>`` emits only the first event of a chunk that opens a period
  (``outputTime + value <= now``), whatever its kind; periods start at that event, not on a
  grid;
- ``all``/``last every <time>`` flush on a timer that the reference arms from the wall clock
  at start-up; here the app starts at its first event, so the first flush is due one period
  after the first event's timestamp and later ones every period after that.
"""

from __future__ import annotations

from typing import Any

from eddy.runtime.context import Context, Scheduler
from eddy.runtime.events import CURRENT, EXPIRED, OutEvent

Emitted = list[OutEvent] | None


class RateLimiter:
    """Pass-through: every selected event is emitted at once.

    A subclass keeps all it must checkpoint in ``state`` (plain lists and dicts, so it
    pickles); ``get_state``/``set_state`` hand that over as it is."""

    timed = False
    state: Any = None

    def process(self, chunk: list[OutEvent]) -> Emitted:
        return chunk

    def on_timer(self, time: int) -> Emitted:
        return None

    def start(self, time: int) -> None:
        return None

    def get_state(self) -> Any:
        return self.state

    def set_state(self, state: Any) -> None:
        self.state = state


class AllPerEvents(RateLimiter):
    """``output [all] every N events``: release the held events at each N-th one."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.state: list[Any] = [0, []]

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        state = self.state
        for event in chunk:
            if event[0] == CURRENT or event[0] == EXPIRED:
                state[1].append(event)
                state[0] += 1
                if state[0] == self.value:
                    out.extend(state[1])
                    state[1] = []
                    state[0] = 0
        return out or None


class FirstPerEvents(RateLimiter):
    """``output first every N events`` without ``group by``."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.state: list[int] = [0]

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        state = self.state
        for event in chunk:
            state[0] += 1
            if state[0] == 1:
                out.append(event)
            elif state[0] == self.value:
                state[0] = 0
        return out or None


class FirstGroupByPerEvents(RateLimiter):
    """``output first every N events`` with ``group by``: a count per group."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.state: dict[Any, int] = {}

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        counts = self.state
        for event in chunk:
            key = event[3]
            count = counts.get(key)
            if count is None:
                counts[key] = 1
                out.append(event)
            elif count == self.value - 1:
                del counts[key]
            else:
                counts[key] = count + 1
        return out or None


class LastPerEvents(RateLimiter):
    """``output last every N events`` without ``group by``: each N-th event."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.state: list[int] = [0]

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        state = self.state
        for event in chunk:
            if event[0] == CURRENT or event[0] == EXPIRED:
                state[0] += 1
                if state[0] == self.value:
                    out.append(event)
                    state[0] = 0
        return out or None


class LastGroupByPerEvents(RateLimiter):
    """``output last every N events`` with ``group by``: each group's last, every N events."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.state: list[Any] = [0, {}]

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        state = self.state
        for event in chunk:
            if event[0] == CURRENT or event[0] == EXPIRED:
                state[1][event[3]] = event
                state[0] += 1
                if state[0] == self.value:
                    state[0] = 0
                    out.extend(state[1].values())
                    state[1] = {}
        return out or None


class FirstPerTime(RateLimiter):
    """``output first every <time>`` without ``group by``."""

    def __init__(self, value: int, context: Context) -> None:
        self.value = value
        self.context = context
        self.state: list[Any] = [None]

    def process(self, chunk: list[OutEvent]) -> Emitted:
        now = self.context.now
        opened = self.state[0]
        if opened is None or opened + self.value <= now:
            self.state[0] = now
            return [chunk[0]]
        return None


class FirstGroupByPerTime(RateLimiter):
    """``output first every <time>`` with ``group by``: a period per group."""

    def __init__(self, value: int, context: Context) -> None:
        self.value = value
        self.context = context
        self.state: dict[Any, int] = {}

    def process(self, chunk: list[OutEvent]) -> Emitted:
        now = self.context.now
        opened = self.state
        out: list[OutEvent] = []
        for event in chunk:
            key = event[3]
            last = opened.get(key)
            if last is None or last + self.value <= now:
                opened[key] = now
                out.append(event)
        return out or None


class TimedLimiter(RateLimiter):
    """Base of the limiters flushed by their own scheduler every ``value`` ms."""

    timed = True

    def __init__(self, value: int, scheduler: Scheduler) -> None:
        self.value = value
        self.scheduler = scheduler
        self.state: list[Any] = [0, self.empty()]  # [scheduled time, held events]

    def empty(self) -> Any:
        raise NotImplementedError

    def start(self, time: int) -> None:
        self.state[0] = time + self.value
        self.scheduler.notify_at(self.state[0])

    def on_timer(self, time: int) -> Emitted:
        state = self.state
        if time < state[0]:
            return None
        out = self.flush()
        state[0] += self.value
        self.scheduler.notify_at(state[0])
        return out

    def flush(self) -> Emitted:
        raise NotImplementedError


class AllPerTime(TimedLimiter):
    """``output [all] every <time>``: everything held since the last flush."""

    def empty(self) -> Any:
        return []

    def process(self, chunk: list[OutEvent]) -> Emitted:
        held = self.state[1]
        for event in chunk:
            if event[0] == CURRENT or event[0] == EXPIRED:
                held.append(event)
        return None

    def flush(self) -> Emitted:
        held = self.state[1]
        self.state[1] = []
        return held or None


class LastPerTime(TimedLimiter):
    """``output last every <time>`` without ``group by``."""

    def empty(self) -> Any:
        return None

    def process(self, chunk: list[OutEvent]) -> Emitted:
        for event in chunk:
            if event[0] == CURRENT or event[0] == EXPIRED:
                self.state[1] = event
        return None

    def flush(self) -> Emitted:
        last = self.state[1]
        self.state[1] = None
        return [last] if last is not None else None


class LastGroupByPerTime(TimedLimiter):
    """``output last every <time>`` with ``group by``: each group's last event."""

    def empty(self) -> Any:
        return {}

    def process(self, chunk: list[OutEvent]) -> Emitted:
        held = self.state[1]
        for event in chunk:
            if event[0] == CURRENT or event[0] == EXPIRED:
                held[event[3]] = event
        return None

    def flush(self) -> Emitted:
        held = self.state[1]
        self.state[1] = {}
        return list(held.values()) or None
