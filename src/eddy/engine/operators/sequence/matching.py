"""``every e1=S1[f1], …, en=Sn[fn] within t`` over a whole micro-batch at once.

In the reference (``StreamPreStateProcessor`` in sequence mode, ported event by event in
:mod:`eddy.runtime.pattern`), every event of the sequence's streams that reaches an instance
(the app, or one partition key) first resets every state: the matches a state was waiting
with are dropped unless the previous event just handed them over. So a match that state
``k`` holds survives exactly one event: the instance's next one, which must be of ``Sk``
and pass ``fk``, or the match is gone; and a state holds at most one handed-over match,
since the state before it held at most one. The start state is seeded afresh at every
event under ``every`` (each event is tried as ``e1`` once); without ``every`` it is seeded
once, so only the instance's first event may start the match. ``within`` drops a match
whose ``e1`` is more than ``t`` away (either way) from the event it waits for.

A match is therefore ``n`` consecutive rows of one instance — rows ``p, p+1, …, p+n-1`` in
the instance's arrival order — with row ``p+k`` passing state ``k``'s conditions, and it is
emitted at its last row, at most one per row. :func:`process` tests all starts of a batch
at once, state by state, on the ones still alive; the state between batches is the last
``n-1`` rows of each instance (a match may start there and end in a later batch).
"""

from __future__ import annotations

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
from eddy.engine.operators.sequence.plan import PREFIXES, SequenceSpec, passes
from eddy.engine.spark.row_layout import SEQ, TS

__all__ = ["PARTITION", "Recent", "process"]

Array = npt.NDArray[Any]
PARTITION = "_pk"  # the partition key (partitioned sequences only)


@dataclass
class Recent:
    """What one Spark state key keeps between micro-batches: the last ``n-1`` rows of each
    instance (as the operator read them) and, for a sequence without ``every``, the
    ``_seq`` of each instance's first event, the only one that may start its match
    (pickled by Spark's state store)."""

    rows: pd.DataFrame | None = None
    firsts: dict[Any, int] = field(default_factory=dict)


def process(spec: SequenceSpec, recent: Recent,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Recent]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected value, in
    emission order) and what stays for the next batch. ``frame`` holds the rows of the
    sequence's streams in ``_seq`` order with a :func:`~.plan.passes` column per state and
    the spec's columns."""
    carried = 0 if recent.rows is None else len(recent.rows)
    rows = frame if recent.rows is None else pd.concat([recent.rows, frame], ignore_index=True)
    size = len(rows)
    partition = rows[PARTITION].to_numpy() if spec.partitioned else np.zeros(size, np.int64)
    instance = pd.factorize(partition)[0] if spec.partitioned else np.zeros(size, np.int64)
    order = np.argsort(instance, kind="stable")  # by instance, then arrival
    owner = instance[order]
    ts = rows[TS].to_numpy(np.int64)
    first = np.r_[True, owner[1:] != owner[:-1]]  # an instance's first row here
    starts = np.flatnonzero(rows[passes(0)].to_numpy(bool)[order])
    if not spec.every:
        seq, keys = rows[SEQ].to_numpy(np.int64), partition.tolist()
        for row in order[first].tolist():
            recent.firsts.setdefault(keys[row], int(seq[row]))
        firsts = np.array([recent.firsts[keys[row]] for row in order[starts].tolist()],
                          np.int64)
        starts = starts[seq[order[starts]] == firsts]
    kinds = dict(spec.columns)
    columns = logical_columns(rows, spec.physical, kinds)
    for k in range(1, spec.states):
        at = starts + k
        inside = at < size
        starts, at = starts[inside], at[inside]
        row = order[at]
        alive = (owner[at] == owner[starts]) & rows[passes(k)].to_numpy(bool)[row]
        if spec.within is not None:
            alive &= np.abs(ts[row] - ts[order[starts]]) <= spec.within
        starts = starts[alive]
        residual = spec.residuals[k]
        if residual is not None and len(starts):
            held = _states(columns, order, starts, k)
            starts = starts[truthy(evaluate(residual, held, len(starts)))]
    ends = order[starts + spec.states - 1]
    done = ends >= carried  # a match that ended among the carried rows was emitted before
    starts, ends = starts[done], ends[done]
    emitted = np.argsort(ends, kind="stable")
    starts, ends = starts[emitted], ends[emitted]
    held = _states(columns, order, starts, spec.states - 1)
    outputs = output_frame(rows[SEQ].to_numpy(np.int64), ts, ends, [
        (evaluate(o.expression, held, len(starts)) if o.expression is not None
         else held[o.column], o.type) for o in spec.selected])
    last = np.r_[owner[1:] != owner[:-1], True]
    ends_at = np.flatnonzero(last)  # each sorted row's place from its instance's end:
    from_end = np.repeat(ends_at, np.diff(np.r_[-1, ends_at])) - np.arange(size)
    kept = np.sort(order[from_end < spec.states - 1])
    recent.rows = rows.iloc[kept].reset_index(drop=True)
    return outputs, recent


def _states(columns: dict[str, Values], order: Array, starts: Array,
            upto: int) -> dict[str, Values]:
    """The columns of states ``0..upto`` of the matches starting at the sorted rows
    ``starts``."""
    held: dict[str, Values] = {}
    for column in columns:
        k = PREFIXES.index(column[0])
        if k <= upto:
            held[column] = take(columns[column], order[starts + k])
    return held
