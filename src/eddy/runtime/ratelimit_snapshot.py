"""``output snapshot every <time>``: periodically re-emit what the query's output currently is.

The reference picks one of seven limiters by whether the query has a window, a ``group by``
and top-level aggregates (``WrappedSnapshotOutputRateLimiter``); each is reproduced here.
A flush is due whenever an event or timer at or after the scheduled time passes through, and
it re-emits copies of the held events (with their own timestamps). The selector runs without
batching for these queries, so it hands over every event of a chunk.

Quirks kept: the windowed aggregating limiters match an expired event to a held one with a
comparator that skips the aggregate positions using the wrong index (``positions[i]``
instead of ``positions[ignoreIndex]``), so with aggregates in some positions it compares
aggregate values too; the non-windowed ``group by`` limiter ignores expired events; as with
the other time limiters, the first period starts at the app's first event instead of the
wall clock.
"""

from __future__ import annotations

from typing import Any

from eddy.lang import ast
from eddy.runtime.context import Scheduler
from eddy.runtime.events import CURRENT, EXPIRED, RESET, OutEvent, java_equals
from eddy.runtime.ratelimit import Emitted, RateLimiter


def output_event_type(query: ast.Query) -> str:
    """The events a query inserts: as written, except that ``output snapshot`` with no
    event type written inserts all events — the reference's ``Query.updateOutputEventType``
    fills an unset type with ``ALL_EVENTS`` for a snapshot rate. (Only an explicit
    ``insert current events`` is an error there; eddy's AST does not keep that ``current``
    was written, so it runs such a query as if it had not been.)"""
    rate = query.output_rate
    if rate is not None and rate.unit == "snapshot" and query.output.event_type == "current":
        return "all"
    return query.output.event_type


def snapshot_conflict(query: ast.Query) -> str | None:
    """Why the reference refuses the query's snapshot rate (``QueryParser``: it must insert
    all events), or None."""
    rate = query.output_rate
    if rate is not None and rate.unit == "snapshot" and output_event_type(query) != "all":
        return "'output snapshot' needs 'insert all events' (as the reference requires)"
    return None


def _same_data(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """``Arrays.equals`` over two output rows."""
    return len(a) == len(b) and all(java_equals(x, y) for x, y in zip(a, b))


class SnapshotLimiter(RateLimiter):
    """Base: a scheduled time plus whatever the variant holds (``state[1:]``)."""

    timed = True

    def __init__(self, value: int, scheduler: Scheduler) -> None:
        self.value = value
        self.scheduler = scheduler
        self.state: list[Any] = self.fresh()

    def fresh(self) -> list[Any]:
        raise NotImplementedError

    def start(self, time: int) -> None:
        self.state[0] = time + self.value
        self.scheduler.notify_at(self.state[0])

    def _try_flush(self, time: int, out: list[OutEvent]) -> None:
        state = self.state
        if time >= state[0]:
            out.extend(self.snapshot())
            state[0] += self.value
            self.scheduler.notify_at(state[0])

    def snapshot(self) -> list[OutEvent]:
        raise NotImplementedError

    def on_timer(self, time: int) -> Emitted:
        out: list[OutEvent] = []
        self._try_flush(time, out)
        return out or None

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        for event in chunk:
            self._try_flush(event[1], out)
            self.hold(event)
        return out or None

    def hold(self, event: OutEvent) -> None:
        raise NotImplementedError


class PerSnapshot(SnapshotLimiter):
    """No window, no ``group by``: the last current event."""

    def fresh(self) -> list[Any]:
        return [0, None]

    def hold(self, event: OutEvent) -> None:
        if event[0] == CURRENT:
            self.state[1] = event

    def snapshot(self) -> list[OutEvent]:
        return [self.state[1]] if self.state[1] is not None else []


class GroupByPerSnapshot(SnapshotLimiter):
    """No window, ``group by``: each group's last current event; expired events ignored."""

    def fresh(self) -> list[Any]:
        return [0, {}]

    def process(self, chunk: list[OutEvent]) -> Emitted:
        out: list[OutEvent] = []
        for event in chunk:
            if event[0] == CURRENT:
                self._try_flush(event[1], out)
                self.state[1][event[3]] = event
        return out or None

    def hold(self, event: OutEvent) -> None:  # pragma: no cover - process() is overridden
        raise AssertionError

    def snapshot(self) -> list[OutEvent]:
        return list(self.state[1].values())


class WindowedPerSnapshot(SnapshotLimiter):
    """A window and no aggregates: the events currently in the window's output."""

    def fresh(self) -> list[Any]:
        return [0, []]

    def hold(self, event: OutEvent) -> None:
        kind = event[0]
        held: list[OutEvent] = self.state[1]
        if kind == CURRENT:
            held.append(event)
        elif kind == EXPIRED:
            for i, kept in enumerate(held):
                if _same_data(kept[2], event[2]):
                    del held[i]
                    break
        elif kind == RESET:
            held.clear()

    def snapshot(self) -> list[OutEvent]:
        return list(self.state[1])


class AllAggregationPerSnapshot(SnapshotLimiter):
    """A window, only aggregates, no ``group by``: the last current event, forgotten on
    any other event."""

    def fresh(self) -> list[Any]:
        return [0, None]

    def hold(self, event: OutEvent) -> None:
        self.state[1] = event if event[0] == CURRENT else None

    def snapshot(self) -> list[OutEvent]:
        return [self.state[1]] if self.state[1] is not None else []


class _AggregationComparing(SnapshotLimiter):
    """Shared by the two limiters that mix plain and aggregate attributes."""

    def __init__(self, value: int, scheduler: Scheduler, positions: list[int]) -> None:
        self.positions = positions
        super().__init__(value, scheduler)

    def _matches(self, first: tuple[Any, ...], second: tuple[Any, ...]) -> bool:
        """The reference comparator, its index slip included (0 means equal)."""
        positions = self.positions
        ignored = 0
        skip = positions[0]
        for i, value in enumerate(first):
            if i == skip:
                ignored += 1
                if ignored == len(positions):
                    skip = -1
                else:
                    skip = positions[i] if i < len(positions) else -1
                continue
            if not java_equals(value, second[i]):
                return False
        return True

    def _patched(self, event: OutEvent, values: dict[int, Any]) -> OutEvent:
        data = list(event[2])
        for position in self.positions:
            data[position] = values.get(position)
        return (event[0], event[1], tuple(data), event[3])


class AggregationWindowedPerSnapshot(_AggregationComparing):
    """A window, some aggregates, no ``group by``: the window's events with the latest
    aggregate values."""

    def fresh(self) -> list[Any]:
        return [0, [], {}]

    def hold(self, event: OutEvent) -> None:
        kind = event[0]
        held: list[OutEvent] = self.state[1]
        values: dict[int, Any] = self.state[2]
        if kind == CURRENT:
            held.append(event)
            for position in self.positions:
                values[position] = event[2][position]
        elif kind == EXPIRED:
            for i, kept in enumerate(held):
                if self._matches(event[2], kept[2]):
                    del held[i]
                    for position in self.positions:
                        values[position] = event[2][position]
                    break
        elif kind == RESET:
            held.clear()
            values.clear()

    def snapshot(self) -> list[OutEvent]:
        return [self._patched(e, self.state[2]) for e in self.state[1]]


class AllAggregationGroupByWindowedPerSnapshot(SnapshotLimiter):
    """A window, ``group by``, only aggregates: each live group's last event."""

    def fresh(self) -> list[Any]:
        return [0, {}]

    def hold(self, event: OutEvent) -> None:
        holders: dict[Any, list[Any]] = self.state[1]
        holder = holders.get(event[3])
        if holder is None:
            holder = holders[event[3]] = [0, None]
        kind = event[0]
        if kind == CURRENT:
            holder[0] += 1
            holder[1] = event
        elif kind == EXPIRED:
            holder[0] -= 1
            holder[1] = event
        elif kind == RESET:
            holders.clear()

    def snapshot(self) -> list[OutEvent]:
        holders: dict[Any, list[Any]] = self.state[1]
        out: list[OutEvent] = []
        for key in list(holders):
            holder = holders[key]
            if holder[0] <= 0:
                holder[1] = None
                del holders[key]
            else:
                out.append(holder[1])
        return out


class AggregationGroupByWindowedPerSnapshot(_AggregationComparing):
    """A window, ``group by``, some aggregates: one event per group with its latest
    aggregate values."""

    def fresh(self) -> list[Any]:
        return [0, [], {}]

    def hold(self, event: OutEvent) -> None:
        held: list[OutEvent] = self.state[1]
        by_group: dict[Any, dict[int, Any]] = self.state[2]
        values = by_group.get(event[3])
        if values is None:
            values = by_group[event[3]] = {}
        kind = event[0]
        if kind == CURRENT:
            held.append(event)
            for position in self.positions:
                values[position] = event[2][position]
        elif kind == EXPIRED:
            for i, kept in enumerate(held):
                if self._matches(kept[2], event[2]):
                    del held[i]
                    for position in self.positions:
                        values[position] = event[2][position]
                    break
        elif kind == RESET:
            held.clear()
            by_group.clear()

    def snapshot(self) -> list[OutEvent]:
        by_group: dict[Any, dict[int, Any]] = self.state[2]
        seen: set[Any] = set()
        out: list[OutEvent] = []
        for event in self.state[1]:
            if event[3] not in seen:
                seen.add(event[3])
                out.append(self._patched(event, by_group.get(event[3], {})))
        return out


def snapshot_limiter(value: int, scheduler: Scheduler, *, windowed: bool, group_by: bool,
                     aggregate_positions: list[int], outputs: int) -> SnapshotLimiter:
    """The variant the reference's ``WrappedSnapshotOutputRateLimiter.init`` would pick."""
    if not windowed:
        return GroupByPerSnapshot(value, scheduler) if group_by else PerSnapshot(value, scheduler)
    if not aggregate_positions:
        return WindowedPerSnapshot(value, scheduler)
    if len(aggregate_positions) == outputs:
        if group_by:
            return AllAggregationGroupByWindowedPerSnapshot(value, scheduler)
        return AllAggregationPerSnapshot(value, scheduler)
    if group_by:
        return AggregationGroupByWindowedPerSnapshot(value, scheduler, aggregate_positions)
    return AggregationWindowedPerSnapshot(value, scheduler, aggregate_positions)
