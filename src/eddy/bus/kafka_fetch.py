"""Reading records of one Kafka partition by offset, through confluent-kafka consumers.

A :class:`PartitionReader` is a consumer assigned to one partition (never subscribed, never
committing: positions live in the bus's metadata topic). Reading on from where the last
read stopped keeps the consumer's prefetched records; a read elsewhere seeks. A
:class:`ReaderPool` keeps a few readers per bus, the least recently used closed first.

**Gaps.** A data topic's offsets have no gaps (eddy writes no transactions and compacts
nothing), yet a broker may serve a later record before an earlier one is readable: Tansu
assigns an offset, then stores the record, and a fetch in between returns the records
after it. A reader that took that answer would never see the missing record — for the
record chain, a writer that misses a rival's valid record goes on after its own and the
two fork. So a *contiguous* reader (every data topic's) seeks back to the first missing
offset and fetches again until the record is there, within its timeout; only the
compacted metadata topic's reader accepts gaps.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from eddy.bus.errors import BusError, SequenceRangeError
from eddy.bus.kafka_chain import Record, parse

_POOL_SIZE = 16
_BATCH = 256


class PartitionReader:
    """One consumer assigned to one partition; not thread-safe (the pool lends it out)."""

    def __init__(self, config: dict[str, Any], topic: str, partition: int,
                 timeout_s: float, *, contiguous: bool = True) -> None:
        self.topic, self.partition, self.timeout = topic, partition, timeout_s
        self.contiguous = contiguous
        self.where = f"Kafka topic '{topic}' partition {partition}"
        self._config = {
            **config, "group.id": f"eddy-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "auto.offset.reset": "error",
            "enable.partition.eof": True, "fetch.wait.max.ms": 50,
            # A record holds up to ~1 MB of events: fetch many per request.
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
        }
        self._open: Consumer | None = None
        self._position: int | None = None  # the offset the consumer delivers next
        self.lock = threading.Lock()

    @property
    def _consumer(self) -> Consumer:
        """The consumer, opened again if the pool closed it to save resources."""
        if self._open is None:
            self._open = Consumer(self._config)
        return self._open

    def watermarks(self) -> tuple[int, int]:
        """(first offset stored, offset the next record gets), asked of the broker."""
        try:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, self.partition), timeout=self.timeout,
                cached=False)
        except KafkaException as error:
            raise BusError(f"{self.where}: cannot read its offsets: {error}") from None
        return int(low), int(high)

    def records(self, start: int, stop: int) -> list[Record]:
        """The records at offsets ``start <= offset < stop`` (all of them exist)."""
        return [parse(self.where, m.offset(), m.headers(), m.timestamp()[1], m.value())
                for m in self.messages(start, stop)]

    def keyed(self, start: int, stop: int) -> list[tuple[int, bytes | None, bytes | None]]:
        """(offset, key, value) of the records from ``start`` up to ``stop`` (a compacted
        topic may have gaps in its offsets)."""
        return [(m.offset(), m.key(), m.value()) for m in self.messages(start, stop)]

    def messages(self, start: int, stop: int) -> list[Any]:
        """The messages at offsets ``start <= offset < stop``."""
        if start >= stop:
            return []
        if self._position != start:
            self._seek(start)
        position, self._position = start, None  # unknown until the read completes
        found: list[Any] = []
        deadline = time.monotonic() + self.timeout
        while position < stop:
            messages = self._consumer.consume(num_messages=min(_BATCH, stop - position),
                                              timeout=0.5)
            before = position
            for message in messages:
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    if not self.contiguous:  # the end of a compacted stretch
                        position = max(position, message.offset() or 0)
                    continue
                if error is not None:
                    self._fail(error, start)
                offset = message.offset() or 0
                if offset < position:
                    continue  # left from before a seek
                if offset > position and self.contiguous:
                    self._seek(position)  # record `position` not readable yet: fetch again
                    break
                if offset < stop:
                    found.append(message)
                position = offset + 1
            if position > before:
                deadline = time.monotonic() + self.timeout
            elif time.monotonic() > deadline:
                raise BusError(f"{self.where}: no record at offset {position} within "
                               f"{self.timeout:.0f} s")
        self._position = position
        return found

    def _seek(self, offset: int) -> None:
        self._consumer.assign([TopicPartition(self.topic, self.partition, offset)])

    def _fail(self, error: KafkaError, start: int) -> None:
        self._position = None
        if error.code() == KafkaError.OFFSET_OUT_OF_RANGE:
            raise SequenceRangeError(f"{self.where}: records from offset {start} were "
                                     f"removed by retention")
        raise BusError(f"{self.where}: {error.str()}")

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open, self._position = None, None


class ReaderPool:
    """A bus's readers, one per partition being read, at most a few at a time."""

    def __init__(self, factory: Callable[[str, int], PartitionReader]) -> None:
        self._factory = factory
        self._readers: OrderedDict[tuple[str, int], PartitionReader] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, topic: str, partition: int) -> PartitionReader:
        """The reader of the partition (lock it while using it)."""
        with self._lock:
            reader = self._readers.pop((topic, partition), None)
            if reader is None:
                reader = self._factory(topic, partition)
            self._readers[topic, partition] = reader
            while len(self._readers) > _POOL_SIZE:
                _, old = self._readers.popitem(last=False)
                with old.lock:
                    old.close()
            return reader

    def close(self) -> None:
        with self._lock:
            for reader in self._readers.values():
                with reader.lock:
                    reader.close()
            self._readers.clear()
