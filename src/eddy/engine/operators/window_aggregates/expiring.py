"""Sliding windows whose expired events are outputs too (``insert all events`` /
``insert expired events``), and ``#window.length(n)``: ``avg``/``sum``/``count`` per group,
a micro-batch at a time.

With current events only the sums seen at each add are all that matters, so
:mod:`.sliding_time` may expire an event at any row after it is due. An expired event that
is an output must leave exactly when, and in the emission where, the runtime's
``TimeWindow``/``LengthWindow`` (``runtime/windows/sliding.py``) lets it go:

- Row ``s`` first moves the clock, ``c_s = max(c_{s-1}, ts_s)`` from 0, and only if it is
  not late (``ts_s >= c_{s-1}``: :meth:`~eddy.runtime.context.Context.advance`) fires
  the window's due timers. A ``time(t)`` window asks for a timer at ``ts + t`` for each
  passing event with a timestamp larger than every passing one before it (``last``); the
  dues therefore rise, and timer ``r`` (asked at row ``r``) fires at the first later row
  that is not late and whose clock reaches it. The first timer fired expires, from the
  head of the FIFO queue, every event with ``ts <= c_s - t``; any further timers of that
  row find nothing, so every timer emission is the scheduler's first of its row,
  ``_order = (0, scheduler, 0, 0, 0, i)``.
- A passing row then expires (``ts <= c_s - t``, again from the head), appends itself and
  emits ``[expired..., current]`` as one chunk, ``_order = (1, query index, 0, 0, i)``. If a
  timer fired at the row, it took everything due, so the chunk has the current event alone.
  A ``length(n)`` window has no timers: the passing row that makes the queue longer than
  ``n`` pushes out its head.
- An event ``j`` leaves at the first such opportunity after its arrival whose threshold
  ``c_s - t`` reaches ``M_j``, the largest timestamp among passing events up to ``j`` (the
  head-of-queue rule: see :mod:`.sliding_time`). An expired event carries its own data and
  the timestamp ``c_s``.
- The selector sees each chunk at once (a batch): every removal and add changes its
  group's sums (the sums of :mod:`.sliding_time`, in the same order), and per group of the
  chunk, in order of the group's first selected event, the last selected event goes out
  with the group's aggregates as they were right after it (without ``group by``: the
  chunk's last selected event; with neither ``group by`` nor an aggregate: every selected
  event). Selected means expired for ``expired events``, current for ``current events``,
  either for ``all events``.

Not split by key: a timer asked for by one group's event expires every group's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eddy.engine.operators.window_aggregates.emitted import Emitted
from eddy.engine.operators.window_aggregates.spec import WindowSpec
from eddy.engine.operators.window_aggregates.sliding_time import (
    SlidingState,
    apply_operations,
    drop_fresh_groups,
    group_codes,
    grow,
)

LONG_MIN = -(1 << 63)
_NONE = np.empty(0, np.int64)


@dataclass
class ExpiringState(SlidingState):
    """:class:`.SlidingState` (``ts`` holds each event's ``M``), plus the largest passing
    timestamp, the timers not fired yet and the selected columns of the window's events."""

    last: int = LONG_MIN
    timers: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    selected: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class _Leaving:
    """When the window's events leave: ``leave`` (row index, ``n`` = not in this batch),
    per event in queue order; ``timer_at`` which rows fire a timer (length ``n``)."""

    leave: np.ndarray
    timer_at: np.ndarray


def process(state: ExpiringState, spec: WindowSpec, ts: np.ndarray, passing: np.ndarray,
            keys: Sequence[np.ndarray], values: np.ndarray,
            selected: Mapping[str, np.ndarray]) -> Emitted:
    """One micro-batch, rows in ``_seq`` order: updates ``state``, returns the outputs in
    emission order (see :func:`.sliding_time.process` for the arguments)."""
    n, width = len(ts), len(spec.argument_columns)
    if state.values is None:
        state.values, state.sums = np.empty((0, width)), np.empty((0, width))
        state.counts = np.empty((0, width), np.int64)
    assert state.sums is not None and state.counts is not None
    clock = np.maximum.accumulate(np.maximum(ts, state.clock)) if n else ts.astype(np.int64)
    before = np.r_[state.clock, clock[:-1]] if n else clock
    rows = np.flatnonzero(passing)
    codes = group_codes(state, [k[rows] for k in keys], len(rows))
    grow(state, len(state.keys[0]) if keys else 1, width)
    old, adds = len(state.ts), len(rows)
    new_ts = ts[rows].astype(np.int64)
    if spec.window == "time":
        marks = np.maximum.accumulate(np.maximum(new_ts, state.last)) if adds else new_ts
        leaving = _time_leaving(state, spec.span, ts >= before, clock, rows, new_ts, marks)
        state.last = int(marks[-1]) if adds else state.last
    else:
        marks = new_ts
        leaving = _length_leaving(old, rows, n, spec.span)
    if n:
        state.clock = int(clock[-1])
    leave = leaving.leave
    gone = int(np.searchsorted(leave, n, "left"))  # `leave` is sorted: the expired lead
    all_group = np.concatenate([state.group, codes])
    all_values = np.concatenate([state.values, values[rows]])
    all_selected = {c: np.concatenate([state.selected[c], column[rows]])
                    if c in state.selected else column[rows]
                    for c, column in selected.items()}

    # every removal (phase 0) at its row, then one add per passing row, in the runtime's
    # order per group; op i < gone removes event i, op gone + a adds passing row a
    op_group = np.concatenate([all_group[:gone], codes])
    op_step = np.concatenate([leave[:gone], rows])
    op_phase = np.concatenate([np.zeros(gone, np.int8), np.ones(adds, np.int8)])
    sums, counts, sizes = apply_operations(
        state, op_group, op_step, gone,
        np.concatenate([all_values[:gone], all_values[old:]]), width)

    emitted = _outputs(spec, leaving.timer_at, op_group, op_step, op_phase, gone)
    element = np.where(emitted.op < gone, emitted.op, emitted.op - gone + old)
    expired = op_phase[emitted.op] == 0
    steps = op_step[emitted.op]
    state.ts = np.concatenate([state.ts, marks])[gone:]
    state.group, state.values = all_group[gone:], all_values[gone:]
    state.selected = {c: column[gone:] for c, column in all_selected.items()}
    drop_fresh_groups(state)
    return Emitted(steps, np.where(expired, clock[steps] if n else steps, ts[steps]),
                   emitted.position, sums[emitted.op], counts[emitted.op],
                   sizes[emitted.op], {c: column[element] for c, column in all_selected.items()},
                   expired, emitted.timer)


def _time_leaving(state: ExpiringState, span: int, advancing: np.ndarray,
                  clock: np.ndarray, rows: np.ndarray, new_ts: np.ndarray,
                  marks: np.ndarray) -> _Leaving:
    """Timers asked for, fired and left pending; each event's leaving row."""
    n = len(clock)
    moved = np.flatnonzero(advancing)
    previous = np.r_[state.last, marks[:-1]] if len(marks) else marks
    asks = new_ts > previous
    due = np.concatenate([state.timers, new_ts[asks] + span])
    asked = np.concatenate([np.full(len(state.timers), -1, np.int64), rows[asks]])
    first = np.maximum(np.searchsorted(moved, asked, "right"),
                       np.searchsorted(clock[moved], due, "left"))
    fired = first < len(moved)
    state.timers = due[~fired]
    timer_at = np.zeros(n, bool)
    timer_at[moved[first[fired]]] = True
    chances = np.flatnonzero(timer_at | _mask(rows, n))  # where the window expires
    threshold = clock[chances] - span
    arrived = np.concatenate([np.full(len(state.ts), -1, np.int64), rows])
    k = np.maximum(np.searchsorted(chances, arrived, "right"),
                   np.searchsorted(threshold, np.concatenate([state.ts, marks]), "left"))
    leave = np.where(k < len(chances), chances[np.minimum(k, len(chances) - 1)], n) \
        if len(chances) else np.full(len(k), n, np.int64)
    return _Leaving(np.maximum.accumulate(leave) if len(leave) else leave, timer_at)


def _length_leaving(old: int, rows: np.ndarray, n: int, length: int) -> _Leaving:
    """Event ``e`` of the queue (``old`` carried, then one per passing row) leaves when
    event ``e + length`` arrives."""
    pusher = np.arange(old + len(rows)) + length - old
    leave = np.where(pusher < len(rows), rows[np.minimum(pusher, max(len(rows) - 1, 0))]
                     if len(rows) else n, n)
    return _Leaving(leave.astype(np.int64), np.zeros(n, bool))


def _mask(rows: np.ndarray, n: int) -> np.ndarray:
    mask = np.zeros(n, bool)
    mask[rows] = True
    return mask


@dataclass(frozen=True)
class _Chosen:
    """The ops that become outputs, in emission order, with their position in their
    emission and whether a timer emitted them."""

    op: np.ndarray
    position: np.ndarray
    timer: np.ndarray


def _outputs(spec: WindowSpec, timer_at: np.ndarray, op_group: np.ndarray,
             op_step: np.ndarray, op_phase: np.ndarray, gone: int) -> _Chosen:
    """Per emission (a row's timer chunk, then its input chunk) and group: the last selected
    op, ordered by the group's first selected op (op numbers follow the chunk's order)."""
    current = spec.events in ("current", "all")
    expired = spec.events in ("expired", "all")
    chosen = np.flatnonzero(np.where(op_phase == 0, expired, current))
    if not len(chosen):
        return _Chosen(_NONE, _NONE, np.empty(0, bool))
    step = op_step[chosen]
    by_timer = (op_phase[chosen] == 0) & timer_at[step]
    emission = step * 2 + np.where(by_timer, 0, 1)
    group = op_group[chosen]
    if not spec.group_columns and all(o.kind == "var" for o in spec.outputs):
        group = chosen  # no aggregate, no group by: every selected event goes out
    order = np.lexsort((chosen, group, emission))
    keys = np.c_[emission[order], group[order]]
    starts = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    ends = np.r_[starts[1:], len(order)] - 1
    first, last = chosen[order[starts]], chosen[order[ends]]
    of_emission = emission[order[starts]]
    ranked = np.lexsort((first, of_emission))
    of_emission = of_emission[ranked]
    position = np.arange(len(ranked)) - np.searchsorted(of_emission, of_emission, "left")
    return _Chosen(last[ranked], position, of_emission % 2 == 0)
