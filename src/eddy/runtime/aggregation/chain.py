"""Where the reference holds an aggregation's not yet written buckets, for ``within``.

Siddhi 5.1 aggregates through a chain of incremental executors, one per granularity
(``IncrementalExecutor``): the finest takes each event; when an event (or the timer the
chain passes down) reaches a level's next emit time, that level writes its bucket to its
table and hands it to the next, coarser level. A retrieval ``within start, end per P``
(``IncrementalAggregateCompileCondition.find``) reads P's table and, with ``aggregate by``
(external time), also every level up to P still in memory (``IncrementalDataAggregator``),
and filters each of those parts by its own ``AGG_EVENT_TIMESTAMP`` — the bucket start *at
that part's level* (``AggregationRuntime.compileExpression``: ``start <= t < end``) — before
``OutOfOrderEventsDataAggregator`` merges them into P's buckets. So P's open bucket is kept,
in part, when its start lies before ``start`` but a finer in-memory part starts after it.

eddy keeps every granularity's rows complete (``runtime``); :class:`ExecutorChain` only
replays the chain's timing (each level's bucket start, next emit time and open bucket) so
that a read can cut P's open bucket into the parts the reference filters one by one. With
events in time order a level's in-memory part is exactly the rows of the next finer level
that have closed since its own bucket opened, so the parts come from the rows eddy keeps.
(A late event, which the reference keys in the open bucket of the finest level, is counted
in its own bucket's part.) Without ``aggregate by`` the in-memory rows carry the open
bucket's start (the P executor's ``startTimeOfAggregates``), which is what eddy's rows
carry already, so the chain is kept for external time only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from eddy.runtime.aggregation.timeutil import bucket_start, next_bucket_start

__all__ = ["ExecutorChain"]


class ExecutorChain:
    """The timing of the reference's executor chain over ``granularities`` (finest first)."""

    def __init__(self, granularities: Sequence[str]) -> None:
        self.granularities = tuple(granularities)
        n = len(self.granularities)
        # per level: startTimeOfAggregates, nextEmitTime, the open bucket's start, whether
        # that bucket holds anything (the reference dispatches only a processed store)
        self.state: list[list[Any]] = [[-1] * n, [-1] * n, [-1] * n, [False] * n]

    def add(self, time: int) -> None:
        """An event of (external) time ``time`` reaches the finest level."""
        if time >= self.state[1][0]:
            self._execute(0, time, current=True)
        self.state[3][0] = True

    def add_all(self, times: Iterable[int]) -> None:
        """Events in their order (a vectorised batch)."""
        emit = self.state[1]
        for time in times:
            if time >= emit[0]:
                self._execute(0, time, current=True)
        self.state[3][0] = True

    def _execute(self, level: int, time: int, current: bool) -> None:
        start, emit, open_at, holds = self.state
        granularity = self.granularities[level]
        start[level] = bucket_start(time, granularity)
        if time >= emit[level]:
            emit[level] = next_bucket_start(time, granularity)
            coarser = level + 1 < len(self.granularities)
            if coarser and holds[level]:  # the closed bucket, then the timer
                self._execute(level + 1, open_at[level], current=True)
            open_at[level] = start[level]
            holds[level] = False
            if coarser:
                self._execute(level + 1, start[level], current=False)
        if current:
            holds[level] = True

    def open_bucket(self, level: int) -> int:
        """The start of the bucket ``level`` holds in memory (-1 before any event)."""
        return int(self.state[2][level])

    def parts(self, level: int) -> list[tuple[int, str, int, int]]:
        """P = ``level``'s open bucket as the reference reads it: one part per level up to
        P, each ``(its AGG_EVENT_TIMESTAMP, granularity, from, to)`` — its events are those
        of the rows of that granularity whose bucket starts in ``[from, to)``."""
        open_at = self.state[2]
        first = self.granularities[0]
        found = [(open_at[0], first, open_at[0], open_at[0] + 1)]
        for lower in range(1, level + 1):
            found.append((open_at[lower], self.granularities[lower - 1], open_at[lower],
                          open_at[lower - 1]))
        return found

    def get_state(self) -> list[list[Any]]:
        return [list(values) for values in self.state]

    def set_state(self, state: list[list[Any]] | None) -> None:
        if state is not None:
            self.state = [list(values) for values in state]
