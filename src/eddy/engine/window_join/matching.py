"""``L#window.length(n) join R#window.length(m) on c`` over a whole micro-batch at once.

In the reference (``JoinProcessor``, ported in :mod:`eddy.engine.runtime.join`) an arriving
event joins what the other side's window holds at that moment, in the window's order
(oldest first), then enters its own window. With length windows "what the other side holds"
is plain arithmetic: the other side's last ``n`` events before this one. So every event of
the batch is numbered in its side's sequence (the window kept from earlier batches, then the
batch's events), the other side's events are sorted by (match key, number), and each
arriving event's matches are one contiguous run of that order, found by two binary
searches: ``[count before it - n, count before it)`` within its key. The residual condition
is then tested on all pairs at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.engine.columnar import (
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
from eddy.engine.layout import SEQ, TS
from eddy.engine.window_join.plan import LEFT, RIGHT, WindowJoinSpec

__all__ = ["SIDE", "Windows", "process"]

Array = npt.NDArray[Any]
SIDE = "_side"  # 0: a left event, 1: a right one


@dataclass
class Windows:
    """Each side's window: its last events' columns, oldest first (what Spark checkpoints,
    pickled)."""

    columns: list[dict[str, Values]] = field(default_factory=lambda: [{}, {}])
    sizes: list[int] = field(default_factory=lambda: [0, 0])


def process(spec: WindowJoinSpec, windows: Windows,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Windows]:
    """The batch's joined events (``_seq``, ``_ts``, ``_i`` and ``o<i>`` per selected
    attribute, in emission order) and the windows after it. ``frame`` holds the rows of
    both streams in ``_seq`` order, ``_side`` and the spec's columns."""
    kinds = dict(spec.columns)
    side = frame[SIDE].to_numpy(np.int64)
    rows = [np.flatnonzero(side == s) for s in (0, 1)]
    names = [[c for c in kinds if c.startswith(prefix)] for prefix in (LEFT, RIGHT)]
    events: list[dict[str, Values]] = []
    for s in (0, 1):
        kept = windows.columns[s]
        if not kept:
            kept = {c: Values(np.empty(0, dtype_of(kinds[c])), np.empty(0, bool))
                    for c in names[s]}
        events.append({c: concat(kept[c], column_values(frame[c].iloc[rows[s]], kinds[c]))
                       for c in names[s]})
    held = list(windows.sizes)
    totals = [held[s] + len(rows[s]) for s in (0, 1)]
    groups = key_groups(np.zeros(totals[0] + totals[1], np.int64),
                        [events[0][a] for a, _ in spec.keys],
                        [events[1][b] for _, b in spec.keys])
    group = [groups[:totals[0]], groups[totals[0]:]]
    # before[s][i]: how many of side s's events came before batch row i
    before = [held[s] + np.cumsum(side == s) - (side == s) for s in (0, 1)]
    found = [_matches(spec, s, rows, group, before, held, events) for s in (0, 1)]
    trigger = np.concatenate([f[0] for f in found])  # batch rows
    left_at = np.concatenate([held[0] + np.searchsorted(rows[0], found[0][0]), found[1][1]])
    right_at = np.concatenate([found[0][1], held[1] + np.searchsorted(rows[1], found[1][0])])
    partner = np.concatenate([found[0][1], found[1][1]])
    order = np.lexsort((partner, trigger))
    trigger, left_at, right_at = trigger[order], left_at[order], right_at[order]
    outputs = _outputs(spec, frame, trigger, (left_at, right_at), events)
    last = [np.arange(max(0, totals[s] - spec.lengths[s]), totals[s]) for s in (0, 1)]
    kept_windows = Windows([{c: take(v, last[s]) for c, v in events[s].items()}
                            for s in (0, 1)], [len(last[0]), len(last[1])])
    return outputs, kept_windows


def _matches(spec: WindowJoinSpec, trigger_side: int, rows: list[Array], group: list[Array],
             before: list[Array], held: list[int],
             events: list[dict[str, Values]]) -> tuple[Array, Array]:
    """(batch row of each triggering event, number of its partner in the other side's
    sequence) for every pair an event of ``trigger_side`` joins, residual included."""
    other = 1 - trigger_side
    triggers = rows[trigger_side]
    trigger_group = group[trigger_side][held[trigger_side] + np.arange(len(triggers))]
    count = before[other][triggers]
    width = np.int64(len(group[other]) + 1)
    order = np.argsort(group[other], kind="stable")  # by (group, number)
    keys = group[other][order] * width + order
    low = np.maximum(count - spec.lengths[other], 0)
    start = np.searchsorted(keys, trigger_group * width + low, side="left")
    stop = np.searchsorted(keys, trigger_group * width + count, side="left")
    sizes = np.where(trigger_group >= 0, stop - start, 0)
    which = np.repeat(np.arange(len(triggers)), sizes)
    offsets = np.arange(len(which)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    partner = order[start[which] + offsets]
    batch_rows = triggers[which]
    if spec.residual is not None and len(which):
        own = held[trigger_side] + which
        columns = {c: take(v, own) for c, v in events[trigger_side].items()}
        columns.update({c: take(v, partner) for c, v in events[other].items()})
        accepted = truthy(evaluate(spec.residual, columns, len(which)))
        batch_rows, partner = batch_rows[accepted], partner[accepted]
    return batch_rows, partner


def _outputs(spec: WindowJoinSpec, frame: pd.DataFrame, trigger: Array,
             at: tuple[Array, Array], events: list[dict[str, Values]]) -> pd.DataFrame:
    sides = [0 if o.side == LEFT else 1 for o in spec.selected]
    return output_frame(frame[SEQ].to_numpy(np.int64), frame[TS].to_numpy(np.int64), trigger,
                        [(take(events[s][o.column], at[s]), o.type)
                         for s, o in zip(sides, spec.selected)])
