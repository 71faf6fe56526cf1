"""``#window.session(gap [, key] [, allowed.latency])``: sessions that close after a gap.

Each event passes through as current. A session (per key) closes on its timer once no event
arrived for ``gap``; its events then go out as expired events with their *own* timestamps,
at the end of the timer chunk (the timer event itself stays in the chunk; the selector
skips it). With ``allowed.latency`` a closed session is kept a while longer as the
"previous" session, so late events can still join (or merge the two sessions).

Sessions that close on the same timer are ordered by end time; ties keep the order of the
reference's hash maps (``javahash``). Events older than the current session are inserted
where the reference's chunk iterator happens to stand, which is not always the front; this
too is reproduced.
"""

from __future__ import annotations

from eddy.runtime.events import CURRENT, EXPIRED, Event
from eddy.runtime.javahash import ConcurrentHashOrder, hash_map_capacity, hash_map_order
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs, time_param

DEFAULT_KEY = "default-key"


class Session(Slots):
    """A ``SessionComplexEventChunk``: events, timestamps and the chunk's iterator cursor."""

    __slots__ = ("events", "start", "end", "alive", "cursor")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.start = 0
        self.end = 0
        self.alive = 0
        self.cursor: int | None = None  # index of the iterator's lastReturned

    def set_times(self, start: int, end: int, alive: int) -> None:
        self.start, self.end, self.alive = start, end, alive

    def clear(self) -> None:
        self.events = []
        self.cursor = None

    def insert_before_cursor(self, events: list[Event]) -> None:
        """``if (hasNext()) next(); insertBeforeCurrent(events)``."""
        if self.cursor is None:
            if self.events:
                self.cursor = 0
        elif self.cursor + 1 < len(self.events):
            self.cursor += 1
        at = self.cursor if self.cursor is not None else 0
        self.events[at:at] = events
        if self.cursor is not None:
            self.cursor += len(events)


class SessionState(Slots):
    __slots__ = ("sessions", "order", "end_capacity", "expired")

    def __init__(self) -> None:
        self.sessions: dict[str, list[Session]] = {}  # key -> [current, previous]
        self.order = ConcurrentHashOrder()
        self.end_capacity = 16
        self.expired: list[Event] = []


class SessionWindow(Window):
    mode = "GROUP"
    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.gap = time_param(args, 0, "session")
        self.key_position: int | None = None
        self.latency = 0
        if len(args) == 3:
            self.key_position = args.index(1)
            self.latency = time_param(args, 2, "session")
        elif len(args) == 2:
            if args.is_constant(1):
                self.latency = time_param(args, 1, "session")
            else:
                self.key_position = args.index(1)
        if self.latency > self.gap:
            raise ValueError("#window.session(): allowed.latency must not exceed the gap")

    def fresh_state(self) -> SessionState:
        return SessionState()

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: SessionState = self.state
        gap, latency = self.gap, self.latency
        out: Chunk = []
        for event in chunk:
            ts = event[1]
            end = ts + gap
            alive = end + latency
            if event[0] != CURRENT:
                self._current_timeout(ts, state)
                if latency > 0:
                    self._previous_timeout(ts, state)
                out.append(event)
                continue
            key = DEFAULT_KEY
            if self.key_position is not None:
                key = str(event[2][self.key_position])
            pair = state.sessions.get(key)
            if pair is None:
                pair = state.sessions[key] = [Session(), Session()]
                state.order.add(key)
            current = pair[0]
            expired = (EXPIRED, ts, event[2])
            if not current.events:
                current.events.append(expired)
                current.set_times(ts, end, alive)
                self.notify_at(end)
            elif ts >= current.start:
                if ts <= current.end:
                    current.set_times(current.start, end, alive)
                    current.events.append(expired)
                    self.notify_at(end)
                elif latency > 0:
                    self._move_to_previous(pair, state)
                    current.clear()
                    current.set_times(ts, end, alive)
                    current.events.append(expired)
                    self.notify_at(end)
            elif self._late(ts, expired, pair):
                continue  # too late for any session: the event is dropped entirely
            out.append(event)
        if state.expired:
            out.extend(state.expired)
            state.expired = []
        return [out]

    def _move_to_previous(self, pair: list[Session], state: SessionState) -> None:
        current, previous = pair
        if previous.events:
            state.expired.extend(previous.events)
            previous.clear()
        previous.events.extend(current.events)
        previous.set_times(current.start, current.end, current.alive)
        self.notify_at(current.alive)

    def _merge(self, previous: Session, current: Session) -> None:
        if previous.events and previous.end >= current.start - self.gap:
            current.insert_before_cursor(previous.events)
            current.start = previous.start
            previous.clear()

    def _late(self, ts: int, expired: Event, pair: list[Session]) -> bool:
        """Files an event older than its key's current session; True if it is dropped."""
        current, previous = pair
        gap = self.gap
        if self.latency <= 0:
            if ts >= current.start - gap:
                current.insert_before_cursor([expired])
                current.start = ts
                return False
            return True
        if ts >= current.start - gap:
            current.insert_before_cursor([expired])
            current.start = ts
            self._merge(previous, current)
            return False
        if not previous.events and ts < current.start - gap:
            return True
        if ts >= previous.start - gap:
            previous.events.append(expired)
            if ts <= previous.end - gap and ts < previous.start:
                previous.start = ts
            else:
                previous.end = ts + gap
                previous.alive = ts + gap + self.latency
                self._merge(previous, current)
            return False
        return True

    def _by_end(self, state: SessionState, which: int) -> list[tuple[str, int]]:
        """Live sessions by end time; ties in the reference's ``HashMap`` order."""
        entries = [(key, state.sessions[key][which].end) for key in state.order
                   if state.sessions[key][which].events]
        state.end_capacity = hash_map_capacity(len(entries), state.end_capacity)
        if len(entries) <= 1:
            return entries
        ends = dict(entries)
        ordered = [(key, ends[key]) for key in
                   hash_map_order([k for k, _ in entries], state.end_capacity)]
        ordered.sort(key=lambda entry: entry[1])
        return ordered

    def _current_timeout(self, ts: int, state: SessionState) -> None:
        for key, end in self._by_end(state, 0):
            current, previous = state.sessions[key]
            if not (current.events and ts >= end):
                break
            if self.latency > 0:
                previous.events.extend(current.events)
                previous.set_times(current.start, current.end, current.alive)
                self.notify_at(current.alive)
            else:
                state.expired.extend(current.events)
            current.clear()

    def _previous_timeout(self, ts: int, state: SessionState) -> None:
        for key, _ in self._by_end(state, 1):
            previous = state.sessions[key][1]
            if not (previous.events and ts >= previous.alive):
                break
            state.expired.extend(previous.events)
            previous.clear()
