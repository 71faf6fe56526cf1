"""A streaming source over a spool directory of Arrow chunk files.

``eddy replay`` writes its whole bounded input as one chunk; ``eddy run`` appends a chunk
whenever input lines arrive. Either way Spark sees a real streaming source whose offsets are
event positions (``_seq``), so replay runs the same plan as a live app, and an optional
``maxRowsPerBatch`` cuts the input into micro-batches of that many events to show that the
output does not depend on the cut.

A chunk file is named ``<first seq>-<end seq>.arrow`` (end exclusive, zero-padded) and is
renamed into place only when complete, so a reader never sees half a chunk.

When the schema the caller passes ends with ``_clock``
(:data:`~eddy.engine.spark.row_layout.CLOCK`), each row also carries the largest ``_ts`` of its
stream's rows up to it: the spool holds the whole input in ``_seq`` order, so a task can compute
that running maximum for its range from the chunks before it (their per-record-batch maxima are
cached per process, chunks never change), and operators keyed by hash buckets still expire by the
stream's clock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from eddy.engine.spark.data_sources import register_data_source
from eddy.engine.spark.row_layout import CLOCK, STREAM, TS

FORMAT = "eddy-spool"
_SUFFIX = ".arrow"


def _chunks(directory: str) -> list[tuple[int, int, str]]:
    found = []
    for name in os.listdir(directory):
        if name.endswith(_SUFFIX) and "-" in name:
            start, end = name[: -len(_SUFFIX)].split("-")
            found.append((int(start), int(end), os.path.join(directory, name)))
    return sorted(found)


def append_chunk(directory: str | Path, table: pa.Table) -> None:
    """Adds events (``_seq`` consecutive from the previous chunk's end) to the spool."""
    seqs = table.column("_seq")
    start, end = int(seqs[0].as_py()), int(seqs[-1].as_py()) + 1
    final = Path(directory) / f"{start:012d}-{end:012d}{_SUFFIX}"
    partial = final.with_suffix(".part")
    with pa.OSFile(str(partial), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    partial.replace(final)


class _Range(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


MIN_PARTITION_ROWS = 50_000
"""A micro-batch is read by several tasks only when each gets at least this many events;
below that a task's fixed cost outweighs a second core."""


class SpoolStreamReader(DataSourceStreamReader):
    """Offsets ``{"offset": n}``: events with ``_seq < n`` have been read."""

    def __init__(self, directory: str, max_rows: int, partitions: int,
                 clock: bool = False) -> None:
        self.directory, self.max_rows, self.max_partitions = directory, max_rows, partitions
        self.clock = clock

    def initialOffset(self) -> dict[str, int]:
        return {"offset": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        chunks = _chunks(self.directory)
        end = chunks[-1][1] if chunks else 0
        if isinstance(limit, ReadMaxRows):
            end = min(end, start["offset"] + limit.max_rows)
        return {"offset": max(end, start["offset"])}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        """``(start, end]`` in up to ``max_partitions`` consecutive ranges, one task each."""
        lo, hi = start["offset"], end["offset"]
        if hi <= lo:
            return []
        count = max(1, min(self.max_partitions, (hi - lo) // MIN_PARTITION_ROWS))
        step = -(-(hi - lo) // count)
        return [_Range(a, min(a + step, hi)) for a in range(lo, hi, step)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The range's events as slices of the chunks' record batches (no copy: the files
        are memory-mapped, and record batches outside the range are never touched), with
        the running clock appended when the schema asks for it."""
        assert isinstance(partition, _Range)
        carry: dict[str, int] | None = {} if self.clock else None
        for first, last, path in _chunks(self.directory):
            if first >= partition.end:
                break
            if last <= partition.start:
                if carry is not None:
                    _merge(carry, _chunk_maxima(path))
                continue
            with pa.memory_map(path) as source:
                reader = ipc.open_file(source)
                offset = first
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    lo = max(partition.start - offset, 0)
                    hi = min(partition.end - offset, batch.num_rows)
                    if carry is not None and lo > 0:
                        _merge(carry, _batch_maxima(path, i, batch) if lo >= batch.num_rows
                               else _maxima(batch.slice(0, lo)))
                    if hi > lo:
                        part = batch.slice(lo, hi - lo)
                        yield part if carry is None else \
                            part.append_column(_CLOCK_FIELD, running_clock(part, carry))
                    offset += batch.num_rows
                    if offset >= partition.end:
                        break

    def commit(self, end: dict[str, int]) -> None:
        """Chunks stay until the run or replay that owns the spool removes it."""


def running_clock(batch: pa.RecordBatch, carry: dict[str, int]) -> pa.Array[Any]:
    """Per row, the largest ``_ts`` of its stream so far, starting from (and updating)
    ``carry``, the maxima per stream before the batch."""
    ts = batch.column(TS).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    streams = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(batch.column(STREAM)))
    names = [str(name) for name in streams.dictionary.to_pylist()]
    codes = streams.indices.to_numpy(zero_copy_only=False)
    clock = np.empty_like(ts)
    for code, name in enumerate(names):
        rows = slice(None) if len(names) == 1 else np.flatnonzero(codes == code)
        mine = ts[rows]
        if len(mine):
            run = np.maximum.accumulate(np.maximum(mine, carry.get(name, int(mine[0]))))
            clock[rows] = run
            carry[name] = int(run[-1])
    return pa.array(clock, pa.int64())


def _maxima(batch: pa.RecordBatch) -> dict[str, int]:
    """The largest ``_ts`` per stream in ``batch``."""
    found: dict[str, int] = {}
    if batch.num_rows:
        running_clock(batch, found)
    return found


def _merge(carry: dict[str, int], maxima: dict[str, int]) -> None:
    for name, value in maxima.items():
        carry[name] = max(carry.get(name, value), value)


_CLOCK_FIELD = pa.field(CLOCK, pa.int64(), False)
_batch_cache: dict[tuple[str, int], dict[str, int]] = {}
_chunk_cache: dict[str, dict[str, int]] = {}


def _batch_maxima(path: str, index: int, batch: pa.RecordBatch) -> dict[str, int]:
    key = (path, index)
    if key not in _batch_cache:
        _batch_cache[key] = _maxima(batch)
    return _batch_cache[key]


def _chunk_maxima(path: str) -> dict[str, int]:
    """A whole chunk's maxima per stream (cached: a chunk never changes once in place)."""
    if path not in _chunk_cache:
        found: dict[str, int] = {}
        with pa.memory_map(path) as source:
            reader = ipc.open_file(source)
            for i in range(reader.num_record_batches):
                _merge(found, _batch_maxima(path, i, reader.get_batch(i)))
        _chunk_cache[path] = found
    return _chunk_cache[path]


class SpoolDataSource(DataSource):
    """Options: ``path`` (the spool directory), ``maxRowsPerBatch`` (0 = all available),
    ``numPartitions`` (most tasks reading one micro-batch; default: this machine's cores)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        raise NotImplementedError("the caller passes the group's input schema")

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        # self.options is case-insensitive; a dict() of it has lower-cased keys.
        options = self.options
        return SpoolStreamReader(options["path"], int(options.get("maxRowsPerBatch", "0")),
                                 int(options.get("numPartitions", str(_cores()))),
                                 clock=CLOCK in schema.fieldNames())


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


def register_sources(spark: SparkSession) -> None:
    """Makes ``format("eddy-spool")`` known to ``spark`` (once per session)."""
    register_data_source(spark, SpoolDataSource)
