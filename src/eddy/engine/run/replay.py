"""``eddy.replay``: run an app over a bounded, timestamped input on Spark.

Replay is not a separate interpreter: it compiles the app exactly as a live run does and
feeds it from a bounded streaming source, optionally cut into micro-batches of
``batch_size`` events, so tests can show that the cut does not change the output. The
input and output format is that of the conformance cases (``../shared/conformance``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import StructType

from eddy.engine.compile.app_check import check_app
from eddy.engine.compile.group_query import compile_group
from eddy.engine.operators.runtime_operator import STORE_FAILED
from eddy.engine.spark.row_layout import (
    STORE_STREAM,
    InputLayout,
    decode_data,
    input_layout,
    row_values,
)
from eddy.engine.spark.session import get_spark
from eddy.engine.spark.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang import AnalyzedApp
from eddy.lang.variables import substitute

Event = dict[str, Any]


@dataclass
class ReplayResult:
    """What an app emitted: per stream, per named query, and per on-demand query."""

    streams: dict[str, list[Event]] = field(default_factory=dict)
    queries: dict[str, list[Event]] = field(default_factory=dict)
    store: list[list[list[Any]]] = field(default_factory=list)


def _events(inputs: Sequence[Mapping[str, Any]],
            layout: InputLayout) -> list[tuple[int, int, str, Sequence[Any]]]:
    known = {name for name, _ in layout.streams}
    events: list[tuple[int, int, str, Sequence[Any]]] = []
    clock = 0
    for seq, item in enumerate(inputs):
        if "store_query" in item:
            events.append((seq, clock, STORE_STREAM, [item["store_query"]]))
            continue
        missing = [key for key in ("stream", "data", "timestamp") if key not in item]
        if missing:
            raise ValueError(f"input {seq}: an event needs 'stream', 'data' and 'timestamp' "
                             f"(milliseconds); it has no {', '.join(map(repr, missing))}")
        stream = item["stream"]
        if stream not in known:
            raise ValueError(f"input {seq}: stream '{stream}' is not an input stream of the app")
        width = len(layout.attributes(stream))
        data = list(item["data"])
        if len(data) != width:
            raise ValueError(f"input {seq}: stream '{stream}' has {width} attributes, the event "
                             f"has {len(data)} values")
        try:
            clock = int(item["timestamp"])
        except (TypeError, ValueError):
            raise ValueError(f"input {seq}: 'timestamp' must be a number of milliseconds, not "
                             f"{item['timestamp']!r}") from None
        events.append((seq, clock, stream, data))
    return events


def source_schema(layout: InputLayout) -> StructType:
    """The columns replay reads: the worker's
    (:class:`~eddy.engine.spark.bus_source.BusDataSource`), no ``_clock``, so that replay builds
    the physical plan a worker runs; and replay, like a worker, may take on-demand queries
    (``compile_group``'s default)."""
    return layout.spark_schema()


def replay(app_text: str, inputs: Sequence[Mapping[str, Any]], *, batch_size: int = 0,
           spark: SparkSession | None = None) -> ReplayResult:
    """Runs ``app_text`` over ``inputs`` (conformance case format); ``batch_size`` 0 = all.

    Raises :class:`~eddy.lang.errors.SiddhiAppError` for an invalid app and ``ValueError``
    for inputs that do not fit it.
    """
    app_text = substitute(app_text)  # ${NAME} variables, from the environment
    analyzed, _ = check_app(app_text)
    layout = input_layout(analyzed)
    events = _events(inputs, layout)
    spark = spark or get_spark()
    register_sources(spark)
    rows: list[Row] = []

    def collect(frame: DataFrame, batch_id: int) -> None:
        rows.extend(frame.collect())

    with tempfile.TemporaryDirectory(prefix="eddy-replay-") as work:
        spool = Path(work) / "spool"
        spool.mkdir()
        if events:
            append_chunk(spool, layout.to_arrow(events))
        source = (spark.readStream.format(FORMAT).schema(source_schema(layout))
                  .option("path", str(spool)).option("maxRowsPerBatch", str(batch_size)).load())
        outputs = compile_group(app_text, source, layout)
        query = (outputs.writeStream.foreachBatch(collect)
                 .option("checkpointLocation", str(Path(work) / "checkpoint"))
                 .queryName(f"replay-{id(rows)}").start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        if query.exception() is not None:
            raise RuntimeError(f"replay failed: {query.exception()}")
    return _result(analyzed, inputs, rows)


def _result(analyzed: AnalyzedApp, inputs: Sequence[Mapping[str, Any]],
            rows: list[Row]) -> ReplayResult:
    result = ReplayResult()
    for info in analyzed.queries:
        if info.target_kind == "stream" and info.target:
            result.streams.setdefault(info.target, [])
        if info.partition is None and info.query.name:
            result.queries.setdefault(info.query.name, [])
    store_seqs = [i for i, item in enumerate(inputs) if "store_query" in item]
    store: dict[int, list[list[Any]]] = {seq: [] for seq in store_seqs}
    kinds = {info.id: info.target_kind for info in analyzed.queries}
    outputs = {info.id: info.outputs for info in analyzed.queries}
    named = {info.id for info in analyzed.queries if info.partition is None and info.query.name}
    for row in sorted(rows, key=lambda r: (r["_seq"], list(r["_order"]))):
        if row["_query"] == STORE_STREAM:
            data = decode_data(row["_data"])
            if row["_target"] == STORE_FAILED:
                raise RuntimeError(f"replay failed: the store query at input {row['_seq']} "
                                   f"failed: {data[1]}")
            if row["_target"] is None:  # not the row closing the answer
                store[row["_seq"]].append(data)
            continue
        event = {"timestamp": row["_ts"], "data": row_values(row, outputs.get(row["_query"], ())),
                 "expired": bool(row["_expired"])}
        if row["_query"] in named:
            result.queries[row["_query"]].append(event)
        if kinds.get(row["_query"]) == "stream" and row["_target"] in result.streams:
            result.streams[row["_target"]].append({**event, "expired": False})
    result.store = [store[seq] for seq in store_seqs]
    return result
