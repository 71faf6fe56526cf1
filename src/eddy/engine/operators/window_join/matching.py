"""``L#window.length(n)|time(t) join R#window.length(m)|time(u) on c`` over a whole
micro-batch at once.

In the reference (``JoinProcessor``, ported in :mod:`eddy.runtime.join`) an arriving
event joins what the other side's window holds at that moment, in the window's order
(oldest first), then enters its own window. A window is a FIFO queue: it only ever loses
its oldest events, so what it holds is always a contiguous run of its side's sequence,
``[head, count)`` — ``count`` the side's events so far, ``head`` the first still held. So
every event of the batch is numbered in its side's sequence (the window kept from earlier
batches, then the batch's events), the other side's events are sorted by (match key,
number), and each arriving event's matches are one contiguous run of that order, found by
two binary searches. The residual condition is then tested on all pairs at once.

``head`` at an arrival: for a length window ``count - n``. A time window loses its head
while ``ts + t <= now`` — ``now`` the group's clock, the largest timestamp seen, which every
row of either stream and every heartbeat moves — when an event enters it and when one of its
timers fires (one per new largest timestamp, due at ``ts + t``). When time never goes back
(the batch's timestamps nondecreasing from the clock on, and the window kept in time order
with its timers pending, as such batches leave it) every event with ``ts + t <= now`` is
gone by then, so ``head`` is one binary search of the side's timestamps. Any other batch
follows the queue, the clock and the timers row by row (:func:`_walk_heads`) — cheap
integer steps; the matching stays columnar.

What else a window emits joins the same way (:class:`_Pieces`): a length window's arrival
number ``c`` pushes out event ``c - n``, emitted as expired (stamped with the clock) just
before the arrival, with the same run of the other side to join; a side without a window
(length 0) emits its arrival and then the arrival's expired copy. An outer side's event
with no match is emitted once with nulls for the other side; a ``unidirectional`` join's
other side only fills its window. A self join reads each event as two rows, the left side's
first, as the reference's receiver hands it to the left side and then the right one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.engine.operators.columnar_expressions import (
    EXPIRED,
    Values,
    column_values,
    concat,
    dtype_of,
    evaluate,
    key_groups,
    output_frame,
    take,
    take_or_null,
    truthy,
)
from eddy.engine.operators.window_join.plan import LEFT, RIGHT, WindowJoinSpec
from eddy.engine.spark.row_layout import SEQ, TS
from eddy.lang.ast import AttrType

__all__ = ["PASSES", "SIDE", "TICK", "Windows", "process"]

Array = npt.NDArray[Any]
SIDE = "_side"  # 0: a left event, 1: a right one, TICK: a heartbeat (time windows only)
PASSES = "_passes"  # whether the event passes its side's filters (time windows only)
TICK = 2


@dataclass
class Windows:
    """Each side's window: its events' columns and timestamps, oldest first, and for time
    windows the group's clock, each side's largest timestamp so far and its pending timers
    (what Spark checkpoints, pickled)."""

    columns: list[dict[str, Values]] = field(default_factory=lambda: [{}, {}])
    sizes: list[int] = field(default_factory=lambda: [0, 0])
    times: list[Array] = field(default_factory=lambda: [np.empty(0, np.int64)] * 2)
    clock: int = 0
    last: list[int] = field(default_factory=lambda: [0, 0])
    timers: list[list[int]] = field(default_factory=lambda: [[], []])

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A checkpoint of two length windows, written before time windows were kept,
        restores with the fields it lacks as a fresh state has them."""
        self.__dict__.update(Windows().__dict__)
        self.__dict__.update(state)
        if "times" not in state:  # length windows do not read them, only count them
            self.times = [np.zeros(size, np.int64) for size in self.sizes]


def process(spec: WindowJoinSpec, windows: Windows,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Windows]:
    """The batch's joined events (``_seq``, ``_ts``, ``_i``, with expired events ``_x``, and
    ``o<i>`` per selected attribute, in emission order) and the windows after it. ``frame``
    holds the rows in ``_seq`` order (a self join's two rows of an event, left side first)
    with ``_side`` and the spec's physical columns; when the spec is
    :attr:`~WindowJoinSpec.clocked` also the rows that only move the clock (the group's
    other rows, heartbeats, events failing ``_passes``)."""
    frame = _in_order(frame)
    kinds = dict(spec.columns)
    side = frame[SIDE].to_numpy(np.int64)
    ts = frame[TS].to_numpy(np.int64)
    entering = side < TICK
    if PASSES in frame:
        entering &= frame[PASSES].to_numpy(bool)
    rows = [np.flatnonzero(entering & (side == s)) for s in (0, 1)]
    physical = dict(spec.physical)
    events: list[dict[str, Values]] = []
    for s, prefix in enumerate((LEFT, RIGHT)):
        kept = windows.columns[s]
        names = [c for c in kinds if c.startswith(prefix)]
        if not kept:
            kept = {c: Values(np.empty(0, dtype_of(kinds[c])), np.empty(0, bool))
                    for c in names}
        events.append({c: concat(kept[c], column_values(frame[physical[c]].iloc[rows[s]],
                                                        kinds[c]))
                       for c in names})
    times = [np.concatenate([windows.times[s], ts[rows[s]]]) for s in (0, 1)]
    held = list(windows.sizes)
    totals = [held[s] + len(rows[s]) for s in (0, 1)]
    # before[s][i]: how many of side s's events came before batch row i
    before = [held[s] + np.cumsum(entering & (side == s)) - (entering & (side == s))
              for s in (0, 1)]
    heads, after = _heads(spec, windows, ts, rows, before, times)
    groups = key_groups(np.zeros(totals[0] + totals[1], np.int64),
                        [events[0][a] for a, _ in spec.keys],
                        [events[1][b] for _, b in spec.keys])
    group = [groups[:totals[0]], groups[totals[0]:]]
    clock = np.maximum.accumulate(np.concatenate([[windows.clock], ts]))[1:]
    pieces = [_Pieces.join(spec, s, rows, group, before, heads, events, expired, ts, clock)
              for s in (0, 1) if spec.triggers[s] for expired in _kinds(spec)]
    found = _Pieces.merge(pieces)
    outputs = output_frame(frame[SEQ].to_numpy(np.int64), found.stamps, found.rows,
                           _selected(spec, found, events), by_seq=True)
    if spec.events != "current":
        outputs.insert(3, EXPIRED, found.expired)  # the schema's place (output_schema)
    last = [np.arange(after.heads[s], totals[s]) for s in (0, 1)]
    kept_windows = Windows([{c: take(v, last[s]) for c, v in events[s].items()}
                            for s in (0, 1)], [len(last[0]), len(last[1])],
                           [times[s][last[s]] for s in (0, 1)], after.clock, after.last,
                           after.timers)
    return outputs, kept_windows


def _in_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a self join's two rows of an event left side first (batch_frame sorts
    by ``_seq`` alone)."""
    seq = frame[SEQ].to_numpy(np.int64)
    if len(seq) < 2 or (seq[1:] > seq[:-1]).all():
        return frame
    order = np.lexsort((frame[SIDE].to_numpy(np.int64), seq))
    return frame.iloc[order].reset_index(drop=True)


def _kinds(spec: WindowJoinSpec) -> tuple[bool, ...]:
    """Which of a window's events join: current ones (False), expired ones (True)."""
    return {"current": (False,), "expired": (True,), "all": (False, True)}[spec.events]


@dataclass
class _Pieces:
    """Joined events: the batch row that caused each, its time, its place among that row's
    pieces (``rank``), the triggering side's and the other side's event numbers (``own``,
    ``partner``; -1: none, an outer side's nulls), and whether it is expired."""

    rows: Array
    stamps: Array
    rank: Array
    own: Array
    partner: Array
    left: Array  # whether the left side triggered
    expired: Array

    @staticmethod
    def join(spec: WindowJoinSpec, s: int, rows: list[Array], group: list[Array],
             before: list[Array], heads: list[Array], events: list[dict[str, Values]],
             expired: bool, ts: Array, clock: Array) -> _Pieces:
        """The events side ``s``'s window emits (current ones, or the expired ones its
        arrivals push out of a length window, stamped with the clock) joined with the other
        side's window. A length window emits the expired event before the arrival, an empty
        one (no window) after it."""
        triggers = rows[s]
        own = before[s][triggers]
        start, stop = heads[s], before[1 - s][triggers]
        size = spec.windows[s][1]
        if expired:
            out = own >= size  # the arrival pushes the event ``size`` before it out
            triggers, own, start, stop = triggers[out], own[out] - size, start[out], stop[out]
        second = spec.events == "all" and (size == 0) == expired
        which, partner = _matches(spec, s, group, own, start, stop, events)
        if spec.outer[s]:
            alone = np.setdiff1d(np.arange(len(triggers)), which)
            which = np.concatenate([which, alone])
            partner = np.concatenate([partner, np.full(len(alone), -1, np.int64)])
        batch_rows = triggers[which]
        return _Pieces(batch_rows, (clock if expired else ts)[batch_rows],
                       np.full(len(which), int(second)), own[which], partner,
                       np.full(len(which), s == 0), np.full(len(which), expired))

    @staticmethod
    def merge(pieces: list[_Pieces]) -> _Pieces:
        """All pieces in emission order: by batch row, then rank, then the partner's place in
        its window (an outer side's unmatched event has one piece)."""
        if not pieces:
            none = np.empty(0, np.int64)
            return _Pieces(none, none, none, none, none, none.astype(bool), none.astype(bool))
        joined = _Pieces(*(np.concatenate([getattr(p, f.name) for p in pieces])
                           for f in fields(_Pieces)))
        order = np.lexsort((joined.partner, joined.rank, joined.rows))
        return _Pieces(*(getattr(joined, f.name)[order] for f in fields(_Pieces)))

    def numbers(self, s: int) -> Array:
        """Side ``s``'s event number of each piece (-1: none)."""
        return np.where(self.left == (s == 0), self.own, self.partner)


@dataclass
class _After:
    """Where a batch leaves the windows: each side's head, the clock, the largest
    timestamps and the pending timers."""

    heads: list[int]
    clock: int
    last: list[int]
    timers: list[list[int]]


def _heads(spec: WindowJoinSpec, windows: Windows, ts: Array, rows: list[Array],
           before: list[Array], times: list[Array]) -> tuple[list[Array], _After]:
    """Per side, the head of the other side's window when each of its events arrives, and
    where the batch leaves the windows."""
    if all(kind == "length" for kind, _ in spec.windows) or \
            _in_time_order(spec, windows, ts):  # length windows: arithmetic, in any order
        return _search_heads(spec, windows, ts, rows, before, times)
    return _walk_heads(spec, windows, ts, rows, times)


def _in_time_order(spec: WindowJoinSpec, windows: Windows, ts: Array) -> bool:
    """Whether time never goes back in this batch and the time windows are as an ordered
    batch leaves them (kept in time order, none expired, a timer per distinct time)."""
    if len(ts) and (ts[0] < windows.clock or (len(ts) > 1 and (np.diff(ts) < 0).any())):
        return False
    for s, (kind, span) in enumerate(spec.windows):
        kept = windows.times[s]
        if kind != "time":
            continue
        if windows.timers[s] != (np.unique(kept) + span).tolist():
            return False
        if len(kept) and ((np.diff(kept) < 0).any() or kept[0] + span <= windows.clock
                          or windows.last[s] != kept[-1]):
            return False
    return True


def _search_heads(spec: WindowJoinSpec, windows: Windows, ts: Array, rows: list[Array],
                  before: list[Array],
                  times: list[Array]) -> tuple[list[Array], _After]:
    clock = max(windows.clock, int(ts.max())) if len(ts) else windows.clock
    heads: list[Array] = []
    for s in (0, 1):
        kind, size = spec.windows[1 - s]
        count = before[1 - s][rows[s]]
        if kind == "length":
            heads.append(np.maximum(count - size, 0))
        else:  # gone: every event with ts + t <= now, now = the arriving event's time
            heads.append(np.searchsorted(times[1 - s], ts[rows[s]] - size, side="right"))
    after = _After([0, 0], clock, list(windows.last), [[], []])
    for s, (kind, size) in enumerate(spec.windows):
        if kind == "length":
            after.heads[s] = max(0, len(times[s]) - size)
            continue
        after.heads[s] = int(np.searchsorted(times[s], clock - size, side="right"))
        if len(rows[s]):
            after.last[s] = max(after.last[s], int(times[s][-1]))
        after.timers[s] = (np.unique(times[s][after.heads[s]:]) + size).tolist()
    return heads, after


def _walk_heads(spec: WindowJoinSpec, windows: Windows, ts: Array, rows: list[Array],
                times: list[Array]) -> tuple[list[Array], _After]:
    """The windows' queues, clock and timers followed row by row, as the runtime runs them
    (``Context.advance``, ``TimeWindow.process``)."""
    kinds = [kind for kind, _ in spec.windows]
    sizes = [size for _, size in spec.windows]
    clock = windows.clock
    last = list(windows.last)
    timers = [deque(windows.timers[s]) for s in (0, 1)]
    head = [0, 0]
    count = list(windows.sizes)
    enters = np.full(len(ts), -1, np.int64)
    for s in (0, 1):
        enters[rows[s]] = s
    at_arrival = np.zeros(len(ts), np.int64)  # the other side's head when a row enters
    stamps = [times[s].tolist() for s in (0, 1)]
    times_list = ts.tolist()
    timed = [s for s in (0, 1) if kinds[s] == "time"]

    def expire(s: int) -> None:
        span, stamp = sizes[s], stamps[s]
        while head[s] < count[s] and stamp[head[s]] + span <= clock:
            head[s] += 1

    for r, s in enumerate(enters.tolist()):
        t = times_list[r]
        if t >= clock:
            clock = t
            for w in timed:
                due = timers[w]
                if due and due[0] <= t:
                    while due and due[0] <= t:
                        due.popleft()
                    expire(w)
        if s < 0:
            continue
        if kinds[s] == "time":
            expire(s)
            count[s] += 1
            if last[s] < t:
                timers[s].append(t + sizes[s])
                last[s] = t
        else:
            count[s] += 1
            head[s] = max(head[s], count[s] - sizes[s])
        at_arrival[r] = head[1 - s]
    heads = [at_arrival[rows[s]] for s in (0, 1)]
    return heads, _After(head, clock, last, [list(timers[s]) for s in (0, 1)])


def _matches(spec: WindowJoinSpec, trigger_side: int, group: list[Array], own: Array,
             start: Array, stop: Array, events: list[dict[str, Values]]) -> tuple[Array, Array]:
    """(which trigger, number of its partner in the other side's sequence) for every pair
    a triggering event (its number ``own`` on ``trigger_side``) makes with the other side's
    events ``start`` to ``stop`` (what that window holds), residual included."""
    other = 1 - trigger_side
    trigger_group = group[trigger_side][own]
    width = np.int64(len(group[other]) + 1)
    order = np.argsort(group[other], kind="stable")  # by (group, number)
    keys = group[other][order] * width + order
    first = np.searchsorted(keys, trigger_group * width + start, side="left")
    last = np.searchsorted(keys, trigger_group * width + stop, side="left")
    sizes = np.where(trigger_group >= 0, np.maximum(last - first, 0), 0)
    which = np.repeat(np.arange(len(own)), sizes)
    offsets = np.arange(len(which)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    partner = order[first[which] + offsets]
    if spec.residual is not None and len(which):
        columns = {c: take(v, own[which]) for c, v in events[trigger_side].items()}
        columns.update({c: take(v, partner) for c, v in events[other].items()})
        accepted = truthy(evaluate(spec.residual, columns, len(which)))
        which, partner = which[accepted], partner[accepted]
    return which, partner


def _selected(spec: WindowJoinSpec, found: _Pieces,
              events: list[dict[str, Values]]) -> list[tuple[Values, AttrType]]:
    """The selected values of each joined event (an outer side's missing event: nulls)."""
    columns: dict[str, Values] = {}
    for s in (0, 1):
        at = found.numbers(s)
        columns.update({c: take_or_null(v, at) for c, v in events[s].items()})
    return [(evaluate(o.expression, columns, len(found.rows)) if o.expression is not None
             else columns[o.column], o.type) for o in spec.selected]

