"""The bus contract: topics of durable, sequence-numbered events, moved in Arrow batches.

A *topic* holds the events of one stream. It has ``partitions`` independent logs; each log
numbers its events 0, 1, 2, … without gaps (the *sequence*, ``_seq``), and every event carries
an ingestion timestamp ``_ts`` (epoch ms) next to the topic's attributes. Events are written
and read in batches — one stored record holds many events (Arrow IPC) — because one record
per event caps any Python client far below what Spark consumes (DESIGN.md §4).

Offsets follow Kafka's convention: an offset is the sequence of the *next* event, so
``end_offsets`` is where the next append lands, ``read(…, start, end)`` covers
``start <= _seq < end``, and a consumer commits the sequence it will read next.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus import arrow_codec, routing
from eddy.bus.errors import BusError, SequenceRangeError, UnknownTopicError
from eddy.bus.topic import PartitionRange, TopicSpec, merge_ranges


class Bus(ABC):
    """A messaging layer of durable topics; :func:`eddy.bus.open_bus` opens one from a URL.

    Every method is synchronous and safe to call from several threads; a backend that talks
    asynchronously to its server runs its own event loop (Spark's data source callbacks and
    HTTP handlers call the bus from plain threads).

    A bus belongs to the process that opened it: after a fork (Spark's Python workers are
    forked) open a new one in the child.

    Subclasses implement the storage; routing and batch validation live here so that both
    backends place the same event in the same partition.
    """

    def __init__(self) -> None:
        self._specs: dict[str, TopicSpec] = {}
        self._round_robin: dict[str, int] = {}
        self._pid = os.getpid()

    # -- topics --------------------------------------------------------------------------

    @abstractmethod
    def create_topic(self, spec: TopicSpec) -> None:
        """Creates the topic; creating it again with the same definition does nothing.

        Raises :class:`TopicConflictError` when the topic exists with another definition.
        """

    def topic(self, name: str) -> TopicSpec:
        """The definition of topic ``name``; :class:`UnknownTopicError` if there is none."""
        spec = self._specs.get(name)
        if spec is None:
            spec = self._load_topic(name)
            if spec is None:
                raise UnknownTopicError(f"topic '{name}' does not exist on this bus")
            self._specs[name] = spec  # definitions never change once created
        return spec

    @abstractmethod
    def topics(self) -> list[TopicSpec]:
        """Every topic on the bus, sorted by name."""

    @abstractmethod
    def _load_topic(self, name: str) -> TopicSpec | None:
        """The stored definition of ``name``, or None."""

    # -- writing -------------------------------------------------------------------------

    def append(self, topic: str, batch: pa.RecordBatch | pa.Table, *,
               producer: str | None = None, batch_id: int | None = None) -> list[PartitionRange]:
        """Appends events durably and returns where they went, one range per partition written.

        ``batch`` has one column per topic attribute (by name; values are cast safely to the
        attribute's type) and optionally ``_ts``; rows without a timestamp are stamped with
        the current time. With ``producer`` and ``batch_id`` the append is idempotent:
        appending the same (producer, batch id) to the topic again writes nothing and
        returns the ranges of the first append (for as long as the bus remembers it — see
        the backend). A range list is sorted by partition; a partition appears more than
        once only when a large batch was split and another writer got in between.
        """
        if (producer is None) != (batch_id is None):
            raise ValueError("append takes producer and batch_id together, or neither")
        spec = self.topic(topic)
        table = arrow_codec.conform(spec, batch)
        if table.num_rows == 0:
            return []
        if spec.partitions == 1:
            parts = [(0, table)]
        elif spec.key is not None:
            column = table.column(spec.key)
            assignment = routing.key_partitions(column, spec.attribute(spec.key).type,
                                                spec.partitions)
            parts = routing.split(table, assignment, spec.partitions)
        else:
            parts = routing.split(table, self._round_robin_assignment(spec, table.num_rows,
                                                                      producer, batch_id),
                                  spec.partitions)
        return merge_ranges(self._write(spec, parts, producer, batch_id))

    def _round_robin_assignment(self, spec: TopicSpec, rows: int, producer: str | None,
                                batch_id: int | None) -> np.ndarray:
        if producer is not None and batch_id is not None:
            # A replayed batch must land exactly where it did the first time.
            start = (routing.java_string_hash(producer) + batch_id) % spec.partitions
        else:
            start = self._round_robin.get(spec.name, 0)
            self._round_robin[spec.name] = (start + rows) % spec.partitions
        return routing.round_robin_partitions(rows, spec.partitions, start)

    @abstractmethod
    def _write(self, spec: TopicSpec, parts: list[tuple[int, pa.Table]],
               producer: str | None, batch_id: int | None) -> list[PartitionRange]:
        """Stores conformed, routed events (non-empty tables, one per partition)."""

    # -- reading -------------------------------------------------------------------------

    @abstractmethod
    def end_offsets(self, topic: str) -> list[int]:
        """Per partition, the sequence the next appended event will get. Cheap enough to poll."""

    @abstractmethod
    def start_offsets(self, topic: str) -> list[int]:
        """Per partition, the first sequence still stored (retention removes older events)."""

    @abstractmethod
    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        """Events with ``start <= _seq < end`` in sequence order, as Arrow batches.

        Each batch has ``_seq`` and ``_ts`` (int64) followed by the topic's attributes.
        The same range always yields the same events. Raises :class:`SequenceRangeError`
        when part of the range was removed by retention or is beyond ``end_offsets``.
        """

    def read_table(self, topic: str, partition: int, start: int, end: int) -> pa.Table:
        """:meth:`read` gathered into one table."""
        return pa.Table.from_batches(list(self.read(topic, partition, start, end)),
                                     schema=arrow_codec.read_schema(self.topic(topic)))

    # -- consumers and retention ---------------------------------------------------------

    @abstractmethod
    def commit(self, consumer: str, topic: str, partition: int, seq: int) -> None:
        """Records that ``consumer`` will read ``partition`` of ``topic`` from ``seq`` on.

        A committed position is never removed by retention; commit a consumer's start
        position before it reads to protect everything it has yet to read.
        """

    @abstractmethod
    def committed(self, consumer: str, topic: str, partition: int) -> int | None:
        """The position ``consumer`` last committed on the partition, or None."""

    @abstractmethod
    def remove_consumer(self, consumer: str) -> None:
        """Forgets every position of ``consumer``, so retention no longer waits for it."""

    @abstractmethod
    def trim(self) -> int:
        """Applies retention now and returns the number of events removed.

        Only whole stored batches below every committed position of their partition are
        removed, and only when older than the age limit or beyond the size limit.
        """

    @abstractmethod
    def close(self) -> None:
        """Releases connections and threads; the data stays."""

    def __enter__(self) -> Bus:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # -- checks shared by backends --------------------------------------------------------

    def _check_process(self) -> None:
        """Refuses use from a forked child, where the connection or loop thread is not alive."""
        if os.getpid() != self._pid:
            raise BusError(f"this bus was opened by process {self._pid}; open a new one in "
                           f"process {os.getpid()} (connections do not survive a fork)")

    def _check_partition(self, spec: TopicSpec, partition: int) -> None:
        if not 0 <= partition < spec.partitions:
            raise SequenceRangeError(
                f"topic '{spec.name}' has partitions 0..{spec.partitions - 1}, "
                f"not {partition}")

    @staticmethod
    def _check_range(spec: TopicSpec, start: int, end: int) -> None:
        if start < 0 or end < start:
            raise SequenceRangeError(
                f"topic '{spec.name}': invalid range [{start}, {end})")

    def _read_spec(self, topic: str, partition: int, start: int, end: int) -> TopicSpec:
        """The topic a read of ``[start, end)`` of ``partition`` names, once both are valid."""
        spec = self.topic(topic)
        self._check_partition(spec, partition)
        self._check_range(spec, start, end)
        return spec
