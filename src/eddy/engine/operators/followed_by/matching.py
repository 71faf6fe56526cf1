"""``every e1=S1 -> e2=S2[c] within t`` over a whole micro-batch at once.

The reference (``StreamPreStateProcessor``, ported event by event in
:mod:`eddy.runtime.pattern`) keeps an ``e1`` partial match of a pattern instance
(the app, or one partition key) first in a *new* list, which the next ``S2`` event moves
into the *pending* list, in arrival order, just before it is tested. Before every event of
either stream, ``within`` drops expired matches (``|e1.ts - now| > t``): from the head of
the pending list, stopping at the first that is still in time, and from the new list all of
them. The new list joins the pending one sorted by timestamp, not by arrival. An ``S2``
event then completes, in list order, every pending match that ``c`` accepts; those leave
the list. An ``S1`` event that passes its filter adds a new match last (without ``every``,
only the instance's first one does: the start state is seeded once).

When timestamps do not go back — the pending list is in time order and every event of the
batch is at least as late as the one before — "the head up to the first in time" is "every
match older than ``now - t``", and each match is on its own: it completes with the first
later ``S2`` event of its match key that ``c`` accepts and that is within ``t`` of it, or
never. :func:`process` then finds all of a batch's matches with array operations: ``S2``
events sorted by (key, arrival), each match's first candidate by binary search, and the
candidates after it tested in growing blocks until each match has its event or has run past
its key's events or its ``within``. A batch whose timestamps go back is run event by event
instead (:func:`_sequential`), with the same state, so either path may follow the other.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.engine.operators.columnar_expressions import (
    Values,
    column_values,
    concat,
    dtype_of,
    evaluate,
    key_groups,
    output_frame,
    take,
    truthy,
)
from eddy.engine.operators.followed_by.plan import FIRST, FollowedBySpec
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["FIRST_EVENT", "KEY", "PARTITION", "SECOND_EVENT", "SECOND_PASSES", "Pending",
           "process"]

Array = npt.NDArray[Any]
FIRST_EVENT = "_s1"    # an S1 event that passes e1's filter: it starts a match
SECOND_EVENT = "_s2"   # an S2 event (of the instance): it expires matches
SECOND_PASSES = "_f2"  # ... and passes the conditions that read e2 alone
PARTITION = "_pk"      # the partition key (partitioned patterns only)
KEY = "_key"
_FIRST_BLOCK, _LAST_BLOCK = 2, 256


@dataclass
class Pending:
    """The ``e1`` matches of one Spark state key, in arrival order: their ``_seq``, ``_ts``,
    partition key, whether they are still in the new list (``waiting``) and their ``e1``
    columns; and for a pattern without ``every``, the instances whose match has started
    (what Spark checkpoints, pickled)."""

    seq: Array = field(default_factory=lambda: np.empty(0, np.int64))
    waiting: Array = field(default_factory=lambda: np.empty(0, bool))
    ts: Array = field(default_factory=lambda: np.empty(0, np.int64))
    partition: Array = field(default_factory=lambda: np.empty(0, object))
    columns: dict[str, Values] = field(default_factory=dict)
    started: set[Any] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.seq)


@dataclass(frozen=True)
class _Candidates:
    """Pending matches followed by the batch's new ones, with their match-key groups."""

    seq: Array
    ts: Array
    partition: Array
    instance: Array  # the partition key's number (shared with the batch rows')
    columns: dict[str, Values]
    group: Array
    rows: Array  # the batch row that started each (-1: from an earlier batch)
    waiting: Array  # in the new list at the batch's start (the batch's own: True)


def process(spec: FollowedBySpec, pending: Pending,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Pending]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected attribute,
    in emission order) and the matches still pending after it. ``frame`` holds the rows of
    S1 and S2 in ``_seq`` order with the flag columns above and the spec's columns."""
    kinds = dict(spec.columns)
    first_cols = [c for c in kinds if c.startswith(FIRST)]
    read: dict[str, Values] = {}
    for logical, physical in spec.physical:
        if physical not in read:
            read[physical] = column_values(frame[physical], kinds[logical])
    batch = {logical: read[physical] for logical, physical in spec.physical}
    seq, ts = frame[SEQ].to_numpy(np.int64), frame[TS].to_numpy(np.int64)
    starts = frame[FIRST_EVENT].to_numpy(bool)
    seconds = frame[SECOND_EVENT].to_numpy(bool)
    partition = frame[PARTITION].to_numpy() if spec.partitioned \
        else np.zeros(len(frame), np.int64)
    if not len(pending):
        pending.partition = partition[:0]
    if not pending.columns:
        pending.columns = {c: Values(np.empty(0, dtype_of(kinds[c])), np.empty(0, bool))
                           for c in first_cols}
    new = np.flatnonzero(starts)
    if not spec.every:  # the start state is seeded once: its first event only, per instance
        new = _first_starts(pending.started, partition, new)
        starts = np.zeros(len(frame), bool)
        starts[new] = True
    candidate_columns = {c: concat(pending.columns[c], take(batch[c], new))
                         for c in first_cols}
    first_keys = [candidate_columns[a] for a, _ in spec.keys]
    second_keys = [batch[b] for _, b in spec.keys]
    candidate_partition = np.concatenate([pending.partition, partition[new]])
    instances = pd.factorize(np.concatenate([candidate_partition, partition]))[0] \
        .astype(np.int64)
    groups = key_groups(instances, first_keys, second_keys)
    candidates = _Candidates(
        np.concatenate([pending.seq, seq[new]]), np.concatenate([pending.ts, ts[new]]),
        candidate_partition, instances[:len(candidate_partition)], candidate_columns,
        groups[:len(candidate_partition)],
        np.concatenate([np.full(len(pending), -1, np.int64), new]),
        np.concatenate([pending.waiting, np.ones(len(new), bool)]))
    event_group = groups[len(candidate_partition):]
    row_instance = instances[len(candidate_partition):]
    testable = seconds & frame[SECOND_PASSES].to_numpy(bool) & (event_group >= 0)
    # every event of either stream expires matches, and new matches join the pending list
    # in time order: all of them count for the order
    in_order = bool((np.diff(np.concatenate([pending.ts, ts])) >= 0).all())
    if in_order:
        matched, kept, waiting = _vectorised(spec, candidates, batch, ts, event_group,
                                              testable, seconds, row_instance)
    else:
        matched, kept, waiting = _sequential(spec, candidates, batch, ts, event_group,
                                              testable, seconds, partition, starts)
    left = Pending(candidates.seq[kept], waiting[kept], candidates.ts[kept],
                   candidates.partition[kept],
                   {c: take(v, kept) for c, v in candidate_columns.items()},
                   pending.started)
    return _outputs(spec, candidates, batch, seq, ts, matched), left


def _first_starts(started: set[Any], partition: Array, new: Array) -> Array:
    """The rows of ``new`` that are the first start of an instance not yet ``started``
    (which they join)."""
    first = np.flatnonzero(~pd.Series(partition[new]).duplicated().to_numpy())
    keys = partition[new[first]].tolist()
    fresh = [i for i, key in zip(first.tolist(), keys) if key not in started]
    started.update(keys)
    return new[np.asarray(fresh, np.int64)]


def _vectorised(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
                ts: Array, event_group: Array, testable: Array, seconds: Array,
                row_instance: Array) -> tuple[Array, Array, Array]:
    """(candidate, batch row) pairs that complete, in emission order; the candidates that
    stay, in their list order; and which candidates are still in the new list."""
    events = np.flatnonzero(testable)
    events = events[np.argsort(event_group[events], kind="stable")]  # by (group, arrival)
    groups = event_group[events]
    width = np.int64(len(ts) + 1)  # a candidate's first event: same group, a later row
    first = np.searchsorted(groups * width + events, candidates.group * width + candidates.rows,
                            side="right")
    end = np.searchsorted(groups, candidates.group, side="right")
    active = np.flatnonzero((candidates.group >= 0) & (first < end))
    found = np.full(len(candidates.seq), -1, np.int64)
    offset, block = 0, _FIRST_BLOCK
    while len(active):
        tried = first[active, None] + np.arange(offset, offset + block)[None, :]
        inside = tried < end[active, None]
        rows = events[np.minimum(tried, len(events) - 1)]
        if spec.within is not None:
            inside &= ts[rows] - candidates.ts[active, None] <= spec.within
        accepted = inside.copy()
        if spec.residual is not None and inside.any():
            which, step = np.nonzero(inside)
            accepted[which, step] = _accepts(spec, candidates, batch, active[which],
                                             rows[which, step])
        hit = accepted.any(axis=1)
        chosen = np.argmax(accepted, axis=1)
        found[active[hit]] = rows[hit, chosen[hit]]
        # a candidate is done when matched or past its key's events or its within (its
        # key's events are in time order, so no later one is within either)
        done = hit | ~inside.all(axis=1)
        active = active[~done]
        offset += block
        block = min(block * 4, _LAST_BLOCK)
    matched = np.flatnonzero(found >= 0)
    alive = found < 0
    if spec.within is not None:  # in time order, an instance's last event is its latest
        last = _last_row(candidates, row_instance, np.ones(len(ts), bool))
        alive &= ~((last > candidates.rows) & (ts[np.maximum(last, 0)] - candidates.ts
                                                > spec.within))
    waiting = candidates.waiting & ~(_last_row(candidates, row_instance, seconds)
                                     > candidates.rows)
    pairs = np.stack([matched, found[matched]], axis=1)
    # emitted at the completing event, in pending order: the candidates' (time) order here
    pairs = pairs[np.lexsort((pairs[:, 0], pairs[:, 1]))]
    return pairs, np.flatnonzero(alive), waiting


def _last_row(candidates: _Candidates, row_instance: Array, chosen: Array) -> Array:
    """Per candidate, the last chosen batch row of its instance (-1: none)."""
    last = np.full(int(max(candidates.instance.max(initial=-1),
                           row_instance.max(initial=-1))) + 1, -1, np.int64)
    rows = np.flatnonzero(chosen)
    np.maximum.at(last, row_instance[rows], rows)
    found: Array = last[candidates.instance]
    return found


def _sequential(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
                ts: Array, event_group: Array, testable: Array, seconds: Array,
                partition: Array, starts: Array) -> tuple[Array, Array, Array]:
    """The reference's order of work, event by event (timestamps go back in this batch)."""
    within = spec.within if spec.within is not None else np.iinfo(np.int64).max
    pending: dict[Any, deque[int]] = {}
    new: dict[Any, list[int]] = {}
    for index in range(int((candidates.rows < 0).sum())):
        lists = new if candidates.waiting[index] else pending
        lists.setdefault(candidates.partition[index], []).append(index)  # type: ignore[arg-type]
    pending = {key: deque(items) for key, items in pending.items()}
    started = {int(r): i for i, r in enumerate(candidates.rows) if r >= 0}
    pairs: list[tuple[int, int]] = []
    for row in range(len(ts)):
        key, now = partition[row], int(ts[row])
        waiting = pending.setdefault(key, deque())
        while waiting and abs(int(candidates.ts[waiting[0]]) - now) > within:
            waiting.popleft()
        fresh = [c for c in new.get(key, ()) if abs(int(candidates.ts[c]) - now) <= within]
        if seconds[row]:  # the reference sorts them by timestamp (a stable sort)
            waiting.extend(sorted(fresh, key=lambda c: int(candidates.ts[c])))
            fresh = []
        new[key] = fresh
        if testable[row] and waiting:
            listed = np.fromiter(waiting, np.int64, len(waiting))
            tried = listed[candidates.group[listed] == event_group[row]]
            if len(tried) and spec.residual is not None:
                tried = tried[_accepts(spec, candidates, batch, tried, np.full(len(tried), row))]
            if len(tried):
                done = set(tried.tolist())
                pairs += [(c, row) for c in tried.tolist()]
                pending[key] = deque(c for c in waiting if c not in done)
        if starts[row]:
            new[key].append(started[row])
    # what stays: each instance's pending list then its new list, in their order, the
    # instances merged by time (so that, once time goes forward again, the whole state is
    # in time order and the next batch can take the vectorised path)
    instances = [[*pending.get(key, ()), *new.get(key, ())]
                 for key in pending.keys() | new.keys()]
    kept = list(heapq.merge(*instances, key=lambda c: int(candidates.ts[c])))
    in_new = np.zeros(len(candidates.seq), bool)
    for fresh in new.values():
        in_new[fresh] = True
    return np.asarray(pairs, np.int64).reshape(-1, 2), np.asarray(kept, np.int64), in_new


def _accepts(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
             which: Array, rows: Array) -> Array:
    """Whether the residual condition holds for each (candidate, batch row) pair."""
    assert spec.residual is not None
    columns = {c: take(v, which) for c, v in candidates.columns.items()}
    columns.update({c: take(v, rows) for c, v in batch.items() if not c.startswith(FIRST)})
    return truthy(evaluate(spec.residual, columns, len(which)))


def _outputs(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
             seq: Array, ts: Array, pairs: Array) -> pd.DataFrame:
    # pairs come in emission order
    which, rows = pairs[:, 0], pairs[:, 1]
    return output_frame(seq, ts, rows, [
        (take(candidates.columns[o.column], which) if o.side == FIRST
         else take(batch[o.column], rows), o.type) for o in spec.selected])
