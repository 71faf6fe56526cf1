"""``#window.timeBatch(t)`` with ``avg``/``sum``/``count`` per group, a micro-batch at a time.

The order of the runtime, which the outputs must follow exactly:

- The clock is the largest timestamp seen so far (from 0), over every row the operator
  receives. The first row that passes the filters opens the first batch and schedules its
  end at ``B_1 = clock + t``; batch ``k`` ends at ``B_k = B_1 + (k - 1) t``.
- A batch ends at the first row whose clock reaches its end, *before* that row is added: so
  with ``epoch(c) = number of ends <= c``, a passing row belongs to batch
  ``epoch(c_row)`` and batch ``k`` is flushed by the first row with ``epoch > k``. A late
  row (behind the clock) moves nothing; a jump past several ends flushes the batch once
  (the later, empty batches emit nothing).
- A flush resets every aggregate and replays the batch's events in arrival order: per group
  in order of first appearance, one output with the group's last event (its timestamp and
  attributes) and the aggregates over the batch (sums from 0.0, left to right; see
  :mod:`.sums`). Without ``group by`` the whole batch is one group.
- The flush is a timer: its outputs carry the flushing row's ``_seq`` and the ``_order``
  ``(0, scheduler, 0, 0, 0, i)``, ``i`` the group's position in the flush.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eddy.engine.operators.window_aggregates.emitted import Emitted
from eddy.engine.operators.window_aggregates.spec import WindowSpec
from eddy.engine.operators.window_aggregates.sums import (
    factorize,
    segmented_cumsum,
    signed_values,
)


@dataclass
class BatchState:
    """The clock, the first batch's end, and the open batch's events (arrival order)."""

    clock: int = 0
    first_end: int | None = None
    ts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    keys: list[np.ndarray] = field(default_factory=list)
    values: np.ndarray | None = None  # [events, arguments], NaN = null
    selected: dict[str, np.ndarray] = field(default_factory=dict)


def process(state: BatchState, spec: WindowSpec, ts: np.ndarray, passing: np.ndarray,
            keys: Sequence[np.ndarray], values: np.ndarray,
            selected: Mapping[str, np.ndarray]) -> Emitted:
    """One micro-batch, rows in ``_seq`` order: updates ``state``, returns the outputs (see
    :func:`.sliding_time.process` for the arguments)."""
    n, width, span = len(ts), len(spec.argument_columns), spec.span
    clock = np.maximum.accumulate(np.maximum(ts, state.clock)) if n else ts
    rows = np.flatnonzero(passing)
    if state.first_end is None and len(rows):
        state.first_end = int(clock[rows[0]]) + span
    if state.first_end is None:
        state.clock = int(clock[-1]) if n else state.clock
        return _nothing(width, selected)
    open_epoch = _epoch(np.array([state.clock]), state.first_end, span)[0]
    epochs = _epoch(clock, state.first_end, span)
    if n:
        state.clock = int(clock[-1])

    # the events: the open batch's, then this micro-batch's passing rows
    carried = len(state.ts)
    event_ts = np.concatenate([state.ts, ts[rows]])
    event_epoch = np.concatenate([np.full(carried, open_epoch), epochs[rows]])
    event_keys = [np.concatenate([old, k[rows]]) for old, k in zip(state.keys, keys)] \
        if state.keys else [k[rows] for k in keys]
    old_values = state.values if state.values is not None else np.empty((0, width))
    event_values = np.concatenate([old_values, values[rows]])
    event_selected = {c: np.concatenate([state.selected[c], column[rows]])
                      if c in state.selected else column[rows]
                      for c, column in selected.items()}
    flush_row = np.searchsorted(epochs, event_epoch, "right")  # first row past its batch
    flushed = int(np.searchsorted(flush_row, n, "left"))  # events are in epoch order

    # one output per (batch, group) among the flushed events, by first appearance
    group = factorize([k[:flushed] for k in event_keys]) if event_keys else \
        np.zeros(flushed, np.int64)
    epoch_of = event_epoch[:flushed]
    order = np.lexsort((np.arange(flushed), group, epoch_of))
    starts = np.flatnonzero(np.r_[True, (np.diff(group[order]) != 0) |
                                  (np.diff(epoch_of[order]) != 0)]) if flushed else \
        np.empty(0, np.int64)
    ends = np.r_[starts[1:], flushed] - 1 if flushed else starts
    first, last = order[starts], order[ends]
    emitted = np.lexsort((first, epoch_of[first]))  # flush by flush, by first appearance
    sums = np.empty((len(starts), width))
    counts = np.empty((len(starts), width), np.int64)
    for a in range(width):
        signed, present = signed_values(event_values[:flushed, a][order], np.ones(flushed))
        totals = segmented_cumsum(signed, starts, np.zeros(len(starts)))
        sums[:, a] = totals[ends][emitted]
        counts[:, a] = np.add.reduceat(present.astype(np.int64), starts)[emitted] \
            if flushed else np.empty(0, np.int64)
    sizes = (ends - starts + 1)[emitted]
    first, last = first[emitted], last[emitted]
    batch_of = epoch_of[first]
    positions = np.arange(len(first)) - np.searchsorted(batch_of, batch_of, "left")

    state.ts = event_ts[flushed:]
    state.keys = [k[flushed:] for k in event_keys]
    state.values = event_values[flushed:]
    state.selected = {c: column[flushed:] for c, column in event_selected.items()}
    return Emitted(flush_row[first], event_ts[last], positions, sums, counts, sizes,
                   {c: column[last] for c, column in event_selected.items()})


def _epoch(clock: np.ndarray, first_end: int, span: int) -> np.ndarray:
    """How many batch ends are at or before each clock value."""
    return np.where(clock >= first_end, (clock - first_end) // span + 1, 0)


def _nothing(width: int, selected: Mapping[str, np.ndarray]) -> Emitted:
    none = np.empty(0, np.int64)
    return Emitted(none, none, none, np.empty((0, width)), np.empty((0, width), np.int64),
                   none, {c: column[:0] for c, column in selected.items()})
