"""Which Kafka records of a partition count, and which events they hold: the record chain.

Kafka numbers *records*; the bus numbers *events* 0, 1, 2, … without gaps per partition,
and Kafka has no conditional append to allocate event sequences atomically across
writers. So every record says where it belongs, in headers:

* ``eddy-first`` — the sequence of its first event, ``eddy-count`` — how many it holds;
* ``eddy-prev`` — the offset of the record it follows (the last valid record its writer
  knew of; -1 for the first record of a partition);
* ``eddy-key`` — the append's key (``<producer>:<batch id>:<record index>``, or a random
  one), by which a replayed batch is recognised.

**The rule.** A record is *valid* — its events exist — iff it is the first record after
offset ``prev`` that names ``prev``. Writers only ever name a valid record as ``prev`` and
give ``first`` = that record's end, so the valid records form one chain whose events are
numbered without gaps; a record that lost a race (another writer appended after the same
``prev`` first) is invalid, holds no events, and its writer appends again after the
winner. Every reader applies the same rule to the same immutable log, so all agree.

Walking forward from a valid record ``v`` the next valid record is simply the first one
with ``prev == v.offset``. Without a known valid record (a process reading a partition for
the first time), a window of consecutive records still decides some of them: a record
whose ``prev`` lies inside the window (or just before it) is valid iff no record between
``prev`` and it names the same ``prev`` (:func:`anchor`). Without races every record names
its predecessor, so the first record of any window is such an *anchor*. The first
record of the log is valid by construction (the first claimant of -1 at offset 0, or —
after retention removed records — the valid record retention kept first).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eddy.bus.errors import BusError

FIRST, COUNT, PREV, KEY = "eddy-first", "eddy-count", "eddy-prev", "eddy-key"


@dataclass(frozen=True)
class Record:
    """One Kafka record of a data topic: where it is, what it claims, and its bytes."""

    offset: int
    first: int
    count: int
    prev: int
    key: str
    timestamp_ms: int
    value: bytes

    @property
    def end(self) -> int:
        """The sequence after the record's last event."""
        return self.first + self.count

    def holds(self, seq: int) -> bool:
        return self.first <= seq < self.end


def headers(first: int, count: int, prev: int, key: str
            ) -> list[tuple[str, str | bytes | None]]:
    """The headers a record of events ``first .. first + count - 1`` after ``prev`` carries."""
    return [(FIRST, str(first).encode()), (COUNT, str(count).encode()),
            (PREV, str(prev).encode()), (KEY, key.encode())]


def parse(where: str, offset: int, pairs: Sequence[tuple[str, bytes | None]] | None,
          timestamp_ms: int, value: bytes | None) -> Record:
    """The record at ``offset`` from its Kafka headers; :class:`BusError` if eddy did not
    write it."""
    found = {name: data for name, data in pairs or () if data is not None}
    try:
        return Record(offset, int(found[FIRST]), int(found[COUNT]), int(found[PREV]),
                      found[KEY].decode(), timestamp_ms, value or b"")
    except (KeyError, ValueError):
        raise BusError(f"{where}: the record at offset {offset} has no {FIRST}/{COUNT}/"
                       f"{PREV}/{KEY} headers; it was not written by eddy") from None


def anchor(window: Sequence[Record], log_start: int) -> int | None:
    """The index in ``window`` (records at consecutive offsets) of the first record whose
    validity the window decides and which is valid; None if there is none."""
    if not window:
        return None
    start = window[0].offset
    if start == log_start:
        return 0
    for i, record in enumerate(window):
        if record.prev < start - 1:
            continue  # its competitors may lie before the window
        between = window[max(record.prev - start + 1, 0):i]
        if all(other.prev != record.prev for other in between):
            return i
    return None


def follow(last_valid: int, records: Iterable[Record]) -> list[Record]:
    """The valid records among ``records`` (consecutive, right after ``last_valid``'s
    offset or further on), given the offset of the last valid record before them."""
    chain = []
    for record in records:
        if record.prev == last_valid:
            chain.append(record)
            last_valid = record.offset
    return chain
