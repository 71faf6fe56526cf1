"""The Spark stateful operator that hosts eddy's per-event runtime.

Spark groups a micro-batch's rows by state key and calls :func:`make_step`'s function once
per key with the key's rows and its state; the runtime restores its state, processes the
rows in ``_seq`` order, and stores its state back. Spark checkpoints that state, so a query
restarted from its checkpoint resumes exactly where it stopped.

The function runs in Spark's Python worker processes. It receives the app text, not
objects, and builds the runtime there once per process (building compiles every expression;
restoring a snapshot per micro-batch is cheap by comparison).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pandas as pd

from eddy.engine.layout import SEQ, STORE_STREAM, STREAM, TS, InputLayout, encode_data
from eddy.engine.runtime.model import GroupRuntime, InputEvent, OutputEvent
from eddy.lang.ast import AttrType

_runtimes: dict[str, tuple[GroupRuntime, bytes]] = {}


def runtime_for(app_text: str, query_ids: Sequence[str] | None) -> tuple[GroupRuntime, bytes]:
    """The process's runtime for this app and query set, and its pristine state."""
    chosen = "*" if query_ids is None else ",".join(query_ids)
    key = hashlib.sha256(f"{app_text}\0{chosen}".encode()).hexdigest()
    cached = _runtimes.get(key)
    if cached is None:
        from eddy.engine.runtime.group import build_runtime
        from eddy.lang import check

        runtime = build_runtime(check(app_text), None if query_ids is None else list(query_ids))
        cached = _runtimes[key] = (runtime, runtime.snapshot())
    return cached


def _values(series: pd.Series, attr_type: AttrType) -> list[Any]:
    """A column as Python values: pandas turns nullable ints into floats with NaN."""
    values: list[Any] = series.tolist()
    if attr_type in (AttrType.INT, AttrType.LONG):
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)
                for v in values]
    if attr_type in (AttrType.FLOAT, AttrType.DOUBLE):
        return [None if v is None or v != v else float(v) for v in values]
    if attr_type is AttrType.BOOL:
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v)
                for v in values]
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v
            for v in values]


def to_events(pdf: pd.DataFrame, layout: InputLayout) -> list[InputEvent]:
    """Rows of the wide layout as runtime events, in ``_seq`` order."""
    events: list[InputEvent] = []
    for stream, attributes in layout.streams:
        rows = pdf[pdf[STREAM] == stream]
        if rows.empty:
            continue
        columns = [_values(rows[c], a.type)
                   for c, a in zip(layout.columns(stream), attributes)]
        for i, (seq, ts) in enumerate(zip(rows[SEQ].tolist(), rows[TS].tolist())):
            events.append(InputEvent(int(seq), int(ts), stream, tuple(c[i] for c in columns)))
    events.sort(key=lambda e: e.seq)
    return events


def run_batch(runtime: GroupRuntime, events: list[InputEvent]) -> list[OutputEvent]:
    """Processes events in order; on-demand queries answer against the state at their place."""
    outputs: list[OutputEvent] = []
    pending: list[InputEvent] = []
    for event in events:
        if event.stream != STORE_STREAM:
            pending.append(event)
            continue
        if pending:
            outputs += runtime.process(pending)
            pending = []
        rows = runtime.store_query(str(event.data[0]))
        outputs += [OutputEvent(event.seq, (i,), event.ts, STORE_STREAM, None, tuple(row))
                    for i, row in enumerate(rows)]
    if pending:
        outputs += runtime.process(pending)
    return outputs


def to_frame(outputs: Sequence[OutputEvent]) -> pd.DataFrame:
    return pd.DataFrame({
        "_seq": [o.seq for o in outputs], "_order": [list(o.order) for o in outputs],
        "_ts": [o.ts for o in outputs], "_query": [o.query for o in outputs],
        "_target": [o.target for o in outputs], "_expired": [o.expired for o in outputs],
        "_data": [encode_data(o.data) for o in outputs],
    })


StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]


def make_step(app_text: str, query_ids: Sequence[str] | None,
              layout: InputLayout) -> StepFunction:
    """The function for ``applyInPandasWithState``: one call per state key and micro-batch."""
    ids = None if query_ids is None else tuple(query_ids)

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        runtime, pristine = runtime_for(app_text, ids)
        runtime.restore(state.get[0] if state.exists else pristine)
        events: list[InputEvent] = []
        for pdf in frames:
            events += to_events(pdf, layout)
        events.sort(key=lambda e: e.seq)
        outputs = run_batch(runtime, events)
        state.update((runtime.snapshot(),))
        yield to_frame(outputs)

    return step
