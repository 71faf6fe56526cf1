"""Aggregates over a window join's events: ``count()``, ``avg`` and ``sum`` per ``group by``.

The reference's join hands each event its windows emit to the selector as a chunk of its
own: the event joined with what the other window holds (an arrival's current joins, or the
expired joins of the event its length window pushes out, which leave the aggregates). The
selector takes every chunk as a batch: each joined event adds its values to (or, expired,
removes them from) its group's running sums, and per group, in order of the group's first
selected event, the chunk's last selected event goes out with the group's aggregates right
after it (:mod:`eddy.runtime.selector`; selected: current events for ``insert into``,
expired for ``insert expired events``, either for ``insert all events``).

So :func:`.matching.process` emits every joined event of the micro-batch in emission order,
expired ones too; a chunk is a run of them with one input row and one kind (without a self
join an input row's expired chunk and current chunk are its only ones); the running sums are
the window aggregate's (:func:`~eddy.engine.operators.window_aggregates.sliding_time.
apply_signed`: sequential per group, as the runtime adds), and the outputs are numbered
within their input row, as the runtime numbers the emissions of one input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eddy.engine.operators.columnar_expressions import EXPIRED, POSITION
from eddy.engine.operators.window_aggregates.emitted import Emitted
from eddy.engine.operators.window_aggregates.sliding_time import (
    SlidingState,
    apply_signed,
    group_codes,
    grow,
)
from eddy.engine.operators.window_aggregates.spark import output_columns
from eddy.engine.operators.window_join import matching
from eddy.engine.operators.window_join.plan import JoinAggregation, WindowJoinSpec
from eddy.engine.spark.row_layout import SEQ, TS


@dataclass
class Aggregated:
    """The join's windows and the running aggregates per group (what Spark checkpoints)."""

    windows: matching.Windows = field(default_factory=matching.Windows)
    totals: SlidingState = field(default_factory=SlidingState)


def process(spec: WindowJoinSpec, state: Aggregated,
            frame: pd.DataFrame) -> tuple[pd.DataFrame, Aggregated]:
    """The batch's outputs (``_seq``, ``_ts``, ``_i``, (``_x``,) ``o<i>``) and the state
    after it; ``frame`` as :func:`.matching.process` reads it."""
    aggregation = spec.aggregation
    assert aggregation is not None, "a join without aggregates emits its joins"
    joined, state.windows = matching.process(spec, state.windows, frame)
    totals, width = state.totals, len(aggregation.arguments)
    if totals.sums is None:
        totals.sums, totals.counts = np.empty((0, width)), np.empty((0, width), np.int64)
    n = len(joined)
    column = {selected.name: joined[f"o{i}"] for i, selected in enumerate(spec.selected)}
    codes = group_codes(totals, [column[c].to_numpy() for c in aggregation.groups], n)
    grow(totals, len(totals.keys[0]) if aggregation.groups else 1, width)
    expired = joined[EXPIRED].to_numpy(bool)
    values = np.stack([column[c].to_numpy(np.float64, na_value=np.nan)
                       for c in aggregation.arguments], axis=1) if width else \
        np.empty((n, 0))
    order = np.lexsort((np.arange(n), codes))
    sums, counts, sizes = apply_signed(totals, codes, order, np.where(expired, -1.0, 1.0),
                                       values, width)
    seq = joined[SEQ].to_numpy(np.int64)
    chosen, position = _chosen(aggregation, seq, expired, codes)
    emitted = Emitted(chosen, joined[TS].to_numpy(np.int64)[chosen], position, sums[chosen],
                      counts[chosen], sizes[chosen],
                      {name: series.to_numpy()[chosen] for name, series in column.items()},
                      expired[chosen])
    out: dict[str, object] = {SEQ: seq[chosen], TS: emitted.ts,
                              POSITION: position.astype(np.int32)}
    if aggregation.events != "current":
        out[EXPIRED] = emitted.expired
    out.update(output_columns(aggregation.outputs, emitted))
    return pd.DataFrame(out), state


def _chosen(aggregation: JoinAggregation, seq: np.ndarray, expired: np.ndarray,
            codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The joined events that go out, in emission order, and their positions among their
    input row's outputs: per chunk and group the last selected event, groups in order of
    their first selected event."""
    selected = np.flatnonzero(np.where(expired, aggregation.events in ("expired", "all"),
                                       aggregation.events in ("current", "all")))
    if not len(selected):
        return selected, selected
    boundary = np.r_[True, (seq[1:] != seq[:-1]) | (expired[1:] != expired[:-1])]
    chunk = np.cumsum(boundary)[selected]
    group = codes[selected]
    by_group = np.lexsort((selected, group, chunk))
    keys = np.c_[chunk[by_group], group[by_group]]
    starts = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    ends = np.r_[starts[1:], len(by_group)] - 1
    first, last = selected[by_group[starts]], selected[by_group[ends]]
    ranked = np.lexsort((first, chunk[by_group[starts]]))
    chosen = last[ranked]
    rows = seq[chosen]
    return chosen, np.arange(len(chosen)) - np.searchsorted(rows, rows, "left")
