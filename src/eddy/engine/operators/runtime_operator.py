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
import json
import math
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from typing import Any

import pandas as pd

from eddy.engine.spark.row_layout import (
    SEQ,
    STORE_STREAM,
    STREAM,
    TICK_STREAM,
    TS,
    InputLayout,
    encode_rows,
)
from eddy.gcpause import gc_paused
from eddy.lang.ast import AttrType
from eddy.runtime.model import GroupRuntime, InputEvent, OutputEvent

_runtimes: dict[str, tuple[GroupRuntime, bytes]] = {}


def runtime_for(app_text: str, query_ids: Sequence[str] | None) -> tuple[GroupRuntime, bytes]:
    """The process's runtime for this app and query set, and its pristine state."""
    chosen = "*" if query_ids is None else ",".join(query_ids)
    key = hashlib.sha256(f"{app_text}\0{chosen}".encode()).hexdigest()
    cached = _runtimes.get(key)
    if cached is None:
        from eddy.lang import check
        from eddy.runtime.group import build_runtime

        runtime = build_runtime(check(app_text), None if query_ids is None else list(query_ids))
        cached = _runtimes[key] = (runtime, runtime.snapshot())
    return cached


_NATIVE_KINDS = {AttrType.INT: "iu", AttrType.LONG: "iu", AttrType.FLOAT: "f",
                 AttrType.DOUBLE: "f", AttrType.BOOL: "b"}


def _values(series: pd.Series, attr_type: AttrType) -> list[Any]:
    """A column as Python values: pandas turns nullable ints into floats with NaN, and a
    null double arrives as NaN; both become None (a column without any costs no per-cell
    check)."""
    values: list[Any] = series.tolist()
    if series.dtype.kind in _NATIVE_KINDS.get(attr_type, "") and not series.hasnans:
        return values  # already Python ints, floats or bools
    if attr_type in (AttrType.INT, AttrType.LONG):
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)
                for v in values]
    if attr_type in (AttrType.FLOAT, AttrType.DOUBLE):
        return [None if v is None or v != v else float(v) for v in values]
    if attr_type is AttrType.BOOL:
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v)
                for v in values]
    if attr_type is AttrType.OBJECT:  # JSON text in the columns; the runtime wants values
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else json.loads(v)
                for v in values]
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v
            for v in values]


def to_events(pdf: pd.DataFrame, layout: InputLayout) -> list[InputEvent]:
    """Rows of the wide layout as runtime events, in ``_seq`` order.

    ``_stream`` is the stream's name or its position in ``layout`` (the compact form the
    group's plan sends; heartbeats are the attribute-less :data:`TICK_STREAM`); only the
    columns of streams that occur need to be present. Column
    at a time: each column becomes a Python list once, and the events are zipped from those
    lists, so a row costs no pandas indexing.
    """
    if pdf.empty:
        return []
    streams = pdf[STREAM].to_numpy()
    coded = streams.dtype.kind in "iu"
    events: list[InputEvent] = []
    runs = 0
    for index, (stream, attributes) in enumerate(layout.streams):
        tag = index if coded else stream
        if streams[0] == tag and (streams == tag).all():
            rows = pdf
        else:
            mask = streams == tag
            if not mask.any():
                continue
            rows = pdf[mask]
        columns = [_values(rows[c], a.type)
                   for c, a in zip(layout.columns(stream), attributes)]
        data = zip(*columns) if columns else repeat((), len(rows))
        events += map(InputEvent, rows[SEQ].tolist(), rows[TS].tolist(), repeat(stream), data)
        runs += 1
        if len(rows) == len(pdf):
            break
    if runs > 1 or not pdf[SEQ].is_monotonic_increasing:
        events.sort(key=_by_seq)  # a merge of sorted runs for timsort
    return events


def _by_seq(event: InputEvent) -> int:
    return event.seq


def run_batch(runtime: GroupRuntime, events: list[InputEvent]) -> list[OutputEvent]:
    """Processes events in order; on-demand queries answer against the state at their place,
    heartbeats fire the timers due by their time."""
    outputs: list[OutputEvent] = []
    pending: list[InputEvent] = []
    for event in events:
        if event.stream != STORE_STREAM and event.stream != TICK_STREAM:
            pending.append(event)
            continue
        if pending:
            outputs += runtime.process(pending)
            pending = []
        if event.stream == TICK_STREAM:  # live mode's heartbeat: the wall clock moved
            outputs += runtime.advance(event.ts, event.seq)
        else:
            outputs += answer_store_query(runtime, event)
    if pending:
        outputs += runtime.process(pending)
    return outputs


STORE_ANSWERED = "__answered__"
STORE_FAILED = "__failed__"
"""``_target`` of the row closing an on-demand query's answer (data: the query text) or
reporting its failure (data: the query text and the error)."""


def answer_store_query(runtime: GroupRuntime, event: InputEvent) -> list[OutputEvent]:
    """An on-demand query's rows (``_target`` null), then the row that closes the answer.

    The closing row tells a caller waiting for the answer that it is complete even when it
    has no rows. A query that fails only when it runs (a bad ``within`` value) fails alone:
    failing the micro-batch would fail it again on every restart from the checkpoint.
    """
    text = str(event.data[0])
    try:
        rows = runtime.store_query(text)
    except Exception as error:  # noqa: BLE001 - reported to the caller, see above
        return [OutputEvent(event.seq, (0,), event.ts, STORE_STREAM, STORE_FAILED,
                            (text, f"{type(error).__name__}: {error}"))]
    outputs = [OutputEvent(event.seq, (i,), event.ts, STORE_STREAM, None, tuple(row))
               for i, row in enumerate(rows)]
    outputs.append(OutputEvent(event.seq, (len(rows),), event.ts, STORE_STREAM, STORE_ANSWERED,
                               (text,)))
    return outputs


def _run_with_stores(runtime: GroupRuntime, events: list[InputEvent], key: Any,
                     runtime_id: str) -> list[OutputEvent]:
    """:func:`run_batch`; with ``@store`` tables in one database transaction per batch, so
    that a replayed batch is not applied twice (:mod:`eddy.runtime.stored_batch`, imported only
    for apps that have such tables)."""
    tables = getattr(runtime, "tables", {})
    if not any(table.external for table in tables.values()):
        return run_batch(runtime, events)
    from eddy.runtime.stored_batch import run_stored_batch

    return run_stored_batch(runtime, events, key, run_batch, runtime_id, batch_identity())


def batch_identity() -> tuple[str, int] | None:
    """``(query id, batch id)`` of the Spark streaming micro-batch this task runs, or None.

    Spark passes them to every task as local properties (``sql.streaming.queryId``, stable
    across restarts from one checkpoint, and ``streaming.sql.batchId``)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return None
    query = context.getLocalProperty("sql.streaming.queryId")
    batch = context.getLocalProperty("streaming.sql.batchId")
    if not query or batch is None:
        return None
    return query, int(batch)


def to_frame(outputs: Sequence[OutputEvent]) -> pd.DataFrame:
    """Outputs as rows of :data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`, a column at a
    time."""
    return pd.DataFrame({
        "_seq": [o.seq for o in outputs], "_order": [o.order for o in outputs],
        "_ts": [o.ts for o in outputs], "_query": [o.query for o in outputs],
        "_target": [o.target for o in outputs], "_expired": [o.expired for o in outputs],
        "_data": encode_rows([o.data for o in outputs]),
    })


StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]


def make_step(app_text: str, query_ids: Sequence[str] | None,
              layout: InputLayout) -> StepFunction:
    """The function for ``applyInPandasWithState``: one call per state key and micro-batch."""
    ids = None if query_ids is None else tuple(query_ids)
    runtime_id = hashlib.sha256(f"{app_text}\0{ids}".encode()).hexdigest()

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        runtime, pristine = runtime_for(app_text, ids)
        with gc_paused():
            runtime.restore(state.get[0] if state.exists else pristine)
            events: list[InputEvent] = []
            for pdf in frames:
                events += to_events(pdf, layout)
            events.sort(key=_by_seq)  # frames arrive in no particular order
            outputs = _run_with_stores(runtime, events, key, runtime_id)
            state.update((runtime.snapshot(),))
            frame = to_frame(outputs)
        yield frame

    return step


