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

``e1 -> (e2=S2[c2] or e3=S3[c3])`` puts each match into two pending lists, one per side
(``LogicalPreStateProcessor``); an event of either stream moves the new matches into both.
A side's event completes the matches it accepts — the left side first when one event is of
both streams — and the other side drops such a match only when it next sees an event of its
own stream: until then it stays in that list, where it still stops the ``within`` scan from
the head. So when time goes back, ``within`` may drop a match from one list and not the
other; the match is marked expired (one object in both lists), and if the other side then
completes it, it goes out as an expired event, which ``insert into`` does not insert. Each
match keeps which lists hold it (``listed``), whether a side completed it and whether it
expired, so that the event-by-event path sees the lists the reference has.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.engine.operators.columnar_expressions import (
    Node,
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
from eddy.engine.operators.followed_by.plan import FIRST, SIDES, FollowedBySpec
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["FIRST_EVENT", "KEY", "PARTITION", "SECOND_EVENT", "SECOND_PASSES", "SIDE_FLAGS",
           "Pending", "first_events", "process"]

Array = npt.NDArray[Any]
FIRST_EVENT = "_s1"    # an S1 event that passes e1's filter: it starts a match
SECOND_EVENT = "_s2"   # an S2 event (of the instance): it expires matches
SECOND_PASSES = "_f2"  # ... and passes the conditions that read e2 alone
SIDE_FLAGS = ((SECOND_EVENT, SECOND_PASSES), ("_s3", "_f3"))
"""Per completing state (``e2``, and ``e3`` of ``(e2 or e3)``): the row is of its stream,
and also passes its conditions on its own event."""
PARTITION = "_pk"      # the partition key (partitioned patterns only)
KEY = "_key"
_FIRST_BLOCK, _LAST_BLOCK = 2, 256


@dataclass
class Pending:
    """The ``e1`` matches of one Spark state key, in arrival order: their ``_seq``, ``_ts``,
    partition key, whether they are still in the new list (``waiting``), which completing
    states' pending lists hold them (``listed``, a bit per side), whether a side completed
    them (``completed``: they only wait for the other side to drop them) or ``within``
    dropped them from a list (``expired``), and their ``e1`` columns; and for a pattern
    without ``every``, the instances whose match has started (what Spark checkpoints,
    pickled)."""

    seq: Array = field(default_factory=lambda: np.empty(0, np.int64))
    waiting: Array = field(default_factory=lambda: np.empty(0, bool))
    ts: Array = field(default_factory=lambda: np.empty(0, np.int64))
    partition: Array = field(default_factory=lambda: np.empty(0, object))
    columns: dict[str, Values] = field(default_factory=dict)
    started: set[Any] = field(default_factory=set)
    listed: Array = field(default_factory=lambda: np.empty(0, np.int8))
    completed: Array = field(default_factory=lambda: np.empty(0, bool))
    expired: Array = field(default_factory=lambda: np.empty(0, bool))

    def __len__(self) -> int:
        return len(self.seq)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A checkpoint of an earlier eddy lacks the later fields: all its matches are in
        every list, none completed or expired."""
        self.__dict__.update(state)
        size = len(self.seq)
        if len(getattr(self, "listed", ())) != size:
            self.listed = np.full(size, -1, np.int8)
            self.completed = np.zeros(size, bool)
            self.expired = np.zeros(size, bool)
        if not hasattr(self, "started"):
            self.started = set()


@dataclass(frozen=True)
class _Candidates:
    """Pending matches followed by the batch's new ones, with their match-key groups (one
    array per side)."""

    seq: Array
    ts: Array
    partition: Array
    instance: Array  # the partition key's number (shared with the batch rows')
    columns: dict[str, Values]
    groups: tuple[Array, ...]
    rows: Array  # the batch row that started each (-1: from an earlier batch)
    waiting: Array  # in the new list at the batch's start (the batch's own: True)
    listed: Array  # a bit per side: in that side's list (-1: all)
    completed: Array
    expired: Array


@dataclass(frozen=True)
class _Rows:
    """The batch's rows as the sides see them: per side, whether a row is of its stream,
    whether it may complete (passes, has a key group) and its key group."""

    ts: Array
    instance: Array
    of_side: tuple[Array, ...]
    testable: tuple[Array, ...]
    groups: tuple[Array, ...]

    @property
    def seconds(self) -> Array:
        """Rows of any completing state's stream: they move new matches to pending."""
        found: Array = np.logical_or.reduce(self.of_side)
        return found


@dataclass(frozen=True)
class _Result:
    """(candidate, row, side) triples in emission order (expired matches left out); the
    candidates that stay, in their list order; and their new list, lists, completed and
    expired flags."""

    matched: Array
    kept: Array
    waiting: Array
    listed: Array
    completed: Array
    expired: Array


def process(spec: FollowedBySpec, pending: Pending,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Pending]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected attribute,
    in emission order) and the matches still pending after it. ``frame`` holds the rows of
    the pattern's streams in ``_seq`` order with the flag columns above and the spec's
    columns."""
    kinds = dict(spec.columns)
    sides = spec.sides()
    first_cols = [c for c in kinds if c.startswith(FIRST)]
    batch = logical_columns(frame, spec.physical, kinds)
    seq, ts = frame[SEQ].to_numpy(np.int64), frame[TS].to_numpy(np.int64)
    starts = frame[FIRST_EVENT].to_numpy(bool)
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
    candidate_partition = np.concatenate([pending.partition, partition[new]])
    instances = pd.factorize(np.concatenate([candidate_partition, partition]))[0] \
        .astype(np.int64)
    size = len(candidate_partition)
    groups = [key_groups(instances, [candidate_columns[a] for a, _ in side.keys],
                         [batch[b] for _, b in side.keys]) for side in sides]
    candidates = _Candidates(
        np.concatenate([pending.seq, seq[new]]), np.concatenate([pending.ts, ts[new]]),
        candidate_partition, instances[:size], candidate_columns,
        tuple(g[:size] for g in groups),
        np.concatenate([np.full(len(pending), -1, np.int64), new]),
        np.concatenate([pending.waiting, np.ones(len(new), bool)]),
        np.concatenate([pending.listed, np.full(len(new), -1, np.int8)]),
        np.concatenate([pending.completed, np.zeros(len(new), bool)]),
        np.concatenate([pending.expired, np.zeros(len(new), bool)]))
    of_side = tuple(frame[SIDE_FLAGS[j][0]].to_numpy(bool) for j in range(len(sides)))
    rows = _Rows(ts, instances[size:], of_side,
                 tuple(of_side[j] & frame[SIDE_FLAGS[j][1]].to_numpy(bool)
                       & (groups[j][size:] >= 0) for j in range(len(sides))),
                 tuple(g[size:] for g in groups))
    # every event of the pattern's streams expires matches, and new matches join the pending
    # lists in time order: all of them count for the order
    if (np.diff(np.concatenate([pending.ts, ts])) >= 0).all():
        result = _vectorised(spec, candidates, batch, rows)
    else:
        result = _sequential(spec, candidates, batch, rows, partition, starts)
    kept = result.kept
    left = Pending(candidates.seq[kept], result.waiting[kept], candidates.ts[kept],
                   candidates.partition[kept],
                   {c: take(v, kept) for c, v in candidate_columns.items()},
                   pending.started, result.listed[kept], result.completed[kept],
                   result.expired[kept])
    return _outputs(spec, candidates, batch, seq, ts, result.matched), left


def _first_starts(started: set[Any], partition: Array, new: Array) -> Array:
    """The rows of ``new`` that are the first start of an instance not yet ``started``
    (which they join)."""
    first = np.flatnonzero(~pd.Series(partition[new]).duplicated().to_numpy())
    keys = partition[new[first]].tolist()
    fresh = [i for i, key in zip(first.tolist(), keys) if key not in started]
    started.update(keys)
    return new[np.asarray(fresh, np.int64)]


def _vectorised(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
                rows: _Rows) -> _Result:
    """The batch when its timestamps do not go back: each match a side's list holds
    completes at its earliest accepting event over the sides (the left side's at a tie).
    In time order every list is in time order too, so ``within`` drops the same matches
    from each: all whose ``e1`` is older than ``now - t``."""
    size = len(candidates.seq)
    found = np.full(size, -1, np.int64)
    side = np.full(size, -1, np.int64)
    for j, completing in enumerate(spec.sides()):
        held = _in_list(candidates.listed, j) & ~candidates.completed
        first = _first_events(spec.within, completing.residual, candidates, j, held, batch,
                              rows)
        better = (first >= 0) & ((found < 0) | (first < found))
        found[better], side[better] = first[better], j
    matched = np.flatnonzero(found >= 0)
    ts, seconds = rows.ts, rows.seconds
    listed = candidates.listed.copy()
    completed = candidates.completed.copy()
    completed[matched] = True
    for j in range(len(rows.of_side)):
        listed[matched[side[matched] == j]] &= ~np.int8(1 << j)
        if len(rows.of_side) == 1:
            break  # one list: a completed match has left it
        # a completed match leaves the other side's list at that side's next event: after it
        # completed (or at that event, when this side's list comes after the completing one)
        last = _last_row(candidates, rows.instance, rows.of_side[j])
        gone = completed & ((last > found) | ((last == found) & (found >= 0) & (side < j)))
        listed[gone] &= ~np.int8(1 << j)
    if spec.within is not None:  # in time order, an instance's last event is its latest
        last = _last_row(candidates, rows.instance, np.ones(len(ts), bool))
        listed[(last > candidates.rows)
               & (ts[np.maximum(last, 0)] - candidates.ts > spec.within)] = 0
    waiting = candidates.waiting & ~(_last_row(candidates, rows.instance, seconds)
                                     > candidates.rows)
    emitted = matched[~candidates.expired[matched]]
    triples = np.stack([emitted, found[emitted], side[emitted]], axis=1)
    # emitted at the completing event, the left side's first, each in its list's order:
    # the candidates' (time) order here
    triples = triples[np.lexsort((triples[:, 0], triples[:, 2], triples[:, 1]))]
    return _Result(triples, np.flatnonzero(listed != 0), waiting, listed, completed,
                   candidates.expired)


def _in_list(listed: Array, side: int) -> Array:
    """Which matches ``side``'s pending (or new) list holds."""
    held: Array = ((listed >> side) & 1).astype(bool)
    return held


def _first_events(within: int | None, residual: Node | None, candidates: _Candidates,
                  side: int, held: Array, batch: Mapping[str, Values], rows: _Rows) -> Array:
    """Per candidate ``held`` (in the side's list, not completed), the first later batch
    row that completes it through ``side`` within ``within`` of its ``e1`` (-1: none)."""
    ts = rows.ts
    in_time = None if within is None else \
        (lambda which, at: ts[at] - candidates.ts[which, None] <= within)
    accepts = None if residual is None else \
        (lambda which, at: _accepts(residual, candidates, batch, which, at))
    return first_events(rows.groups[side], rows.testable[side], candidates.groups[side],
                        candidates.rows, held, in_time, accepts)


def first_events(row_groups: Array, testable: Array, groups: Array, after: Array,
                 held: Array, in_time: Callable[[Array, Array], Array] | None,
                 accepts: Callable[[Array, Array], Array] | None) -> Array:
    """Per candidate ``held`` (with a match-key group, ``groups >= 0``), the first
    ``testable`` batch row of its group later than its row ``after`` (-1: before the batch)
    that ``in_time`` allows and ``accepts`` accepts (-1: none). ``in_time(which, at)`` takes
    candidates and a block of rows per candidate and must turn false for good once false
    (rows come in arrival order); ``accepts(which, at)`` takes (candidate, row) pairs.

    The rows of each group are sorted by arrival, each candidate's first by binary search,
    and the rows after it tested in growing blocks until each candidate has its row or has
    run past its group's rows or its time."""
    events = np.flatnonzero(testable)
    events = events[np.argsort(row_groups[events], kind="stable")]  # (group, arrival)
    sorted_groups = row_groups[events]
    width = np.int64(len(testable) + 1)  # a candidate's first event: same group, a later row
    first = np.searchsorted(sorted_groups * width + events, groups * width + after,
                            side="right")
    end = np.searchsorted(sorted_groups, groups, side="right")
    active = np.flatnonzero(held & (groups >= 0) & (first < end))
    found = np.full(len(groups), -1, np.int64)
    offset, block = 0, _FIRST_BLOCK
    while len(active):
        tried = first[active, None] + np.arange(offset, offset + block)[None, :]
        inside = tried < end[active, None]
        at = events[np.minimum(tried, len(events) - 1)]
        if in_time is not None:
            inside &= in_time(active, at)
        accepted = inside.copy()
        if accepts is not None and inside.any():
            which, step = np.nonzero(inside)
            accepted[which, step] = accepts(active[which], at[which, step])
        hit = accepted.any(axis=1)
        chosen = np.argmax(accepted, axis=1)
        found[active[hit]] = at[hit, chosen[hit]]
        # a candidate is done when matched or past its group's rows or its time (its
        # group's rows are in arrival order, so no later one is in time either)
        finished = hit | ~inside.all(axis=1)
        active = active[~finished]
        offset += block
        block = min(block * 4, _LAST_BLOCK)
    return found


def _last_row(candidates: _Candidates, row_instance: Array, chosen: Array) -> Array:
    """Per candidate, the last chosen batch row of its instance (-1: none)."""
    last = np.full(int(max(candidates.instance.max(initial=-1),
                           row_instance.max(initial=-1))) + 1, -1, np.int64)
    rows = np.flatnonzero(chosen)
    np.maximum.at(last, row_instance[rows], rows)
    found: Array = last[candidates.instance]
    return found


def _sequential(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
                rows: _Rows, partition: Array, starts: Array) -> _Result:
    """The reference's order of work, event by event (timestamps go back in this batch):
    per instance, a new list and a pending list per side."""
    within = spec.within if spec.within is not None else np.iinfo(np.int64).max
    sides = spec.sides()
    listed, completed = candidates.listed.copy(), candidates.completed.copy()
    expired = candidates.expired.copy()
    lists: dict[Any, list[deque[int]]] = {}
    new: dict[Any, list[int]] = {}
    entered: dict[int, int] = {}  # when each match joined the pending lists: their order
    for index in range(int((candidates.rows < 0).sum())):
        key = candidates.partition[index]
        if candidates.waiting[index]:
            new.setdefault(key, []).append(index)
            continue
        entered[index] = len(entered)
        held = lists.setdefault(key, [deque() for _ in sides])
        for j in range(len(sides)):
            if _in_list(listed[index], j):
                held[j].append(index)
    started = {int(r): i for i, r in enumerate(candidates.rows) if r >= 0}
    seconds = rows.seconds
    triples: list[tuple[int, int, int]] = []
    for row in range(len(rows.ts)):
        key, now = partition[row], int(rows.ts[row])
        held = lists.setdefault(key, [deque() for _ in sides])
        for j, waiting in enumerate(held):  # from the head, up to the first in time
            while waiting and abs(int(candidates.ts[waiting[0]]) - now) > within:
                gone = waiting.popleft()
                expired[gone] = True
                listed[gone] &= ~np.int8(1 << j)
        fresh = []
        for c in new.get(key, ()):
            if abs(int(candidates.ts[c]) - now) <= within:
                fresh.append(c)
            else:
                expired[c], listed[c] = True, 0
        if seconds[row]:  # the reference sorts them by timestamp (a stable sort)
            fresh.sort(key=lambda c: int(candidates.ts[c]))
            entered.update((c, len(entered) + i) for i, c in enumerate(fresh))
            for waiting in held:
                waiting.extend(fresh)
            fresh = []
        new[key] = fresh
        for j, side in enumerate(sides):  # the left side's list first
            if not rows.of_side[j][row] or not held[j]:
                continue
            waiting_j = np.fromiter(held[j], np.int64, len(held[j]))
            live = waiting_j[~completed[waiting_j]]  # the other side's completed: dropped
            if rows.testable[j][row] and len(live):
                tried = live[candidates.groups[j][live] == rows.groups[j][row]]
                if len(tried) and side.residual is not None:
                    tried = tried[_accepts(side.residual, candidates, batch, tried,
                                           np.full(len(tried), row))]
                triples += [(c, row, j) for c in tried.tolist() if not expired[c]]
                completed[tried] = True
                live = live[~completed[live]]
            listed[waiting_j[completed[waiting_j]]] &= ~np.int8(1 << j)
            held[j] = deque(live.tolist())
        if starts[row]:
            new[key].append(started[row])
    # what stays: each instance's pending lists (in their common order) then its new list,
    # the instances merged by time (so that, once time goes forward again, the whole state
    # is in time order and the next batch can take the vectorised path)
    instances = [[*sorted({c for waiting in lists.get(key, ()) for c in waiting},
                          key=entered.__getitem__), *new.get(key, ())]
                 for key in lists.keys() | new.keys()]
    kept = list(heapq.merge(*instances, key=lambda c: int(candidates.ts[c])))
    in_new = np.zeros(len(candidates.seq), bool)
    for fresh in new.values():
        in_new[fresh] = True
    return _Result(np.asarray(triples, np.int64).reshape(-1, 3), np.asarray(kept, np.int64),
                   in_new, listed, completed, expired)


def _accepts(residual: Node, candidates: _Candidates, batch: Mapping[str, Values],
             which: Array, rows: Array) -> Array:
    """Whether ``residual`` holds for each (candidate, batch row) pair."""
    columns = {c: take(v, which) for c, v in candidates.columns.items()}
    columns.update({c: take(v, rows) for c, v in batch.items() if not c.startswith(FIRST)})
    return truthy(evaluate(residual, columns, len(which)))


def _outputs(spec: FollowedBySpec, candidates: _Candidates, batch: Mapping[str, Values],
             seq: Array, ts: Array, triples: Array) -> pd.DataFrame:
    # triples come in emission order; a side's attributes are null when the other completed
    which, rows, side = triples[:, 0], triples[:, 1], triples[:, 2]
    values = []
    for o in spec.selected:
        if o.side == FIRST:
            values.append((take(candidates.columns[o.column], which), o.type))
            continue
        taken = take(batch[o.column], rows)
        other = side != SIDES.index(o.side)
        values.append((Values(taken.values, taken.null | other), o.type))
    return output_frame(seq, ts, rows, values)
