"""The Spark operator step of a group whose only state is its aggregations, vectorised.

When no per-event query runs in the group (every query, if any, runs natively in Spark),
the runtime's only work is adding input events to aggregations and answering on-demand
queries. :func:`make_aggregation_step` does that a column batch at a time
(:mod:`.vectorised`) instead of an event at a time: a micro-batch is cut at its on-demand
queries and heartbeats, each stretch in between is added to every aggregation that reads
its streams, and each query or heartbeat is then run by the ordinary runtime at its place
(:func:`eddy.engine.operator.run_batch`), against the same state it would see event by
event. State, snapshots and outputs are the runtime's, so a group can move between this
step and :func:`eddy.engine.operator.make_step` across a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from eddy.engine.layout import SEQ, STREAM, TS, InputLayout
from eddy.engine.operator import StepFunction, run_batch, runtime_for, to_events, to_frame
from eddy.engine.runtime.aggregation.runtime import AggregationRuntime
from eddy.engine.runtime.aggregation.vectorised import columns_apply
from eddy.engine.runtime.group import Runtime
from eddy.engine.runtime.model import OutputEvent
from eddy.gcpause import gc_paused
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo

__all__ = ["aggregations_only", "make_aggregation_step"]


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
                pdf = pd.concat(parts, ignore_index=True).sort_values(SEQ, kind="stable",
                                                                      ignore_index=True)
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
