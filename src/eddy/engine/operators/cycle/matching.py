"""``every (e1=S1[f1] -> e2=S2[f2] -> … -> en=Sn[fn])`` over a whole micro-batch at once.

In the reference (ported event by event in :mod:`eddy.runtime.pattern`) ``every`` around the
whole chain restarts it only when its last state completes: the start state is seeded once,
a match leaves each state's list when the next state takes it, and the completed match's
``every`` copy joins the start state's *new* list, so it waits for a later event. An
instance (the app, or one partition key) therefore holds one partial match at a time: it
waits in state ``k`` until an event of ``Sk`` passes ``fk``, which moves it to state
``k+1`` (one state per event: a later state takes a handed-over match only from the next
event on), and the last state's event emits it and starts again at ``e1``. With each
``fk`` reading its own event, that is a small automaton over the instance's events: stage
``k`` goes to ``k+1`` (mod ``n``) on an event passing state ``k``'s conditions.

Without ``within``, :func:`process` runs it for all rows of a batch at once: each row's
transition is a map of the ``n`` stages, and a parallel prefix scan (Hillis–Steele,
``log2`` of the batch's rows steps, per instance segment) composes them, giving each row
the stage before it. A match's rows are then, per state, the last row that advanced from
that state. ``within`` makes the stage depend on time (before each event of the instance,
a partial match whose ``e1`` is too far away is dropped and ``every`` restarts at once),
so that case is walked row by row over plain lists. The state between batches is each
instance's partial match: the rows of its filled states.
"""

from __future__ import annotations

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
)
from eddy.engine.operators.sequence.matching import PARTITION, Recent
from eddy.engine.operators.sequence.plan import PREFIXES, SequenceSpec, passes
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["process"]

Array = npt.NDArray[Any]


def process(spec: SequenceSpec, recent: Recent,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Recent]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected value, in
    emission order) and each instance's partial match after it. ``frame`` holds the rows of
    the pattern's streams in ``_seq`` order with a :func:`~..sequence.plan.passes` column
    per state and the spec's columns."""
    rows = frame if recent.rows is None else pd.concat([recent.rows, frame], ignore_index=True)
    size, states = len(rows), spec.states
    partition = rows[PARTITION].to_numpy() if spec.partitioned else np.zeros(size, np.int64)
    instance = pd.factorize(partition)[0] if spec.partitioned else np.zeros(size, np.int64)
    order = np.argsort(instance, kind="stable")  # by instance, then arrival
    owner = instance[order]
    first = np.ones(size, bool)
    first[1:] = owner[1:] != owner[:-1]
    accepts = np.stack([rows[passes(k)].to_numpy(bool)[order] for k in range(states)], axis=1)
    if spec.within is None:
        matched, partial = _scan(accepts, first)
    else:
        matched, partial = _walk(accepts, rows[TS].to_numpy(np.int64)[order], first,
                                 spec.within)
    emitted = np.argsort(order[matched[-1]], kind="stable")  # in arrival order
    columns = logical_columns(rows, spec.physical, dict(spec.columns))
    held = _held(columns, order, [state[emitted] for state in matched])
    outputs = output_frame(rows[SEQ].to_numpy(np.int64), rows[TS].to_numpy(np.int64),
                           order[matched[-1][emitted]],
                           [(evaluate(o.expression, held, len(emitted))
                             if o.expression is not None else held[o.column], o.type)
                            for o in spec.selected])
    recent.rows = rows.iloc[np.sort(order[partial])].reset_index(drop=True)
    return outputs, recent


def _scan(accepts: Array, first: Array) -> tuple[list[Array], Array]:
    """Without ``within``: per state the (sorted) rows of each completed match, and the
    rows of the partial matches the instances end with, by a prefix scan of the stage
    maps (``first``: a row is its instance's first)."""
    size, states = accepts.shape
    position = np.arange(size)
    segment = np.maximum.accumulate(np.where(first, position, 0))  # the instance's first
    stages = np.arange(states)
    after = _prefix(np.where(accepts, (stages + 1) % states, stages), segment)[:, 0]
    # a carried partial match's rows are replayed from stage 0: they advance it again
    before = np.where(first, 0, np.r_[0, after[:-1]])
    advanced = accepts[position, before]
    last_from = [np.maximum.accumulate(np.where(advanced & (before == k), position, -1))
                 for k in range(states - 1)]
    ends = np.flatnonzero(advanced & (before == states - 1))
    last = np.ones(size, bool)
    last[:-1] = first[1:]
    tails = np.flatnonzero(last)  # each instance's last row
    # the partial match each instance ends with: its rows of the states it passed
    partial = np.concatenate([last_from[k][tails[after[tails] > k]]
                              for k in range(states - 1)])
    return [*(f[ends] for f in last_from), ends], partial


def _walk(accepts: Array, ts: Array, first: Array,
          within: int) -> tuple[list[Array], Array]:
    """:func:`_scan`'s answer with ``within``, row by row: before each event of the
    instance, a partial match whose ``e1`` is more than ``within`` away is dropped and the
    pattern starts afresh (the reference restarts its ``every`` at once, so that very event
    may start the new match); time makes this no finite automaton."""
    states = accepts.shape[1]
    passing, times, starts = accepts.tolist(), ts.tolist(), first.tolist()
    matched: list[list[int]] = []
    partial: list[int] = []
    held: list[int] = []
    for row, now in enumerate(times):
        if starts[row]:
            partial += held
            held = []
        elif held and abs(now - times[held[0]]) > within:
            held = []
        if passing[row][len(held)]:
            held.append(row)
            if len(held) == states:
                matched.append(held)
                held = []
    partial += held
    found = np.asarray(matched, np.int64).reshape(-1, states)
    return [found[:, k] for k in range(states)], np.asarray(partial, np.int64)


def _prefix(step: Array, segment: Array) -> Array:
    """Per row, the composition of the stage maps ``step`` of its instance's rows up to it
    (``step[r][s]``: the stage after row ``r`` from stage ``s``; ``segment[r]``: the first
    row of ``r``'s instance)."""
    composed = step.astype(np.intp)
    position = np.arange(len(step))
    shift = 1
    while True:
        has = np.flatnonzero(position - shift >= segment)
        if not len(has):
            return composed
        # the later rows' map after the earlier rows': composed[r][composed[r - shift]]
        composed[has] = np.take_along_axis(composed[has], composed[has - shift], axis=1)
        shift *= 2


def _held(columns: dict[str, Values], order: Array, rows: list[Array]) -> dict[str, Values]:
    """Each state's columns at its row (sorted positions ``rows[k]`` for state ``k``)."""
    return {column: take(values, order[rows[PREFIXES.index(column[0])]])
            for column, values in columns.items()}
