"""``every (e1=S1[f1] and|or e2=S2[f2]) -> e3=S3[c]`` over a whole micro-batch at once.

In the reference (``LogicalPreStateProcessor``/``LogicalPostStateProcessor``, ported event
by event in :mod:`eddy.runtime.pattern.logical`) the logical state's two sides hold one
match between them. With ``or`` the first passing event of either side completes it, and
``every`` starts the next at once: each passing ``S1`` or ``S2`` event completes one. With
``and`` the first side's event fills its slot and leaves the match to the other side, whose
first passing event completes it; later events of the filled side find nothing there, and
``every`` restarts only on completion. So per instance (the app, or one partition key) the
logical state is an automaton — nothing held, or one side's event held — and a match
completes at the first event of the other side after a hold.

A completed match then waits for ``e3`` as a followed-by's ``e1`` match does
(:mod:`eddy.engine.operators.followed_by.matching`): in ``e3``'s *new* list until the next
``S3`` event of the instance moves the new ones, sorted by the time of the event that
completed them, to the end of the *pending* list, just before it is tested; an ``S3`` event
completes, in pending-list order, every match ``c`` accepts, each match once.

Between batches the state is the rows the instance still needs: the events of the matches
waiting for ``e3`` (with whether each was moved to the pending list) and the event held.
They are replayed ahead of the next batch: the automaton rebuilds the same matches and
hold from them, and none of them is an ``S3`` event, so they emit nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.engine.operators.columnar_expressions import (
    Values,
    evaluate,
    logical_columns,
    output_frame,
    take_or_null,
    truthy,
)
from eddy.engine.operators.followed_by.matching import first_events
from eddy.engine.operators.sequence.matching import PARTITION
from eddy.engine.operators.sequence.plan import PREFIXES, SequenceSpec, arrives, passes
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["Waiting", "process"]

Array = npt.NDArray[Any]
MOVED = "_moved"
"""A carried row's column: its match's place in ``e3``'s pending list, -1 while it has not
moved there."""


@dataclass
class Waiting:
    """The rows of each instance's matches waiting for ``e3`` and of its held event, in
    arrival order (None: nothing waits); what Spark checkpoints, pickled."""

    rows: pd.DataFrame | None = None


@dataclass
class _Matches:
    """The logical state's completed matches, in completion order: each one's ``e1`` and
    ``e2`` rows (-1: none, a side of ``or`` that did not take part) and the row that
    completed it; and the rows each instance holds at the end."""

    first: Array
    second: Array
    at: Array
    held: Array


def process(spec: SequenceSpec, waiting: Waiting,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Waiting]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected value, in
    emission order) and what waits after it. ``frame`` holds the rows of the pattern's
    streams in ``_seq`` order with a :func:`~..sequence.plan.passes` and an
    :func:`~..sequence.plan.arrives` column per state and the spec's columns."""
    rows = frame if waiting.rows is None else \
        pd.concat([waiting.rows, frame], ignore_index=True)
    size = len(rows)
    instance = pd.factorize(rows[PARTITION])[0].astype(np.int64) if spec.partitioned \
        else np.zeros(size, np.int64)
    sides = [rows[passes(k)].to_numpy(bool) for k in range(3)]
    matches = _logical(spec.logical == "and", sides[0], sides[1], instance)
    columns = logical_columns(rows, spec.physical, dict(spec.columns))
    residual = spec.residuals[2]

    def state_columns(index: Array, found: Array) -> dict[str, Values]:
        """The columns of matches ``index`` with the rows ``found`` as their ``e3``."""
        picked = {0: matches.first[index], 1: matches.second[index], 2: found}
        return {name: take_or_null(values, picked[PREFIXES.index(name[0])])
                for name, values in columns.items()}

    def accepts(index: Array, at: Array) -> Array:
        if residual is None:
            return np.ones(len(index), bool)
        return truthy(evaluate(residual, state_columns(index, at), len(index)))

    count = len(matches.at)
    found = first_events(instance, sides[2], instance[matches.at], matches.at,
                         np.ones(count, bool), None, accepts)
    done = np.flatnonzero(found >= 0)
    ts = rows[TS].to_numpy(np.int64)
    moved = _moved(rows, instance, matches.at)
    # the pending list's order: the carried matches first (ranked), then per S3 event
    # that moved them, by the time of the event that completed them (then arrival)
    pending = np.lexsort((matches.at, np.where(moved < 0, 0, ts[matches.at]), moved))
    rank = np.empty(count, np.int64)
    rank[pending] = np.arange(count)
    # at one S3 event, the matches it completes go out in their pending-list order
    done = done[np.lexsort((rank[done], found[done]))]
    held = state_columns(done, found[done])
    outputs = output_frame(rows[SEQ].to_numpy(np.int64), ts, found[done],
                           [(evaluate(o.expression, held, len(done))
                             if o.expression is not None else held[o.column], o.type)
                            for o in spec.selected])
    left = np.setdiff1d(np.arange(count), done)
    carried = np.concatenate([matches.first[left], matches.second[left], matches.held])
    carried = np.unique(carried[carried >= 0])
    place = np.full(size, -1, np.int64)  # a waiting match's rows: its rank if moved
    for side in (matches.first[left], matches.second[left]):
        place[side[side >= 0]] = np.where(moved[left] < size, rank[left], -1)[side >= 0]
    kept = rows.iloc[carried].assign(**{MOVED: place[carried]})
    waiting.rows = kept.reset_index(drop=True) if len(kept) else None
    return outputs, waiting


def _logical(both: bool, first: Array, second: Array, instance: Array) -> _Matches:
    """The logical state's matches over the rows: with ``or`` every row passing either side
    completes one; with ``and`` the automaton of the module's docstring, per instance."""
    rows = np.flatnonzero(first | second)
    if not both:
        none = np.full(len(rows), -1, np.int64)
        return _Matches(np.where(first[rows], rows, none), np.where(second[rows], rows, none),
                        rows, np.empty(0, np.int64))
    held: dict[int, tuple[int, bool]] = {}
    pairs: list[tuple[int, int, int]] = []
    for row, is_second, owner in zip(rows.tolist(), second[rows].tolist(),
                                     instance[rows].tolist()):
        hold = held.get(owner)
        if hold is None:
            held[owner] = (row, is_second)
        elif hold[1] != is_second:
            del held[owner]
            pairs.append((row, hold[0], row) if is_second else (row, row, hold[0]))
    found = np.asarray(pairs, np.int64).reshape(-1, 3)
    return _Matches(found[:, 1], found[:, 2], found[:, 0],
                    np.asarray(sorted(row for row, _ in held.values()), np.int64))


def _moved(rows: pd.DataFrame, instance: Array, at: Array) -> Array:
    """Per match completed at row ``at``, when it moves to ``e3``'s pending list: a carried
    match that had moved already its place there less the number of rows (negative, in
    order), else the first later row of its instance's ``S3`` stream (the number of rows:
    not yet)."""
    size = len(rows)
    arrivals = np.flatnonzero(rows[arrives(2)].to_numpy(bool))
    moved = np.full(len(at), size, np.int64)
    if len(arrivals):  # (sorted by instance, then arrival)
        arrivals = arrivals[np.lexsort((arrivals, instance[arrivals]))]
        owners = instance[arrivals]
        after = np.searchsorted(owners * np.int64(size + 1) + arrivals,
                                instance[at] * np.int64(size + 1) + at, side="right")
        ends = np.searchsorted(owners, instance[at], side="right")
        moved = np.where(after < ends, arrivals[np.minimum(after, len(arrivals) - 1)], size)
    if MOVED in rows:
        earlier = rows[MOVED].to_numpy(np.float64, na_value=-1.0)[at]
        moved = np.where(earlier >= 0, earlier.astype(np.int64) - size, moved)
    return moved

