"""``[every] e1=S1[f]<n:m> -> e2=S2[c] within t``, walked row by row as the reference does.

With ``within`` the vectorised model of :mod:`.matching` no longer holds. Before every event
of an instance, ``within`` drops matches whose first ``S1`` event is more than ``t`` away:
from the head of each pending list, stopping at the first one still in time (an empty
match, still waiting for its first event, stops it too), and from the new lists all of
them. A match the counting state drops so restarts its ``every`` at once — an empty match
joins the counting state, beside the copy it already made when it reached ``n`` events if
it had — so the matches of an instance multiply with the data, and which ones the scans
reach depends on the lists' order, which follows the events' timestamps. So this walks
the instance's rows in arrival order over plain Python lists shaped as the reference's
(:mod:`eddy.runtime.pattern.processors`): per instance the counting state's and ``e2``'s
pending and new lists, holding shared match objects. ``c`` is tested for all of ``e2``'s
pending matches at once with the columnar evaluator.

State between batches: each instance's lists and the rows their chains read (as the
operator read them; chains hold row numbers into the batch with those rows first).
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
    evaluate,
    logical_columns,
    output_frame,
    take,
    truthy,
)
from eddy.engine.operators.counting.plan import CountingSpec
from eddy.engine.operators.followed_by.matching import (
    FIRST_EVENT,
    PARTITION,
    SECOND_EVENT,
    SECOND_PASSES,
)
from eddy.engine.operators.followed_by.plan import FIRST
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["Walked", "process"]

Array = npt.NDArray[Any]


class _Match:
    """One partial match (the reference's ``StateEvent``): ``chain`` the rows of ``e1``,
    ``ts`` the time of its last event (-1: none yet), whether ``within`` dropped it and
    whether ``e2`` took an event."""

    __slots__ = ("chain", "ts", "expired", "done")

    def __init__(self, ts: int = -1) -> None:
        self.chain: list[int] = []
        self.ts = ts
        self.expired = False
        self.done = False

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore, (self.chain, self.ts, self.expired, self.done)


def _restore(chain: list[int], ts: int, expired: bool, done: bool) -> _Match:
    match = _Match(ts)
    match.chain, match.expired, match.done = chain, expired, done
    return match


@dataclass
class _Lists:
    """One instance's lists: the counting state's and ``e2``'s, pending and new."""

    counting: list[_Match] = field(default_factory=list)
    counting_new: list[_Match] = field(default_factory=lambda: [_Match()])
    second: list[_Match] = field(default_factory=list)
    second_new: list[_Match] = field(default_factory=list)


@dataclass
class Walked:
    """What one Spark state key keeps between micro-batches (pickled by Spark's state
    store): each instance's lists, and the rows their matches' chains read."""

    rows: pd.DataFrame | None = None
    instances: dict[Any, _Lists] = field(default_factory=dict)


def process(spec: CountingSpec, state: Walked,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Walked]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected attribute,
    in emission order) and the state after it; ``frame`` as :func:`.matching.process`
    takes it."""
    assert spec.within is not None
    carried = 0 if state.rows is None else len(state.rows)
    rows = frame if state.rows is None else pd.concat([state.rows, frame], ignore_index=True)
    columns = logical_columns(rows, spec.physical, dict(spec.columns))
    ts = rows[TS].to_numpy(np.int64)
    times = ts.tolist()
    keys = rows[PARTITION].tolist() if spec.partitioned else [0] * len(rows)
    passing = rows[FIRST_EVENT].tolist()
    of_second = rows[SECOND_EVENT].tolist()
    accepting = rows[SECOND_PASSES].tolist()
    of_first = _of_first(spec, rows)
    emitted: list[tuple[int, list[int]]] = []
    for row in range(carried, len(rows)):
        lists = state.instances.get(keys[row])
        if lists is None:
            lists = state.instances[keys[row]] = _Lists()
        now = times[row]
        _expire(spec, lists, times, now)
        if of_first[row]:
            _move(lists.counting_new, lists.counting)
        if of_second[row]:
            _move(lists.second_new, lists.second)
            if lists.second:  # e2's state sees the event first (the last state first)
                done = _complete(spec, lists, columns, row, accepting[row])
                emitted += [(row, list(m.chain)) for m in done if not m.expired]
        if of_first[row]:
            _count(spec, lists, row, now, passing[row])
    outputs = _outputs(spec, columns, rows[SEQ].to_numpy(np.int64), ts, emitted)
    return outputs, _carry(state, rows)


def _of_first(spec: CountingSpec, rows: pd.DataFrame) -> list[bool]:
    """Whether each row is of ``S1``'s stream, whether or not it passes ``f`` (the operator
    reads the rows of ``S1`` and ``S2`` only)."""
    if spec.one_stream:
        return [True] * len(rows)
    first: list[bool] = (~rows[SECOND_EVENT].to_numpy(bool)).tolist()
    return first


def _expire(spec: CountingSpec, lists: _Lists, times: list[int], now: int) -> None:
    """``within`` before an event: the counting state's lists (restarting ``every`` when
    it dropped a match), then ``e2``'s."""
    within = spec.within
    assert within is not None

    def gone(match: _Match) -> bool:
        return bool(match.chain) and abs(times[match.chain[0]] - now) > within

    restart = _drop(lists.counting, lists.counting_new, gone)
    if spec.every and restart is not None:
        lists.counting_new.append(_Match(restart.ts))
        _move(lists.counting_new, lists.counting)
    _drop(lists.second, lists.second_new, gone)


def _drop(pending: list[_Match], new: list[_Match],
          gone: Callable[[_Match], bool]) -> _Match | None:
    """Drops what ``within`` lets go from one state's lists — the pending one from its
    head up to the first match still in time, the new one all — marking them expired;
    returns the last one it marked (None: none)."""
    marked: _Match | None = None
    head = 0
    while head < len(pending) and gone(pending[head]):
        head += 1
    dropped, pending[:head] = pending[:head], []
    kept = []
    for match in new:
        if gone(match):
            dropped.append(match)
        else:
            kept.append(match)
    new[:] = kept
    for match in dropped:
        if not match.expired:
            match.expired, marked = True, match
    return marked


def _move(new: list[_Match], pending: list[_Match]) -> None:
    """Handed-over matches become pending, sorted by their last event's time (unset
    last), stably."""
    if new:
        new.sort(key=lambda m: (m.ts == -1, m.ts))
        pending.extend(new)
        new.clear()


def _complete(spec: CountingSpec, lists: _Lists, columns: Mapping[str, Values], row: int,
              accepting: bool) -> list[_Match]:
    """``e2``'s pending matches the event at ``row`` completes (``c`` holds), in list
    order; they leave the list."""
    pending = lists.second
    ok = np.full(len(pending), accepting)
    if accepting:
        at = np.full(len(pending), row)

        def of_chains(column: str, index: int) -> Values:
            return take(columns[column], np.array([m.chain[index] for m in pending]))

        for index, a, b in spec.keys:
            first, second = of_chains(a, index), take(columns[b], at)
            ok &= ~(first.null | second.null) & (first.values == second.values)
        if spec.residual is not None and ok.any():
            held = {name: of_chains(column, i) for name, i, column in spec.fixed}
            held.update({c: take(v, at) for c, v in columns.items() if not c.startswith(FIRST)})
            ok &= truthy(evaluate(spec.residual, held, len(pending)))
    hits = ok.tolist()
    done = [m for m, hit in zip(pending, hits) if hit]
    for match in done:
        match.done = True
    lists.second = [m for m, hit in zip(pending, hits) if not hit]
    return done


def _count(spec: CountingSpec, lists: _Lists, row: int, now: int, passes: bool) -> None:
    """The counting state takes the event at ``row``: each of its collecting matches adds
    it if it passes ``f``; one reaching ``n`` goes to ``e2`` (and, under ``every``, an
    empty copy starts), one reaching ``m`` stops collecting; completed ones leave."""
    kept = []
    for match in lists.counting:
        if match.done:
            continue
        if not passes:
            kept.append(match)
            continue
        match.chain.append(row)
        match.ts = now
        count = len(match.chain)
        if count == spec.least:
            lists.second_new.append(match)
            if spec.every:
                lists.counting_new.append(_Match(now))
        if count != spec.most:
            kept.append(match)
    lists.counting = kept


def _outputs(spec: CountingSpec, columns: Mapping[str, Values], seq: Array, ts: Array,
             emitted: list[tuple[int, list[int]]]) -> pd.DataFrame:
    rows = np.array([row for row, _ in emitted], np.int64)
    values = []
    for picked in spec.selected:
        if picked.index is None:
            values.append((take(columns[picked.column], rows), picked.type))
            continue
        at = np.array([chain[picked.index] if -len(chain) <= picked.index < len(chain)
                       else -1 for _, chain in emitted], np.int64)
        taken = take(columns[picked.column], np.maximum(at, 0))
        values.append((Values(taken.values, taken.null | (at < 0)), picked.type))
    return output_frame(seq, ts, rows, values)


def _carry(state: Walked, rows: pd.DataFrame) -> Walked:
    """Keeps the rows live matches' chains read, renumbered from 0."""
    live = {id(m): m for lists in state.instances.values()
            for m in (*lists.counting, *lists.counting_new, *lists.second,
                      *lists.second_new)}
    used = sorted({row for m in live.values() for row in m.chain})
    renumber = {row: i for i, row in enumerate(used)}
    for match in live.values():
        match.chain = [renumber[row] for row in match.chain]
    state.rows = rows.iloc[used].reset_index(drop=True)
    return state
