"""Events as Arrow: the column types of Siddhi attributes, and stored records as Arrow IPC.

A stored record is one Arrow IPC *stream* (schema + record batches) holding ``_ts`` and the
topic's attributes of consecutive events. Sequence numbers are not stored: a record knows
its first sequence, and :func:`number` adds the ``_seq`` column when events are read.

Siddhi types map to Arrow as ``int``→int32, ``long``→int64, ``float``→float32,
``double``→float64, ``string``→utf8, ``bool``→bool and ``object``→utf8 holding JSON text
(the same layout as the engine's, ``eddy.engine.spark.row_layout``). Every attribute is nullable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Literal, cast

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.ipc as ipc  # type: ignore[import-untyped, unused-ignore]

from eddy.bus.errors import BatchSchemaError
from eddy.bus.topic import SEQ, TS, TopicSpec
from eddy.lang.ast import AttrType

ARROW_TYPES: dict[AttrType, pa.DataType] = {
    AttrType.INT: pa.int32(), AttrType.LONG: pa.int64(), AttrType.FLOAT: pa.float32(),
    AttrType.DOUBLE: pa.float64(), AttrType.STRING: pa.string(), AttrType.BOOL: pa.bool_(),
    AttrType.OBJECT: pa.string(),
}

COMPRESSIONS = ("none", "lz4", "zstd")


def check_compression(compression: str) -> None:
    """Refuses a codec name Arrow IPC does not know, before any batch is written with it."""
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be one of {COMPRESSIONS}, not {compression!r}")


def now_ms() -> int:
    """The current time in epoch milliseconds, as ``_ts`` stamps it."""
    return time.time_ns() // 1_000_000


def stored_schema(spec: TopicSpec) -> pa.Schema:
    """Columns of a stored record: ``_ts`` then the attributes."""
    return pa.schema([pa.field(TS, pa.int64(), nullable=False)]
                     + [pa.field(a.name, ARROW_TYPES[a.type]) for a in spec.attributes])


def read_schema(spec: TopicSpec) -> pa.Schema:
    """Columns of a batch :meth:`Bus.read` returns: ``_seq``, ``_ts``, then the attributes."""
    return stored_schema(spec).insert(0, pa.field(SEQ, pa.int64(), nullable=False))


def conform(spec: TopicSpec, batch: pa.RecordBatch | pa.Table, stamp_ms: int | None = None
            ) -> pa.Table:
    """The events of ``batch`` in the topic's stored layout (one chunk per column).

    Columns are matched by name and cast safely; missing ``_ts`` values become ``stamp_ms``
    (default: now). Raises :class:`BatchSchemaError` naming the offending column.
    """
    if isinstance(batch, pa.RecordBatch):
        batch = pa.Table.from_batches([batch])
    if not isinstance(batch, pa.Table):
        raise BatchSchemaError(
            f"topic '{spec.name}': append takes a pyarrow Table or RecordBatch, "
            f"not {type(batch).__name__}")
    names = batch.column_names
    expected = [a.name for a in spec.attributes]
    if SEQ in names:
        raise BatchSchemaError(
            f"topic '{spec.name}': appended events must not carry '{SEQ}'; "
            f"the bus assigns sequence numbers")
    unknown = [n for n in names if n != TS and n not in expected]
    missing = [n for n in expected if n not in names]
    if unknown or missing or len(set(names)) != len(names):
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(unknown)}")
        if len(set(names)) != len(names):
            problems.append("duplicate column names")
        raise BatchSchemaError(
            f"topic '{spec.name}' ({', '.join(expected)}): appended columns do not match: "
            f"{'; '.join(problems)}")
    columns = [_timestamps(spec, batch, stamp_ms)]
    for attribute in spec.attributes:
        columns.append(_cast(spec, attribute.name, batch.column(attribute.name),
                             ARROW_TYPES[attribute.type]))
    return pa.Table.from_arrays(columns, schema=stored_schema(spec)).combine_chunks()


def _timestamps(spec: TopicSpec, batch: pa.Table, stamp_ms: int | None
                ) -> pa.ChunkedArray[Any]:
    stamp = now_ms() if stamp_ms is None else stamp_ms
    if TS not in batch.column_names:
        return pa.chunked_array([pa.array(np.full(batch.num_rows, stamp, dtype=np.int64))],
                                type=pa.int64())
    column = batch.column(TS)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms")).cast(pa.int64())
    column = _cast(spec, TS, column, pa.int64())
    return column.fill_null(pa.scalar(stamp, pa.int64())) if column.null_count else column


def _cast(spec: TopicSpec, name: str, column: pa.ChunkedArray[Any], target: pa.DataType
          ) -> pa.ChunkedArray[Any]:
    if column.type == target:
        return column
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise BatchSchemaError(
            f"topic '{spec.name}': column '{name}' of type {column.type} does not fit "
            f"{target}: {error}") from error


def encode(table: pa.Table, compression: str = "none") -> pa.Buffer:
    """One stored record: ``table`` as an Arrow IPC stream."""
    codec = None if compression == "none" else cast(Literal["lz4", "zstd"], compression)
    options = ipc.IpcWriteOptions(compression=codec)
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue()


def decode(data: bytes | pa.Buffer) -> pa.Table:
    """The events of a stored record (zero-copy over ``data``)."""
    return ipc.open_stream(pa.py_buffer(data)).read_all()


def encode_records(table: pa.Table, max_bytes: int, compression: str = "none"
                   ) -> list[tuple[int, pa.Buffer]]:
    """``table`` as consecutive stored records of at most ``max_bytes`` each: (rows, record).

    Raises :class:`BatchSchemaError` if a single event does not fit.
    """
    rows = table.num_rows
    if table.nbytes > max_bytes and rows > 1:
        per_record = max(1, int(rows * max_bytes * 0.8 / max(table.nbytes, 1)))
        if per_record < rows:
            records: list[tuple[int, pa.Buffer]] = []
            for offset in range(0, rows, per_record):
                records += encode_records(table.slice(offset, per_record), max_bytes,
                                          compression)
            return records
    record = encode(table, compression)
    if record.size <= max_bytes:
        return [(rows, record)]
    if rows == 1:
        raise BatchSchemaError(
            f"one event needs {record.size} bytes, more than the {max_bytes} a stored "
            f"record may hold")
    half = rows // 2
    return encode_records(table.slice(0, half), max_bytes, compression) \
        + encode_records(table.slice(half), max_bytes, compression)


def number(batch: pa.RecordBatch, first_seq: int) -> pa.RecordBatch:
    """``batch`` with a leading ``_seq`` column counting up from ``first_seq``."""
    seqs = pa.array(np.arange(first_seq, first_seq + batch.num_rows, dtype=np.int64))
    return pa.RecordBatch.from_arrays(
        [seqs, *batch.columns],
        schema=batch.schema.insert(0, pa.field(SEQ, pa.int64(), nullable=False)))


def slice_record(table: pa.Table, first_seq: int, start: int, end: int
                 ) -> Iterator[pa.RecordBatch]:
    """The events of a stored record with ``start <= _seq < end``, numbered."""
    lo = max(start - first_seq, 0)
    hi = min(end - first_seq, table.num_rows)
    offset = 0
    for batch in table.to_batches():
        b_lo, b_hi = max(lo - offset, 0), min(hi - offset, batch.num_rows)
        if b_lo < b_hi:
            yield number(batch.slice(b_lo, b_hi - b_lo), first_seq + offset + b_lo)
        offset += batch.num_rows
        if offset >= hi:
            return
