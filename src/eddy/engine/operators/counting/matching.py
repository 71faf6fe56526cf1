"""``[every] e1=S1[f]<n:m> -> e2=S2[c]`` over a whole micro-batch at once.

The reference (``CountPreStateProcessor`` and friends, ported event by event in
:mod:`eddy.runtime.pattern.processors`) keeps, per pattern instance (the app, or one
partition key), the counting state's matches. Every ``S1`` event that passes ``f`` is added
to each of them that is still collecting; a match that reaches ``n`` events is handed to
``e2``'s state (shared: it keeps collecting there, up to ``m`` events) and, under ``every``,
an empty copy starts collecting with the next passing ``S1`` event; a match stops collecting
at ``m`` events or once ``e2`` took an event. So, numbering an instance's passing ``S1``
events ``0, 1, 2, …``, the matches start at events ``0, n, 2n, …`` (without ``every``: at
``0`` only), match ``s`` may complete from event ``s+n-1`` on, and an ``S2`` event that
completes it sees the chain ``s … min(s+m-1, last passing event before it)``.

``e2``'s state takes handed-over matches into its pending list at its stream's next event
(any, whether or not it passes ``c``), sorted by the timestamp of their last event then;
every ``S2`` event then completes, in list order, each pending match that ``c`` accepts.
Without ``within`` nothing else depends on time, so a match completes at the first ``S2``
event after its ``n``-th that passes ``c`` for it: :func:`process` finds it for all of a
batch's matches at once (:func:`~eddy.engine.operators.followed_by.matching.first_events`),
and orders the outputs of one ``S2`` event by the list order the reference has.

State between batches, per instance: how many passing ``S1`` events it had, its open
matches (start, and whether ``e2``'s list holds them yet) in list order, and its ``S1``
events from the oldest open match's start on (what a chain may still read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.engine.operators.columnar_expressions import (
    Values,
    concat,
    dtype_of,
    evaluate,
    key_groups,
    logical_columns,
    output_frame,
    take,
    truthy,
)
from eddy.engine.operators.counting import walk
from eddy.engine.operators.counting.plan import CountingSpec
from eddy.engine.operators.followed_by.matching import (
    FIRST_EVENT,
    PARTITION,
    SECOND_EVENT,
    SECOND_PASSES,
    first_events,
)
from eddy.engine.operators.followed_by.plan import FIRST
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["Counted", "kernel", "process"]

Array = npt.NDArray[Any]
_LATER = np.iinfo(np.int64).max


@dataclass
class Counted:
    """What one Spark state key keeps between micro-batches (pickled by Spark's state
    store): per instance the number of passing ``S1`` events so far (``counts``); the
    events chains may still read (``partition``, ``index`` — their number in the instance
    —, ``ts`` and ``e1``'s columns); and the open matches in their instances' list order
    (``match_partition``, ``start``, ``entered``: ``e2``'s pending list holds it)."""

    counts: dict[Any, int] = field(default_factory=dict)
    partition: Array = field(default_factory=lambda: np.empty(0, object))
    index: Array = field(default_factory=lambda: np.empty(0, np.int64))
    ts: Array = field(default_factory=lambda: np.empty(0, np.int64))
    columns: dict[str, Values] = field(default_factory=dict)
    match_partition: Array = field(default_factory=lambda: np.empty(0, object))
    start: Array = field(default_factory=lambda: np.empty(0, np.int64))
    entered: Array = field(default_factory=lambda: np.empty(0, bool))


@dataclass(frozen=True)
class _Events:
    """The carried and the batch's passing ``S1`` events, sorted by (instance, number):
    an instance's are contiguous and consecutive, from ``base_index[i]`` at
    ``base_position[i]`` (``count[i]`` of them); ``row`` is the batch row (-1: carried)."""

    instance: Array
    index: Array
    ts: Array
    row: Array
    columns: dict[str, Values]
    base_position: Array
    base_index: Array
    count: Array

    def position(self, instance: Array, index: Array) -> tuple[Array, Array]:
        """Where event ``index`` of ``instance`` is, clipped to a valid position, and
        whether it exists."""
        offset = index - self.base_index[instance]
        exists = (offset >= 0) & (offset < self.count[instance])
        at = np.where(exists, self.base_position[instance] + offset, 0)
        return np.clip(at, 0, max(len(self.index) - 1, 0)), exists


def process(spec: CountingSpec, state: Counted,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Counted]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected attribute,
    in emission order) and the state after it. ``frame`` holds the rows of the pattern's
    streams in ``_seq`` order with the flag columns of
    :func:`~eddy.engine.operators.followed_by.spark.pattern_rows` and the spec's columns."""
    kinds = dict(spec.columns)
    batch = logical_columns(frame, spec.physical, kinds)
    size = len(frame)
    seq, ts = frame[SEQ].to_numpy(np.int64), frame[TS].to_numpy(np.int64)
    passing = frame[FIRST_EVENT].to_numpy(bool)
    of_second = frame[SECOND_EVENT].to_numpy(bool)
    partition = frame[PARTITION].to_numpy() if spec.partitioned else np.zeros(size, np.int64)
    first_columns = [c for c in kinds if c.startswith(FIRST)]
    if not state.columns:
        state.columns = {c: Values(np.empty(0, dtype_of(kinds[c])), np.empty(0, bool))
                         for c in first_columns}
    numbers, keys = pd.factorize(np.concatenate(
        [state.partition, state.match_partition, partition]).astype(object))
    numbers = numbers.astype(np.int64)
    carried, matched = len(state.partition), len(state.match_partition)
    row_instance = numbers[carried + matched:]
    base = np.array([state.counts.get(k, 0) for k in keys.tolist()], np.int64)
    # each row's number of passing S1 events of its instance before it
    ones = passing.astype(np.int64)
    before = base[row_instance] + pd.Series(ones).groupby(row_instance).cumsum().to_numpy() \
        - ones
    events = _events(state, numbers[:carried], row_instance, before, passing, ts, batch,
                     first_columns, len(keys))
    # the matches: the carried ones, then those starting in the batch
    starting = np.flatnonzero(passing & ((before % spec.least == 0) if spec.every
                                         else (before == 0)))
    instance = np.concatenate([numbers[carried:carried + matched], row_instance[starting]])
    start = np.concatenate([state.start, before[starting]])
    entered = np.concatenate([state.entered, np.zeros(len(starting), bool)])
    ready_at, ready = events.position(instance, start + spec.least - 1)
    ready_row = np.where(ready, events.row[ready_at], _LATER)  # -1: before the batch
    fixed = {name: _event_values(events, instance, start + index, ready, column)
             for name, index, column in spec.fixed}
    groups = key_groups(np.concatenate([instance, row_instance]),
                        [_event_values(events, instance, start + i, ready, a)
                         for i, a, _ in spec.keys],
                        [batch[b] for _, _, b in spec.keys])
    groups[:len(start)][~ready] = -1
    accepts = None if spec.residual is None else \
        (lambda which, at: _accepts(spec, fixed, batch, which, at))
    found = first_events(groups[len(start):], of_second & frame[SECOND_PASSES].to_numpy(bool),
                         groups[:len(start)], np.minimum(ready_row, size), ready, None, accepts)
    # where each match joins e2's pending list (the first S2 row after it is ready), and its
    # last event's timestamp then: the list's order
    entry = _next_row(of_second, row_instance, instance, np.minimum(ready_row, size))
    last_then = np.minimum(start + spec.most - 1, before[np.maximum(entry, 0)] - 1)
    entry_ts = events.ts[events.position(instance, last_then)[0]]
    rank = np.where(entered, np.arange(len(start)), np.where(entry >= 0, entry_ts, start))
    placed = np.where(entered, -1, np.where(entry >= 0, entry, size))
    order = np.lexsort((start, rank, placed))
    done = found >= 0
    emitted = order[done[order]]
    emitted = emitted[np.argsort(found[emitted], kind="stable")]
    outputs = _outputs(spec, events, batch, seq, ts, instance[emitted], start[emitted],
                       found[emitted], before)
    kept = order[~done[order]]
    return outputs, _carry(state, keys, base, ones, row_instance, events, instance[kept],
                           start[kept], (entered | (entry >= 0))[kept])


def kernel(spec: CountingSpec) -> tuple[Callable[[CountingSpec, Any, pd.DataFrame],
                                                  tuple[pd.DataFrame, Any]],
                                         Callable[[], Any]]:
    """The function that runs ``spec`` on a batch and its fresh state: :func:`process`, or
    with ``within`` the row walk of :mod:`.walk` (which says why)."""
    if spec.within is not None:
        return walk.process, walk.Walked
    return process, Counted


def _events(state: Counted, carried_instance: Array, row_instance: Array, before: Array,
            passing: Array, ts: Array, batch: Mapping[str, Values], first_columns: list[str],
            instances: int) -> _Events:
    rows = np.flatnonzero(passing)
    instance = np.concatenate([carried_instance, row_instance[rows]])
    index = np.concatenate([state.index, before[rows]])
    order = np.lexsort((index, instance))
    instance, index = instance[order], index[order]
    columns = {c: take(concat(state.columns[c], take(batch[c], rows)), order)
               for c in first_columns}
    count = np.bincount(instance, minlength=instances).astype(np.int64)
    base_position = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    base_index = np.zeros(instances, np.int64)
    present = count > 0
    base_index[present] = index[base_position[present]]
    return _Events(instance, index, np.concatenate([state.ts, ts[rows]])[order],
                   np.concatenate([np.full(len(state.index), -1, np.int64), rows])[order],
                   columns, base_position, base_index, count)


def _event_values(events: _Events, instance: Array, index: Array, valid: Array,
                  column: str) -> Values:
    """``column`` of each instance's event ``index`` (null where not ``valid`` or no such
    event)."""
    at, exists = events.position(instance, index)
    taken = take(events.columns[column], at)
    return Values(taken.values, taken.null | ~(exists & valid))


def _next_row(chosen: Array, row_instance: Array, instance: Array, after: Array) -> Array:
    """Per match, the first ``chosen`` row of its instance later than ``after`` (-1:
    none)."""
    rows = np.flatnonzero(chosen)
    if not len(rows):
        return np.full(len(instance), -1, np.int64)
    width = np.int64(len(chosen) + 1)
    keys = np.sort(row_instance[rows] * width + rows)
    at = np.searchsorted(keys, instance * width + after, side="right")
    hit = at < len(keys)
    found = np.where(hit, keys[np.minimum(at, len(keys) - 1)], -1)
    same = hit & (found // width == instance)
    return np.where(same, found % width, -1)


def _accepts(spec: CountingSpec, fixed: Mapping[str, Values], batch: Mapping[str, Values],
             which: Array, rows: Array) -> Array:
    """Whether ``c``'s residual holds for each (match, batch row) pair."""
    assert spec.residual is not None
    columns = {name: take(values, which) for name, values in fixed.items()}
    columns.update({c: take(v, rows) for c, v in batch.items() if not c.startswith(FIRST)})
    return truthy(evaluate(spec.residual, columns, len(which)))


def _outputs(spec: CountingSpec, events: _Events, batch: Mapping[str, Values], seq: Array,
             ts: Array, instance: Array, start: Array, rows: Array,
             before: Array) -> pd.DataFrame:
    last = np.minimum(start + spec.most - 1, before[rows] - 1)
    values = []
    for picked in spec.selected:
        if picked.index is None:
            values.append((take(batch[picked.column], rows), picked.type))
            continue
        index = start + picked.index if picked.index >= 0 else last + 1 + picked.index
        values.append((_event_values(events, instance, index,
                                     (index >= start) & (index <= last), picked.column),
                       picked.type))
    return output_frame(seq, ts, rows, values)


def _carry(state: Counted, keys: Any, base: Array, ones: Array, row_instance: Array,
           events: _Events, instance: Array, start: Array, entered: Array) -> Counted:
    """The state after the batch: counts, the open matches and the events from each
    instance's oldest open match on."""
    counts = base + np.bincount(row_instance, weights=ones, minlength=len(base)).astype(
        np.int64)
    touched = np.unique(row_instance)
    state.counts.update(zip(keys[touched].tolist(), counts[touched].tolist()))
    oldest = np.full(len(base), _LATER, np.int64)
    np.minimum.at(oldest, instance, start)
    kept = np.flatnonzero(events.index >= oldest[events.instance])
    keys = np.asarray(keys, object)
    return Counted(state.counts, keys[events.instance[kept]], events.index[kept],
                   events.ts[kept], {c: take(v, kept) for c, v in events.columns.items()},
                   keys[instance], start, entered)
