"""The Spark operator step of a group whose only state is its aggregations, vectorised.

When no per-event query runs in the group (every query, if any, runs natively in Spark),
the runtime's only work is adding input events to aggregations and answering on-demand
queries. :func:`make_aggregation_step` does that a column batch at a time
(:mod:`eddy.runtime.aggregation.vectorised`) instead of an event at a time: a micro-batch is cut at its on-demand
queries and heartbeats, each stretch in between is added to every aggregation that reads
its streams, and each query or heartbeat is then run by the ordinary runtime at its place
(:func:`eddy.engine.operators.runtime_operator.run_batch`), against the same state it would see
event by event. State, snapshots and outputs are the runtime's, so a group can move between this
step and :func:`eddy.engine.operators.runtime_operator.make_step` across a restart.

Split by group (:func:`aggregation_split`). On one state key every input row of the group
crosses Spark's shuffle into one partition, is sorted there and crosses into Python on one
core. When the group takes no on-demand query (the caller says so: ``compile_group(...,
on_demand=False)``), its aggregations read one stream, ``group by`` the same attributes
and keep their rows in an RDBMS (``@store(type='rdbms', …)``), and the source supplies each
row's stream clock (:data:`~eddy.engine.spark.row_layout.CLOCK`), the rows are instead keyed by a
hash bucket of the ``group by`` values, so the buckets run on every core. That gives the
same table rows as one key, batch end by batch end:

- the rows of a group (every granularity, every event-time and arrival bucket) are only
  ever written from its own bucket, from that group's events in ``_seq`` order, so their
  values are computed from the same events in the same order and the same arrival runs;
- a row's arrival bucket (``AGG_TIMESTAMP``) comes from the stream's clock, which each row
  carries in place of its ``_ts`` (the running maximum of ``_ts`` is what the aggregation
  takes as its arrival time; a bucket's own maximum would fall behind the stream's
  whenever timestamps go back);
- a bucket closes a row when *its* clock passes the row's arrival bucket, possibly later
  than one key would, but closing only drops a row from memory: it was written at the end
  of every batch that changed it, with the same absolute values;
- every batch end writes, per bucket, the rows its groups changed: together, the rows one
  key writes (``@purge`` deletes by the wall clock, from any bucket, as from one key).

What is not the same is a read at a place in the input: an on-demand query in the middle
of a micro-batch would see the other buckets' rows as of the previous batch end, so a
group that may take on-demand queries stays on one key. (Making those exact needs the
buckets' views at the query's place combined after the buckets ran; not done.) The state
is keyed by the buckets, so a checkpoint must be resumed by the same plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.operators.runtime_operator import (
    StepFunction,
    run_batch,
    runtime_for,
    to_events,
    to_frame,
)
from eddy.engine.operators.state_keys import hash_bucket
from eddy.engine.spark.row_layout import CLOCK, SEQ, STREAM, TS, InputLayout
from eddy.gcpause import gc_paused
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical import StateKey
from eddy.runtime.aggregation.runtime import AggregationRuntime
from eddy.runtime.aggregation.vectorised import columns_apply
from eddy.runtime.group import Runtime
from eddy.runtime.model import OutputEvent

__all__ = ["AggregationSplit", "aggregation_split", "aggregations_only",
           "make_aggregation_step"]


def aggregations_only(analyzed: AnalyzedApp, rest: list[QueryInfo]) -> bool:
    """Whether a group whose per-event queries are ``rest`` can use the vectorised step."""
    aggregations = [info.definition for info in analyzed.streams.values()
                    if isinstance(info.definition, ast.AggregationDefinition)]
    if rest or not aggregations:
        return False
    for definition in aggregations:
        assert definition.input is not None
        if not columns_apply(definition, analyzed.streams[definition.input.stream].attributes):
            return False
    return True


@dataclass(frozen=True)
class AggregationSplit:
    """The operator's input and state key when it runs split by group (module docstring)."""

    source: DataFrame
    """The group's input, each row's ``_ts`` replaced by its stream's clock."""
    streams: set[str]
    """The streams the operator reads: the aggregations' input only (no on-demand queries,
    and no heartbeats, which move no clock of a split aggregation)."""
    key: Column
    """The hash bucket of the ``group by`` values, over the runtime input's columns."""


def aggregation_split(key: StateKey, source: DataFrame,
                      layout: InputLayout) -> AggregationSplit:
    """How the vectorised step runs split by group, given the key the physical planner chose
    for it (:mod:`eddy.plan.physical.rules.runtime` says when, and the module docstring
    why that is exact)."""
    ((stream, _), *_rest) = key.attributes
    names = [a.name for a in layout.attributes(stream)]
    columns = [F.col(layout.columns(stream)[names.index(name)]) for _, name in key.attributes]
    return AggregationSplit(source.withColumn(TS, F.col(CLOCK)), {stream},
                            hash_bucket(columns, key.buckets, source.sparkSession))


def make_aggregation_step(app_text: str, layout: InputLayout) -> StepFunction:
    """The function for ``applyInPandasWithState`` (rows coded as the runtime's input)."""
    codes = {name: i for i, (name, _) in enumerate(layout.streams)}

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        runtime, pristine = runtime_for(app_text, ())
        assert isinstance(runtime, Runtime)
        with gc_paused():
            runtime.restore(state.get[0] if state.exists else pristine)
            parts = [frame for frame in frames if not frame.empty]
            outputs: list[OutputEvent] = []
            if parts:
                pdf = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
                if not pdf[SEQ].is_monotonic_increasing:  # Spark keeps the order mostly
                    pdf = pdf.sort_values(SEQ, kind="stable", ignore_index=True)
                outputs = _run(runtime, pdf, layout, codes)
            state.update((runtime.snapshot(),))
            frame = to_frame(outputs)
        yield frame

    return step


def _run(runtime: Runtime, pdf: pd.DataFrame, layout: InputLayout,
         codes: dict[str, int]) -> list[OutputEvent]:
    readers: dict[int, list[AggregationRuntime]] = {}
    for aggregation in runtime.aggregations.values():
        readers.setdefault(codes[aggregation.input], []).append(aggregation)
    streams = pdf[STREAM].to_numpy()
    if streams.dtype.kind not in "iu":  # names, not positions
        streams = np.asarray([codes.get(s, -1) for s in streams], dtype=np.int64)
    cuts = np.flatnonzero(~np.isin(streams, list(readers))).tolist()
    outputs: list[OutputEvent] = []
    start = 0
    for cut in [*cuts, len(pdf)]:
        if cut > start:
            _add(readers, pdf.iloc[start:cut], streams[start:cut], layout)
            last = pdf.iloc[cut - 1]
            outputs += runtime.advance(int(pdf[TS].iloc[start:cut].max()), int(last[SEQ]))
        if cut < len(pdf):
            outputs += run_batch(runtime, to_events(pdf.iloc[cut:cut + 1], layout))
        start = cut + 1
    return outputs


def _add(readers: dict[int, list[AggregationRuntime]], rows: pd.DataFrame,
         streams: Any, layout: InputLayout) -> None:
    for code, aggregations in readers.items():
        mask = streams == code
        if not mask.any():
            continue
        chosen = rows if mask.all() else rows[mask]
        name = layout.streams[code][0]
        columns = [chosen[c].to_numpy() for c in layout.columns(name)]
        ts = chosen[TS].to_numpy()
        for aggregation in aggregations:
            aggregation.add_columns(ts, columns)
