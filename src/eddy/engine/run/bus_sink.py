"""Writing a group's output rows to the bus: one topic per output stream, exactly once.

The group's outputs leave Spark as one stream of tagged rows
(:data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`); :class:`BusSink` routes each row of a
query that inserts into a stream to that stream's topic, with its values (value slots or
``_data``, :mod:`.output_rows`) as the stream's typed attributes.

**Why foreachBatch, not a DataSourceStreamWriter.** Exactly-once on the bus needs an
idempotency key that is the same when Spark replays a micro-batch: ``(producer, batch id)``.
A stream writer's ``write()`` runs per partition in an executor and is never told the batch
id (only the driver-side ``commit`` is), and partitions would append separately, so a
topic's events of one batch would interleave in whatever order the tasks finished.
``foreachBatch`` gets the batch id, sees the whole batch, can sort it into the group's
order — ``(_seq, _order)``, the cause of each output (DESIGN.md §3) — and appends it per
topic in one call, which the bus stores atomically per (producer, batch id). It runs in the
driver process, where sink callbacks (log, HTTP, …) live too. The cost is moving outputs
through the driver; a group's outputs are usually far fewer than its inputs.

**Idempotency.** ``producer`` is ``<app>/<group>/<Spark query id>``; the query id persists in
the checkpoint, so it names exactly the lifetime over which batch ids are meaningful (a new
checkpoint restarts batch ids at 0 and gets a new query id). A batch replayed after a crash
— same id, same offsets, same state, hence the same rows — is appended again under the same
key and the bus drops it (SQLite: for as long as the batch is retained; NATS: within the
stream's duplicate window). Callbacks given ``on_output`` see a replayed batch again: they
are at-least-once unless they deduplicate by batch id themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.bus import Bus
from eddy.bus import TS as BUS_TS
from eddy.engine.run.output_rows import order_keys, ordered, output_values
from eddy.engine.run.store_requests import StoreAnswer, answers
from eddy.engine.spark.row_layout import (
    DATA,
    QUERY,
    STORE_STREAM,
    TARGET,
    TS,
    value_slots,
)
from eddy.lang.ast import Attribute

OutputCallback = Callable[[int, Mapping[str, pa.Table]], None]
"""Called with the batch id and, per output stream with events, what was appended."""
BatchHook = Callable[[int], None]
"""Called with the batch id when the batch starts, before it is computed (which is when
``@store`` tables and aggregations write, in the tasks) and before any output is appended;
what it raises fails the batch with nothing written (minimum HA fences a stale active so,
and mirrors the checkpoint there: the offsets of the batch whose writes may follow)."""
AnswersCallback = Callable[[list[StoreAnswer]], None]
"""Called with the answers to on-demand queries a batch ran (see :mod:`.store_requests`)."""

@dataclass(frozen=True)
class OutputStream:
    """An output stream of the group and the topic its events go to."""

    stream: str
    topic: str
    attributes: tuple[Attribute, ...]


@dataclass
class SinkStats:
    """What the sink wrote so far (driver-side counters; at-least-once: a batch replayed
    after a restart is counted again).

    ``events`` counts per output stream what reached its topic; ``query_events`` counts per
    query id every row the query emitted (into a stream, a table, a window), the figure of
    the query's events-out metric; ``failed_queries`` counts on-demand queries that failed
    while running.
    """

    batches: int = 0
    last_batch_id: int | None = None
    events: dict[str, int] = field(default_factory=dict)
    query_events: dict[str, int] = field(default_factory=dict)
    failed_queries: int = 0


class BusSink:
    """A ``foreachBatch`` function appending a group's stream outputs to their topics.

    ``queries`` maps the id of every query that inserts into a stream to that stream; rows
    of other queries (tables, windows) are not the bus's business, and the answers to
    on-demand queries go to ``on_answers``. Every query's rows are counted
    (:attr:`SinkStats.query_events`).
    Call :meth:`bind` with the started query's id before (or while) the first batch runs.
    """

    def __init__(self, bus: Bus, outputs: Sequence[OutputStream], queries: Mapping[str, str],
                 producer_prefix: str, *, on_output: OutputCallback | None = None,
                 on_answers: AnswersCallback | None = None,
                 stats: SinkStats | None = None, bind_timeout_s: float = 60.0,
                 before_write: BatchHook | None = None) -> None:
        self.bus = bus
        self.outputs = {o.stream: o for o in outputs}
        unknown = sorted(set(queries.values()) - set(self.outputs))
        if unknown:
            raise ValueError(f"queries insert into {', '.join(unknown)}, which have no topic")
        self.queries = dict(queries)
        position = {stream: i for i, stream in enumerate(self.outputs)}
        self._stream_of_query = {q: position[s] for q, s in self.queries.items()}
        self.query_names: tuple[str, ...] = (*sorted(self.queries), STORE_STREAM)
        """The queries whose rows reach the sink with their name as a number
        (:func:`sink_rows`); any other query's rows carry it as text."""
        self.producer_prefix = producer_prefix
        self.on_output = on_output
        self.on_answers = on_answers
        self.before_write = before_write
        self.stats = stats if stats is not None else SinkStats()
        self._producer: str | None = None
        self._bound = threading.Event()
        self._bind_timeout_s = bind_timeout_s

    def bind(self, query_id: str) -> None:
        """Sets the producer to ``<prefix>/<query_id>``: the Spark query id, which the
        checkpoint keeps across restarts."""
        self._producer = f"{self.producer_prefix}/{query_id}"
        self._bound.set()

    @property
    def producer(self) -> str:
        """The producer name appends carry; waits (bounded) for :meth:`bind`."""
        if not self._bound.wait(self._bind_timeout_s) or self._producer is None:
            raise RuntimeError("BusSink.bind() was not called with the query id; appends "
                               "without a stable producer would not be idempotent")
        return self._producer

    def __call__(self, frame: DataFrame, batch_id: int) -> None:
        """Writes one micro-batch (all of it: a stateful batch must be consumed whole)."""
        if self.before_write is not None:  # before computing: see BatchHook
            self.before_write(batch_id)
        rows = named_queries(frame.toArrow(), self.query_names)
        tables = self.tables(rows)
        producer = self.producer
        for stream in sorted(tables):
            self.bus.append(self.outputs[stream].topic, tables[stream], producer=producer,
                            batch_id=batch_id)
        self.count(rows, tables)
        self.stats.batches += 1
        self.stats.last_batch_id = batch_id
        if self.on_output is not None:
            self.on_output(batch_id, tables)
        if self.on_answers is not None and rows.num_rows:
            found = answers(rows)
            if found:
                self.stats.failed_queries += sum(a.error is not None for a in found)
                self.on_answers(found)

    def count(self, rows: pa.Table, tables: dict[str, pa.Table]) -> None:
        """Adds the events appended per stream (``tables``, as :meth:`tables` made them of
        ``rows``) and the rows each query emitted to the stats."""
        for stream, table in tables.items():
            self.stats.events[stream] = self.stats.events.get(stream, 0) + table.num_rows
        self._count_queries(rows)

    def _count_queries(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        counts: Any = pc.value_counts(rows.column(QUERY))
        for query, count in zip(counts.field("values").to_pylist(),
                                counts.field("counts").to_pylist(), strict=True):
            if query is not None and query != STORE_STREAM:
                self.stats.query_events[query] = self.stats.query_events.get(query, 0) + count

    def tables(self, rows: pa.Table) -> dict[str, pa.Table]:
        """Output rows (OUTPUT_SCHEMA) as one table per stream: ``_ts`` and the typed
        attributes, in the group's order (:mod:`.output_rows`). Each stream's rows are
        picked by their query, ordered among themselves and taken with only the columns
        its values are in: the other streams' slots and the ordering columns are never
        copied (a batch of the seed app: 270,000 rows in ~90 ms by ordering the whole batch
        first, ~40 ms so)."""
        if not rows.num_rows:
            return {}
        streams = self._row_streams(rows)
        keys = order_keys(rows)
        result: dict[str, pa.Table] = {}
        for code, output in enumerate(self.outputs.values()):
            picked = np.flatnonzero(streams == code)
            if not len(picked):
                continue
            whole = len(picked) == rows.num_rows
            picked = picked[ordered(keys if whole else [key[picked] for key in keys])]
            columns = [TS, *_value_columns(rows, output.attributes)]
            chosen = rows.select(columns)
            if _consecutive(picked):  # one branch's rows, in order: no copy
                chosen = chosen.slice(int(picked[0]), len(picked))
            else:
                chosen = chosen.take(picked)
            result[output.stream] = self._table(output, chosen)
        return result

    def _row_streams(self, rows: pa.Table) -> np.ndarray:
        """Per row, the position in :attr:`outputs` of the stream its query inserts into;
        -1 for a row of no query of the sink (an on-demand query's answer)."""
        encoded: Any = pc.dictionary_encode(rows.column(QUERY).combine_chunks())
        codes = np.array([self._stream_of_query.get(str(name), -1)
                          for name in encoded.dictionary.to_pylist()] + [-1], np.int64)
        indices = pc.fill_null(encoded.indices, len(encoded.dictionary)).to_numpy()
        streams: np.ndarray = codes[indices]
        return streams

    @staticmethod
    def _table(output: OutputStream, rows: pa.Table) -> pa.Table:
        try:
            values = output_values(rows, output.attributes)
        except ValueError as error:
            raise ValueError(f"stream '{output.stream}': {error}") from None
        return pa.table([rows.column(TS).cast(pa.int64()), *values],
                        names=[BUS_TS, *(a.name for a in output.attributes)])


QUERY_CODE = "_query_code"
"""A sink row's query as its position in the sink's :attr:`BusSink.query_names` (null for
another query, whose row keeps its name in ``_query``)."""


def sink_rows(frame: DataFrame, query_names: Sequence[str] = ()) -> DataFrame:
    """A group's output rows as the sink reads them, without text repeated on every row:
    ``_target`` kept only on on-demand answers, the one kind of row it is read from
    (:func:`answers`), and the query of ``query_names``' rows as a number
    (:data:`QUERY_CODE`, its name in ``_query`` null; :func:`named_queries` restores it).
    Otherwise every row of a stream carries its stream's and its query's names as text into
    Arrow and through the driver: the stream's name alone cost 5–10 % of the CPU per event
    of the seed app (measured alternating, warm JVM). An operator whose query name is a
    literal (Spark SQL, eddy's Java operators) gets a literal number instead: Spark folds
    the mapping into each branch of the group's union."""
    columns = {c: F.col(c) for c in frame.columns}
    is_answer = F.col(QUERY) == F.lit(STORE_STREAM)
    if TARGET in columns:
        columns[TARGET] = F.when(is_answer, F.col(TARGET))
    if query_names and QUERY in columns:
        code: Column | None = None
        for i, name in enumerate(query_names):
            matches = F.col(QUERY) == F.lit(name)
            code = F.when(matches, F.lit(i)) if code is None else code.when(matches, F.lit(i))
        assert code is not None
        columns[QUERY] = F.when(code.isNull(), F.col(QUERY))
        columns[QUERY_CODE] = code.cast("int")
    return frame.select(*(column.alias(name) for name, column in columns.items()))


def named_queries(rows: pa.Table, query_names: Sequence[str]) -> pa.Table:
    """``rows`` of :func:`sink_rows` with each row's query name back in ``_query``, as a
    dictionary column over the names (no string per row is made; the sink's routing and
    counting read the dictionary)."""
    if QUERY_CODE not in rows.column_names:
        return rows
    codes: Any = rows.column(QUERY_CODE).combine_chunks().cast(pa.int32())
    names: Any = pa.array(query_names, pa.string())
    if codes.null_count:  # rows of other queries carry their names as text
        text: Any = pc.dictionary_encode(rows.column(QUERY).combine_chunks())
        shifted = pc.add(text.indices, pa.scalar(len(query_names), pa.int32()))
        codes = pc.coalesce(codes, shifted.cast(pa.int32()))
        names = pa.concat_arrays([names, text.dictionary])
    query = pa.DictionaryArray.from_arrays(codes, names)
    return rows.set_column(rows.schema.get_field_index(QUERY), QUERY, query) \
        .drop_columns([QUERY_CODE])


def _value_columns(rows: pa.Table, attributes: Sequence[Attribute]) -> list[str]:
    """The columns :func:`output_values` reads for ``attributes``: their value slots (those
    of this batch) and ``_data``."""
    slots = value_slots(attributes) or ()
    return [name for name in (*slots, DATA) if name in rows.column_names]


def _consecutive(indices: np.ndarray) -> bool:
    """Whether ``indices`` are ``i, i + 1, i + 2, …`` — a slice of the batch (the rows of
    one branch of the group's union come together), which taking them would copy."""
    return bool(indices[-1] - indices[0] == len(indices) - 1
                and (len(indices) < 2 or (np.diff(indices) == 1).all()))
