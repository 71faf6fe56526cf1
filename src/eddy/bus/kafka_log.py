"""What a process knows of one partition's record chain, and how it learns more.

A :class:`PartitionLog` holds the last valid record known (the partition's end), an index
of valid records read or written (:class:`~eddy.bus.record_index.RecordIndex`, offsets as
refs), and the append keys of valid records seen, for de-duplication. The rules that make
a record valid are in :mod:`eddy.bus.kafka_chain`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from eddy.bus.errors import BusError
from eddy.bus.kafka_chain import Record, anchor, follow
from eddy.bus.kafka_fetch import PartitionReader
from eddy.bus.record_index import RecordIndex, RecordRef

_KEYS_KEPT = 100_000
_PROBE_RECORDS = 4
_JUMP_RECORDS = 16
_SCAN_CHUNK = 64


@dataclass
class PartitionLog:
    """This process's knowledge of one partition (guarded by ``lock``)."""

    topic: str
    partition: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    known: bool = False
    """Whether ``last`` and ``scanned_to`` are set."""
    last: RecordRef = RecordRef(0, 0, -1)
    """The last valid record below ``scanned_to`` (offset -1, end 0: none)."""
    scanned_to: int = 0
    index: RecordIndex = field(default_factory=RecordIndex)
    keys: OrderedDict[str, RecordRef] = field(default_factory=OrderedDict)
    deduped: bool = False
    """Whether ``keys`` holds the key of every valid record of the de-duplication window."""

    @property
    def where(self) -> str:
        return f"Kafka topic '{self.topic}' partition {self.partition}"

    @property
    def end(self) -> int:
        return self.last.end_seq

    def learn(self, records: Iterable[Record]) -> None:
        """Adds valid records to the index and the key memory."""
        for record in records:
            ref = RecordRef(record.first, record.count, record.offset)
            self.index.add(ref)
            self.keys[record.key] = ref
        while len(self.keys) > _KEYS_KEPT:
            self.keys.popitem(last=False)

    def advance(self, records: list[Record]) -> None:
        """Follows the chain through ``records`` (consecutive, from ``scanned_to``)."""
        chain = follow(self.last.ref, records)
        self.learn(chain)
        if chain:
            last = chain[-1]
            self.last = RecordRef(last.first, last.count, last.offset)
        if records:
            self.scanned_to = records[-1].offset + 1


def catch_up(log: PartitionLog, reader: PartitionReader, *, jump: bool = False) -> None:
    """Brings ``log`` to the partition's current end. Reads every new record, unless
    ``jump`` allows finding the end from the last few (the keys in between stay unknown)."""
    low, high = reader.watermarks()
    if not log.known or (jump and high - log.scanned_to > _JUMP_RECORDS):
        bootstrap(log, reader, low, high)
    elif high > log.scanned_to:
        log.advance(reader.records(log.scanned_to, high))


def bootstrap(log: PartitionLog, reader: PartitionReader, low: int, high: int) -> None:
    """Finds the chain's end from the last few records, without reading the whole log."""
    log.deduped = False
    if high <= low:
        log.known, log.scanned_to = True, high
        return
    span = _PROBE_RECORDS
    while True:
        start = max(low, high - span)
        window = reader.records(start, high)
        found = anchor(window, low)
        if found is not None:
            head = window[found]
            log.last = RecordRef(head.first, head.count, head.offset)
            log.learn([head])
            log.scanned_to = head.offset + 1
            log.known = True
            log.advance(window[found + 1:])
            return
        if start == low:
            raise BusError(f"{log.where}: no valid eddy record among offsets {low}..{high}")
        span *= 4


def scan_keys(log: PartitionLog, reader: PartitionReader, low: int, since_ms: int) -> None:
    """Learns the keys of the valid records appended since ``since_ms`` (epoch ms), walking
    the chain backwards from its end by the records' ``prev`` offsets."""
    offset = log.last.ref
    while offset >= low:
        chunk = {r.offset: r for r in reader.records(max(low, offset - _SCAN_CHUNK + 1),
                                                     offset + 1)}
        while offset in chunk:
            record = chunk[offset]
            if record.timestamp_ms < since_ms:
                log.deduped = True
                return
            log.learn([record])
            offset = record.prev
    log.deduped = True


def probe(log: PartitionLog, reader: PartitionReader, offset: int, low: int, high: int
          ) -> Record | None:
    """The first valid record at or after ``offset`` that a short read decides, or None."""
    span = _PROBE_RECORDS
    while offset < high:
        window = reader.records(offset, min(high, offset + span))
        found = anchor(window, low)
        if found is not None:
            log.learn([window[found]])
            return window[found]
        if offset + span >= high:
            return None
        span *= 4
    return None


def locate(log: PartitionLog, reader: PartitionReader, seq: int, low: int) -> int | None:
    """The offset of the valid record holding event ``seq``: by the index when it knows,
    else by a binary search of offsets; None when the search cannot tell."""
    known = log.index.holding(seq)
    if known is not None:
        return known.ref
    lo, hi = low, log.scanned_to - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        found = probe(log, reader, mid, low, log.scanned_to)
        while found is not None and found.first > seq and found.prev >= mid:
            found = reader.records(found.prev, found.prev + 1)[0]  # valid: a valid one's prev
            log.learn([found])
        if found is None or found.first > seq:
            hi = mid - 1
        elif found.holds(seq):
            return found.offset
        else:
            lo = found.offset + 1
    return None


def chain_from(log: PartitionLog, reader: PartitionReader, low: int) -> list[Record]:
    """Every valid record from the log's start to ``scanned_to`` (a full read)."""
    window = reader.records(low, log.scanned_to)
    found = anchor(window, low)
    if found is None:
        return []
    chain = [window[found], *follow(window[found].offset, window[found + 1:])]
    log.learn(chain)
    return chain
