"""``#window.time(t)`` with ``avg``/``sum``/``count`` per group, a micro-batch at a time.

The order of the runtime, which the sums must follow exactly:

- The clock is the largest timestamp seen so far (from 0), over every row the operator
  receives: at row ``s`` it is ``c_s = max(c_{s-1}, ts_s)``.
- A row that passes the query's filters enters the window after the window expired, at
  ``now = c_s``, every event at the head of its FIFO queue with ``ts <= c_s - span``. The
  queue is in arrival order and expiry stops at the first head still live, so element ``j``
  leaves at the first step after its arrival with ``c - span >= ts_j`` *and* every element
  before it gone: ``leave = maximum.accumulate(max(a_j + 1, searchsorted(c - span, ts_j)))``.
  Timers expire the same elements earlier, at rows where nothing is added; the sums seen at
  an add do not change by that.
- Each group's ``avg``/``sum`` state is ``[sum, count]``; per group the runtime applies, step
  by step, the removals due at that step (in queue order) and then the add, ``sum += v`` /
  ``sum -= v`` in doubles: an in-order cumulative sum of ``+v``/``-v`` per group
  (:mod:`.sums`). A null argument (NaN, as the runtime's input conversion has it) changes
  nothing but still yields an output; ``count()`` counts every event in the window.
- Dropping a group whose states are back to fresh (the runtime's ``can_destroy``) is the
  same as keeping zeros; a group left with a rounding residue keeps it, here as there.

Every passing row emits once, with its own ``_seq`` and timestamp and the ``_order`` of an
input reaching the query, ``(1, query index, 0, 0, 0)``.

Split by key (:func:`process` with ``clock``): the ``leave`` above equals
``max(a_j + 1, first step with c - span >= M_j)``, ``M_j`` the largest timestamp among the
queue's elements up to ``j`` (a running maximum is what ``maximum.accumulate`` of the
per-element steps amounts to). Each group's sums depend only on its own adds and removals
and on where each removal falls between its adds; so an operator that sees only some groups'
rows is exact if every row brings the stream's clock ``c`` and every element its ``M``: with
no filter in front of the window every row enters it, and ``M_j = c_j``, the running clock
the spool source supplies (:data:`~eddy.engine.spark.row_layout.CLOCK`). The queue then holds
each element's ``M`` instead of its timestamp (the same steps follow from either).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eddy.engine.operators.window_aggregates.emitted import Emitted
from eddy.engine.operators.window_aggregates.spec import WindowSpec
from eddy.engine.operators.window_aggregates.sums import (
    factorize,
    segment_starts,
    segmented_cumsum,
    segmented_intsum,
    signed_values,
)

_PRUNE_AT = 1024  # groups; below this, forgetting empty groups is not worth a renumbering


@dataclass
class SlidingState:
    """The clock, the window's events (arrival order) and the running sums per group."""

    clock: int = 0
    ts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # or their marks
    group: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    values: np.ndarray | None = None  # [events, arguments], NaN = null
    keys: list[np.ndarray] = field(default_factory=list)  # group keys, one array per column
    sums: np.ndarray | None = None     # [groups, arguments]
    counts: np.ndarray | None = None   # [groups, arguments]: non-null values in the window
    sizes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # events


def process(state: SlidingState, spec: WindowSpec, ts: np.ndarray, passing: np.ndarray,
            keys: Sequence[np.ndarray], values: np.ndarray,
            selected: Mapping[str, np.ndarray], clock: np.ndarray | None = None) -> Emitted:
    """One micro-batch, rows in ``_seq`` order: updates ``state``, returns the outputs.

    ``keys`` are the group columns of all rows, ``values`` the arguments ([rows, args], NaN
    for null), ``selected`` the columns the query selects. ``clock``, for an operator that
    sees only some of the stream's rows, is the stream's running clock at each row; then
    every row of the stream must pass (no filter), see the module's docstring."""
    n, width = len(ts), len(spec.argument_columns)
    if state.values is None:
        state.values, state.sums = np.empty((0, width)), np.empty((0, width))
        state.counts = np.empty((0, width), np.int64)
    assert state.sums is not None and state.counts is not None
    marks = ts if clock is None else clock  # what each element's expiry is compared with
    clock = np.maximum.accumulate(np.maximum(marks, state.clock)) if n else marks
    if n:
        state.clock = int(clock[-1])
    threshold = clock - spec.span
    rows = np.flatnonzero(passing)
    codes = group_codes(state, [k[rows] for k in keys], len(rows))
    grow(state, len(state.keys[0]) if keys else 1, width)
    old, adds = len(state.ts), len(rows)
    new_ts, new_marks = ts[rows], marks[rows]
    due = np.concatenate([np.searchsorted(threshold, state.ts, "left"),
                          np.maximum(rows + 1, np.searchsorted(threshold, new_marks, "left"))])
    leave = np.maximum.accumulate(due) if len(due) else due
    gone = int(np.searchsorted(leave, n, "left"))  # `leave` is sorted: the expired lead
    all_group = np.concatenate([state.group, codes])
    all_values = np.concatenate([state.values, values[rows]])

    # removals (phase 0) of the first `gone` events at their step, then one add per row;
    # op gone + a adds passing row a, so the adds' aggregates are the ops' from gone on
    op_group = np.concatenate([all_group[:gone], codes])
    op_step = np.concatenate([leave[:gone], rows])
    totals = apply_operations(state, op_group, op_step, gone,
                              np.concatenate([all_values[:gone], all_values[old:]]), width)
    sums, counts, sizes = (t[gone:] for t in totals)

    state.ts = np.concatenate([state.ts, new_marks])[gone:]
    state.group, state.values = all_group[gone:], all_values[gone:]
    drop_fresh_groups(state)
    return Emitted(rows, new_ts, np.zeros(adds, np.int64), sums, counts, sizes,
                   {c: column[rows] for c, column in selected.items()})


def apply_operations(state: SlidingState, op_group: np.ndarray, op_step: np.ndarray,
                     gone: int, op_values: np.ndarray, width: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Applies ``gone`` removals (ops ``[0, gone)``) and then adds to each group's running
    sums, counts and sizes, in the runtime's order within a group: by step, a removal
    before the add of the same step, else in op order. Returns each op's aggregates right
    after it (sums, counts, sizes; indexed by op); the state keeps each group's last."""
    op_index = np.arange(len(op_group))
    op_phase = (op_index >= gone).astype(np.int8)
    order = np.lexsort((op_index, op_phase, op_step, op_group))
    return apply_signed(state, op_group, order, np.where(op_phase == 0, -1.0, 1.0),
                        op_values, width)


def apply_signed(state: SlidingState, op_group: np.ndarray, order: np.ndarray,
                 op_sign: np.ndarray, op_values: np.ndarray, width: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Applies each op (an add, ``op_sign`` 1, or a removal, -1, of its values) to its
    group's running sums, counts and sizes, ``order`` listing the ops by group and, within
    a group, in the order the runtime applies them. Returns each op's aggregates right
    after it (indexed by op); the state keeps each group's last."""
    assert state.sums is not None and state.counts is not None
    ops = len(op_group)
    sign = op_sign[order]
    starts = segment_starts(op_group[order])
    ends = np.r_[starts[1:], len(order)] - 1 if len(starts) else starts
    groups = op_group[order][starts]
    sums = np.empty((ops, width))
    counts = np.empty((ops, width), np.int64)
    sorted_values = op_values[order]
    for a in range(width):
        signed, present = signed_values(sorted_values[:, a], sign)
        totals = segmented_cumsum(signed, starts, state.sums[groups, a])
        counted = segmented_intsum((present * sign).astype(np.int64), starts,
                                   state.counts[groups, a])
        sums[order, a], counts[order, a] = totals, counted
        state.sums[groups, a], state.counts[groups, a] = totals[ends], counted[ends]
    sized = segmented_intsum(sign.astype(np.int64), starts, state.sizes[groups])
    sizes = np.empty(ops, np.int64)
    sizes[order] = sized
    state.sizes[groups] = sized[ends]
    return sums, counts, sizes


def group_codes(state: SlidingState, keys: list[np.ndarray], rows: int) -> np.ndarray:
    """Each row's group number; groups keep their numbers across batches, new groups are
    numbered in order of first appearance. Without ``group by`` every row is group 0."""
    if not keys:
        return np.zeros(rows, np.int64)
    known = len(state.keys[0]) if state.keys else 0
    combined = [np.concatenate([state.keys[i], k]) if state.keys else k
                for i, k in enumerate(keys)]
    new = factorize(combined)[known:]
    fresh = np.flatnonzero(new >= known)
    if len(fresh):
        added = fresh[np.unique(new[fresh], return_index=True)[1]]  # by group number
        state.keys = [np.concatenate([c[:known], k[added]]) for c, k in zip(combined, keys)]
    elif not state.keys:
        state.keys = [k[:0] for k in keys]
    return new


def grow(state: SlidingState, groups: int, width: int) -> None:
    """Zero sums, counts and sizes for groups numbered past the known ones."""
    assert state.sums is not None and state.counts is not None
    extra = groups - len(state.sizes)
    if extra > 0:
        state.sums = np.concatenate([state.sums, np.zeros((extra, width))])
        state.counts = np.concatenate([state.counts, np.zeros((extra, width), np.int64)])
        state.sizes = np.concatenate([state.sizes, np.zeros(extra, np.int64)])


def drop_fresh_groups(state: SlidingState) -> None:
    """Forgets groups whose every state is as new (the runtime drops those too), so a stream
    of ever-new keys does not grow the state; renumbers the rest."""
    assert state.sums is not None and state.counts is not None
    if not state.keys or len(state.sizes) < _PRUNE_AT:
        return
    live = (state.sizes != 0) | (state.counts != 0).any(axis=1) | (state.sums != 0.0).any(axis=1)
    if live.all():
        return
    renumber = np.cumsum(live) - 1
    state.group = renumber[state.group]
    state.keys = [k[live] for k in state.keys]
    state.sums, state.counts = state.sums[live], state.counts[live]
    state.sizes = state.sizes[live]
