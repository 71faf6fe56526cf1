"""The streaming source of one execution group: its input topics on the bus, as wide rows.

A group reads every input stream through this one source (each extra read of a Python
source costs a full scan), one bus topic per Siddhi stream. Spark drives it:

* **Offsets** are bus positions, ``{"<topic>": [<next seq of partition 0>, …], …}`` with
  topics in the group's stream order — the sequence each partition reads next, exactly the
  bus's own offset convention, so a checkpointed offset is a position anyone can read from.
* ``latestOffset`` asks the bus for its end offsets (one cheap query per topic; Spark polls
  it every 10–15 ms when idle). With ``maxRowsPerBatch`` the batch admits the events that
  come first in the group's order (:func:`admit`), so cutting a backlog into batches does
  not reorder events across topics.
* ``partitions`` cuts one micro-batch into tasks; ``read`` returns the rows of the group's
  wide layout (:class:`~eddy.engine.spark.row_layout.InputLayout`) as Arrow record batches.
* ``commit`` records the batch's end as the group's consumer position on the bus, so
  retention never removes an event the group has not finished with.

**The group's order.** The per-event runtime processes a batch in ``_seq`` order, so
``_seq`` must be one total order over every topic of the group, identical whenever a batch
is read again (a union re-reads its source; a restart replays the last batch). Within a
micro-batch, events are ordered by the key ``(high-water _ts, stream index, partition, bus
seq)``, the high-water ``_ts`` of an event being the largest ``_ts`` of its partition in the
batch up to and including it. Each partition's own order is arrival order and is kept
(timestamps of playback or mapped time may go backwards within a partition; Siddhi
processes them as they arrive), and partitions interleave by time. When timestamps rise
within each partition the key is simply ``(_ts, stream, partition, seq)``. Then
``_seq = base + rank``, ``base`` being the sum of the batch's start offsets — the number of
events of all partitions before the batch — so ``_seq`` rises across micro-batches too.

The key depends only on the events between the batch's start and end offsets, which Spark
writes to its offset log before running the batch, and on the stream order, which is fixed
by the app. Bus reads of a range are repeatable. So re-reading a batch — in another task,
after a crash, after a restart from the checkpoint — gives every event the same ``_seq``.
The cut between micro-batches does influence how two topics interleave (a batch is always
processed before the next); that cut is checkpointed too.

A rank needs the whole batch, so every task of a batch reads all of the batch's events and
emits one contiguous slice of ranks. Small batches are one task; a batch above
``rowsPerTask`` events is split over up to ``maxTasks`` tasks, which share building the wide
rows and moving them into the JVM — the costly part — while reading bus records is cheap.

**One read per batch.** A plan with several branches over the source (the native queries
and the runtime's stateful operator) makes Spark scan it once per branch, each scan a
``read`` of the same slices. The first read of a slice leaves its rows in a shared-memory
file (:class:`SharedReads`, keyed by the reader and the slice, which fixes the rows), and the
other branches' reads map that file instead of reading and ordering the batch again — in
whichever Python worker they run. The files of earlier batches are removed as later ones
are read, and all of the reader's when it stops.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from eddy.bus import Bus, open_bus
from eddy.bus import SEQ as BUS_SEQ
from eddy.bus import TS as BUS_TS
from eddy.bus.routing import key_partitions
from eddy.engine.spark.data_sources import register_data_source
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout
from eddy.lang.ast import Attribute, AttrType

FORMAT = "eddy-bus"
DEFAULT_ROWS_PER_TASK = 100_000
STARTS = ("committed", "earliest", "latest")

Offsets = dict[str, list[int]]
OTHERS = ""
"""The ``_stream`` of an event a parallel reader leaves to its other instances (no stream
is called so)."""


# -- the group's inputs, as options ------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The parts of one topic a parallel reader keeps (:mod:`eddy.plan.bus_binding`):
    events whose part — ``abs(javaHash(key)) % partitions`` for field grouping, ``bus
    sequence % partitions`` for round-robin — is in ``read``. Every event has one part, so
    the instances of a group that read disjoint parts together see each event once."""

    topic: str
    strategy: str
    key: str | None
    partitions: int
    read: tuple[int, ...]

    def keeps(self, events: pa.Table, key_type: AttrType | None) -> np.ndarray:
        """A boolean mask of the events (as read from the bus) this reader keeps."""
        if self.strategy == "field-grouping":
            assert self.key is not None and key_type is not None
            parts = key_partitions(events.column(self.key), key_type, self.partitions)
        else:
            parts = events.column(BUS_SEQ).to_numpy() % self.partitions
        return np.isin(parts, np.asarray(self.read, dtype=np.int64))


@dataclass(frozen=True)
class GroupInput:
    """What a group reads: its wide layout and, per input stream, the topic holding it.

    Streams of the layout without a topic (the on-demand pseudo-stream, streams the group
    itself produces) never have rows from this source.
    """

    layout: InputLayout
    topics: tuple[tuple[str, str], ...]  # (stream, topic), in layout order
    selections: tuple[Selection, ...] = ()
    """Topics of which this reader keeps only some parts (a parallel child app's share)."""

    def __post_init__(self) -> None:
        streams = [name for name, _ in self.layout.streams]
        for stream, _ in self.topics:
            if stream not in streams:
                raise ValueError(f"stream '{stream}' is not in the group's input layout")
        names = [topic for _, topic in self.topics]
        if len(set(names)) != len(names):
            raise ValueError(f"each input stream needs a topic of its own, got {names}")
        order = {name: i for i, name in enumerate(streams)}
        object.__setattr__(self, "topics",
                           tuple(sorted(self.topics, key=lambda st: order[st[0]])))

    def stream_index(self, stream: str) -> int:
        """The stream's position in the layout (its ``s<i>_…`` columns)."""
        return [name for name, _ in self.layout.streams].index(stream)

    def to_json(self) -> str:
        return json.dumps({
            "streams": [[name, [[a.name, a.type.value] for a in attrs]]
                        for name, attrs in self.layout.streams],
            "topics": [list(pair) for pair in self.topics],
            "selections": [[s.topic, s.strategy, s.key, s.partitions, list(s.read)]
                           for s in self.selections],
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> GroupInput:
        data = json.loads(text)
        layout = InputLayout(tuple(
            (name, tuple(Attribute(a, AttrType(t)) for a, t in attrs))
            for name, attrs in data["streams"]))
        return cls(layout, tuple((s, t) for s, t in data["topics"]),
                   tuple(Selection(t, s, k, n, tuple(r))
                         for t, s, k, n, r in data.get("selections", ())))

    def selection(self, topic: str) -> Selection | None:
        """How the reader selects from ``topic``, None when it keeps every event."""
        return next((s for s in self.selections if s.topic == topic), None)


# -- buses, one per process ---------------------------------------------------------------

_buses: dict[tuple[str, int], Bus] = {}
_buses_lock = threading.Lock()
_MAX_OPEN_BUSES = 8


def process_bus(url: str) -> Bus:
    """This process's bus for ``url``, opened on first use (Spark's workers are forked and
    reused, so each opens its own once). A worker serves one task at a time, so the least
    recently used of more than a few buses can be closed safely."""
    key = (url, os.getpid())
    with _buses_lock:
        bus = _buses.pop(key, None)
        if bus is None:
            bus = open_bus(url)
        _buses[key] = bus  # most recently used last
        stale = [k for k in _buses if k[1] != key[1]] + list(_buses)[:-_MAX_OPEN_BUSES]
        for old in dict.fromkeys(stale):
            closing = _buses.pop(old)
            if old[1] == key[1]:
                closing.close()  # a parent's bus (before a fork) is only forgotten
        return bus


def close_process_bus(url: str) -> None:
    """Closes this process's bus for ``url``, if it opened one."""
    with _buses_lock:
        bus = _buses.pop((url, os.getpid()), None)
    if bus is not None:
        bus.close()


# -- admission control ------------------------------------------------------------------


def admit(bus: Bus, inputs: GroupInput, start: Offsets, end: Offsets,
          max_rows: int) -> Offsets:
    """``end`` cut down to the first ``max_rows`` events past ``start`` in the group's order.

    The events admitted are those a batch of everything waiting would process first (the
    order key of the module docstring, over the candidates), so a backlog cut into
    micro-batches is processed in the same order as one read at once whenever timestamps
    rise within each partition: a cut never lets a later event of one stream overtake an
    earlier event of another (a fair share per partition would). Only the timestamps of at
    most ``max_rows`` events per partition are read, and none when one partition has
    events waiting (its order is its own: the cut is its first ``max_rows``).
    """
    slots = [(inputs.stream_index(stream), topic, p, start[topic][p], end[topic][p])
             for stream, topic in inputs.topics for p in range(len(end[topic]))
             if end[topic][p] > start[topic][p]]
    if sum(e - s for *_, s, e in slots) <= max_rows:
        return {topic: list(ends) for topic, ends in end.items()}
    admitted = {topic: list(positions) for topic, positions in start.items() if topic in end}
    if len(slots) == 1:  # one partition's events come in its own order: no need to read
        _, topic, p, first, _ = slots[0]
        admitted[topic][p] = first + max_rows
        return admitted
    keys: list[tuple[np.ndarray, ...]] = []
    for slot, (index, topic, p, first, last) in enumerate(slots):
        ts = bus.read_table(topic, p, first, min(last, first + max_rows)) \
            .column(BUS_TS).to_numpy()
        n = len(ts)
        keys.append((np.maximum.accumulate(ts) if n else ts, np.full(n, index, np.int64),
                     np.full(n, p, np.int64), np.arange(n, dtype=np.int64),
                     np.full(n, slot, np.int64)))
    high_water, stream_index, part, rank, slot_of = (np.concatenate(k) for k in zip(*keys))
    chosen = np.lexsort((rank, part, stream_index, high_water))[:max_rows]
    counts = np.bincount(slot_of[chosen], minlength=len(slots))
    for (_, topic, p, first, _), count in zip(slots, counts):
        admitted[topic][p] = first + int(count)
    return admitted


def initial_positions(bus: Bus, inputs: GroupInput, consumer: str,
                      starting: str = "committed") -> Offsets:
    """Where ``consumer`` starts reading the group's topics: its committed positions, else
    ``starting`` (earliest or latest), within what the bus holds; committed at once so
    retention keeps what the group has yet to read, and so that asking again (Spark does
    after a crash in the first batch) gives the same answer."""
    offsets: Offsets = {}
    for _, topic in inputs.topics:
        first, ends = bus.start_offsets(topic), bus.end_offsets(topic)
        fallback = ends if starting == "latest" else first
        positions = []
        for p in range(len(ends)):
            committed = bus.committed(consumer, topic, p)
            position = fallback[p] if committed is None else committed
            positions.append(min(max(position, first[p]), ends[p]))
            if committed != positions[-1]:
                bus.commit(consumer, topic, p, positions[-1])
        offsets[topic] = positions
    return offsets


# -- the reader --------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchSlice(InputPartition):
    """One task of a micro-batch: every ``(stream index, topic, partition, start, end)`` range
    of the batch, the batch's ``base`` and the slice ``[lo, hi)`` of ranks it emits."""

    ranges: tuple[tuple[int, str, int, int, int], ...]
    base: int
    lo: int
    hi: int


class BusStreamReader(DataSourceStreamReader):
    """Reads a group's input topics; see the module docstring. Holds no bus itself (Spark
    pickles the reader into its workers): each process opens its own."""

    def __init__(self, options: Mapping[str, str]) -> None:
        # Spark hands data sources their options with lower-cased keys; callers may not.
        options = {key.lower(): value for key, value in options.items()}
        self.url = options["url"]
        self.consumer = options["consumer"]
        self.inputs = GroupInput.from_json(options["inputs"])
        self.max_rows = int(options.get("maxrowsperbatch", "0"))
        self.rows_per_task = int(options.get("rowspertask", str(DEFAULT_ROWS_PER_TASK)))
        self.max_tasks = max(1, int(options.get("maxtasks", "1")))
        self.starting = options.get("startingoffsets", "committed")
        if self.starting not in STARTS:
            raise ValueError(f"startingOffsets must be one of {', '.join(STARTS)}, "
                             f"not {self.starting!r}")
        self.share_reads = options.get("sharereads", "true").lower() == "true"
        self._checked = False

    def _bus(self) -> Bus:
        return process_bus(self.url)

    def initialOffset(self) -> Offsets:
        """The consumer's committed position, else ``startingOffsets``; committed at once so
        retention keeps what the group has yet to read, and so that asking again (Spark does
        after a crash in the first batch) gives the same answer."""
        bus = self._bus()
        self._check_schemas(bus)
        return initial_positions(bus, self.inputs, self.consumer, self.starting)

    def _check_schemas(self, bus: Bus) -> None:
        """Fails the query (once, at its start or restart) if a topic's events do not have
        the attributes the group reads them as."""
        if self._checked:
            return
        for stream, topic in self.inputs.topics:
            expected = self.inputs.layout.attributes(stream)
            actual = bus.topic(topic).attributes
            if tuple(actual) != tuple(expected):
                raise ValueError(
                    f"topic '{topic}' holds ({_schema(actual)}), but the group reads stream "
                    f"'{stream}' as ({_schema(expected)})")
        self._checked = True

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows > 0 else ReadAllAvailable()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        bus = self._bus()
        self._check_schemas(bus)
        start = self._complete(bus, start)
        end = {topic: [max(e, s) for e, s in zip(bus.end_offsets(topic), start[topic])]
               for _, topic in self.inputs.topics}
        if isinstance(limit, ReadMaxRows):
            end = admit(bus, self.inputs, start, end, limit.max_rows)
        return end

    def _complete(self, bus: Bus, offsets: Offsets) -> Offsets:
        """``offsets`` with a position for every input topic (a topic missing from a
        checkpoint starts at its first retained event)."""
        missing = [t for _, t in self.inputs.topics if t not in offsets]
        return {**offsets, **{t: bus.start_offsets(t) for t in missing}}

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        start = self._complete(self._bus(), start)
        ranges = tuple(
            (self.inputs.stream_index(stream), topic, p, start[topic][p], end[topic][p])
            for stream, topic in self.inputs.topics
            for p in range(len(end[topic])) if end[topic][p] > start[topic][p])
        total = sum(e - s for *_, s, e in ranges)
        if total == 0:
            return []
        base = sum(sum(positions) for positions in start.values())
        tasks = max(1, min(self.max_tasks, math.ceil(total / max(self.rows_per_task, 1))))
        return [BatchSlice(ranges, base, total * i // tasks, total * (i + 1) // tasks)
                for i in range(tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, BatchSlice)
        shared = self._shared()
        table = shared.get(partition) if shared is not None else None
        if table is None:
            table = ordered_rows(self._bus(), self.inputs, partition)
            if shared is not None:
                shared.put(partition, table)
        yield from table.to_batches()

    def _shared(self) -> SharedReads | None:
        if not self.share_reads:
            return None
        return SharedReads(self.url, self.consumer, self.inputs)

    def commit(self, end: Offsets) -> None:
        bus = self._bus()
        for topic, positions in end.items():
            for p, position in enumerate(positions):
                bus.commit(self.consumer, topic, p, position)

    def stop(self) -> None:
        shared = self._shared()
        if shared is not None:
            shared.clear()
        close_process_bus(self.url)


def _schema(attributes: Sequence[Attribute]) -> str:
    return ", ".join(f"{a.name} {a.type.value}" for a in attributes)


# -- one read per batch ------------------------------------------------------------------


def _shared_root() -> Path:
    """Where read batches are shared between Python workers: shared memory when the system
    has it (the files are written and mapped, never synced), else the temporary folder."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    return base / f"eddy-bus-reads-{os.getuid()}"


class SharedReads:
    """The slices of a reader's batches already read on this machine, as Arrow IPC files.

    A slice's rows depend only on the reader's topics and layout and on the slice's ranges
    (see the module docstring), so a file found under the slice's name holds exactly what
    reading the bus again would give. A file is renamed into place whole, so it is either
    absent or complete; two workers that miss it at the same time both read the bus and
    write the same rows.
    """

    def __init__(self, url: str, consumer: str, inputs: GroupInput) -> None:
        reader = "\0".join((url, consumer, inputs.to_json()))
        self.tag = hashlib.sha256(reader.encode()).hexdigest()[:20]
        self.root = _shared_root()

    def _path(self, task: BatchSlice) -> Path:
        slice_key = hashlib.sha256(repr((task.ranges, task.lo, task.hi)).encode()).hexdigest()
        return self.root / f"{self.tag}-{task.base:020d}-{slice_key[:24]}.arrow"

    def get(self, task: BatchSlice) -> pa.Table | None:
        """The slice's rows if a branch read them already, else None."""
        try:  # the table keeps the mapping alive as long as it needs it
            return pa.ipc.open_file(pa.memory_map(str(self._path(task)))).read_all()
        except (FileNotFoundError, pa.ArrowInvalid):
            return None

    def put(self, task: BatchSlice, table: pa.Table) -> None:
        """Leaves the slice's rows for the other branches and removes the files of earlier
        batches (batches run one after another: no branch reads those again)."""
        path = self._path(task)
        try:
            self.root.mkdir(mode=0o700, exist_ok=True)
            partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
            with pa.OSFile(str(partial), "wb") as sink, \
                    pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            os.replace(partial, path)
        except OSError:  # no room or no permission: the other branches read the bus
            return
        self._remove(lambda name: name.split("-")[1] < path.name.split("-")[1])
        _remove_stale(self.root)

    def clear(self) -> None:
        """Removes every file of the reader."""
        self._remove(lambda name: True)

    def _remove(self, which: Callable[[str], bool]) -> None:
        try:
            names = [e.name for e in os.scandir(self.root) if e.name.startswith(self.tag + "-")]
        except OSError:
            return
        for name in names:
            if which(name):
                try:
                    os.unlink(self.root / name)
                except OSError:
                    pass


STALE_READ_S = 600.0
"""A shared read this old belongs to a reader that never stopped (a killed process)."""


def _remove_stale(root: Path) -> None:
    """Removes the shared reads of every reader older than :data:`STALE_READ_S`."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    limit = time.time() - STALE_READ_S
    for entry in entries:
        try:
            if entry.stat().st_mtime < limit:
                os.unlink(entry.path)
        except OSError:
            pass


# -- building the wide rows ---------------------------------------------------------------


def ordered_rows(bus: Bus, inputs: GroupInput, task: BatchSlice) -> pa.Table:
    """The events of ranks ``[task.lo, task.hi)`` of the batch, in the wide layout, with the
    group's ``_seq``; see the module docstring for the order."""
    layout = inputs.layout
    schema = layout.arrow_schema()
    streams = dict(inputs.topics)
    pieces: list[pa.Table] = []
    keys: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for index, topic, p, start, end in task.ranges:
        events = bus.read_table(topic, p, start, end)
        stream = layout.streams[index][0]
        assert streams[stream] == topic
        wide = widen(events, layout, index, schema)
        selection = inputs.selection(topic)
        if selection is not None:  # the others' events stay in the order, with no stream
            wide = _unselect(wide, events, selection, layout, index)
        pieces.append(wide)
        ts = events.column(BUS_TS).to_numpy()
        n = events.num_rows
        keys.append((np.maximum.accumulate(ts) if n else ts, np.full(n, index, np.int64),
                     np.full(n, p, np.int64), events.column(BUS_SEQ).to_numpy()))
    if not pieces:
        return schema.empty_table()
    high_water, stream_index, part, seq = (np.concatenate(k) for k in zip(*keys))
    order = np.lexsort((seq, part, stream_index, high_water))[task.lo:task.hi]
    rows = pa.concat_tables(pieces).take(order.astype(np.int64))
    seqs = pa.array(np.arange(task.base + task.lo, task.base + task.hi, dtype=np.int64))
    return rows.set_column(0, schema.field(SEQ), seqs)


def _unselect(wide: pa.Table, events: pa.Table, selection: Selection, layout: InputLayout,
              index: int) -> pa.Table:
    """``wide`` with the ``_stream`` :data:`OTHERS` on the events ``selection`` does not
    keep: they keep their rank (so every ``_seq`` is the one a reader of the whole topic
    gives) and the group's plan drops them (:func:`selected`)."""
    attributes = {a.name: a.type for a in layout.streams[index][1]}
    keep = selection.keeps(events, attributes.get(selection.key or ""))
    position = wide.schema.get_field_index(STREAM)
    column = pc.if_else(pa.array(keep), wide.column(position),
                        pa.scalar(OTHERS, pa.string()))
    return wide.set_column(position, wide.schema.field(STREAM), column)


def selected(source: DataFrame, inputs: GroupInput) -> DataFrame:
    """The group's input rows without the events its selections leave to other instances."""
    if not inputs.selections:
        return source
    return source.where(F.col(STREAM) != F.lit(OTHERS))


def widen(events: pa.Table, layout: InputLayout, index: int, schema: pa.Schema) -> pa.Table:
    """One topic's events (``_seq``, ``_ts``, attributes) in the group's wide layout."""
    n = events.num_rows
    stream, attributes = layout.streams[index]
    own = dict(zip(layout.columns(stream), attributes))
    columns: list[Any] = []
    for field in schema:
        if field.name == SEQ:
            columns.append(events.column(BUS_SEQ))
        elif field.name == TS:
            columns.append(events.column(BUS_TS))
        elif field.name == STREAM:
            columns.append(pa.array([stream] * n, pa.string()))
        elif field.name in own:
            columns.append(events.column(own[field.name].name).cast(field.type))
        else:
            columns.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


# -- wiring ------------------------------------------------------------------------------


class BusDataSource(DataSource):
    """``format("eddy-bus")``; options ``url``, ``consumer``, ``inputs`` (a
    :meth:`GroupInput.to_json`), ``maxRowsPerBatch`` (0 = all available), ``rowsPerTask``,
    ``maxTasks``, ``startingOffsets`` (committed, earliest or latest) and ``shareReads``
    (true or false)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return source_schema(GroupInput.from_json(self.options["inputs"]))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BusStreamReader(dict(self.options))


def source_schema(inputs: GroupInput) -> StructType:
    """The columns a group reads from the bus: its layout's, without ``_clock`` (a topic
    read from an offset cannot know the stream's clock before it)."""
    return inputs.layout.spark_schema()


def register_bus_source(spark: SparkSession) -> None:
    """Makes ``format("eddy-bus")`` known to ``spark`` (once per session)."""
    register_data_source(spark, BusDataSource)


def read_group_input(spark: SparkSession, url: str, inputs: GroupInput, consumer: str, *,
                     max_rows_per_batch: int = 0, rows_per_task: int = DEFAULT_ROWS_PER_TASK,
                     max_tasks: int | None = None, starting_offsets: str = "committed",
                     share_reads: bool = True) -> DataFrame:
    """The streaming DataFrame of a group's input topics, in its wide layout.
    ``share_reads``: whether the branches of a plan share each batch's read (see the
    module docstring)."""
    register_bus_source(spark)
    tasks = max_tasks if max_tasks is not None else spark.sparkContext.defaultParallelism
    options: dict[str, Any] = {
        "url": url, "consumer": consumer, "inputs": inputs.to_json(),
        "maxRowsPerBatch": str(max_rows_per_batch), "rowsPerTask": str(rows_per_task),
        "maxTasks": str(tasks), "startingOffsets": starting_offsets,
        "shareReads": str(share_reads).lower(),
    }
    return (spark.readStream.format(FORMAT).schema(source_schema(inputs))
            .options(**options).load())
