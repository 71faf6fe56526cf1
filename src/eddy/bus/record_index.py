"""Which stored record holds an event: a bounded, sorted cache of (first_seq, count, ref).

The NATS backend cannot ask JetStream "which message holds event 1234 of this subject"; it
learns record positions from every message it appends or reads and keeps them here, so
the common read — the range right after the previous one — costs a single lookup.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass


@dataclass(frozen=True)
class RecordRef:
    """A stored record: events ``first_seq .. first_seq + count - 1`` at ``ref``."""

    first_seq: int
    count: int
    ref: int

    @property
    def end_seq(self) -> int:
        """The sequence after the record's last event."""
        return self.first_seq + self.count

    def holds(self, seq: int) -> bool:
        return self.first_seq <= seq < self.end_seq


class RecordIndex:
    """Known records of one partition, sorted by ``first_seq``; forgets the oldest when full."""

    def __init__(self, capacity: int = 65_536) -> None:
        self._capacity = capacity
        self._firsts: list[int] = []
        self._records: list[RecordRef] = []

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: RecordRef) -> None:
        i = bisect_right(self._firsts, record.first_seq)
        if i and self._firsts[i - 1] == record.first_seq:
            self._records[i - 1] = record
            return
        self._firsts.insert(i, record.first_seq)
        self._records.insert(i, record)
        if len(self._records) > self._capacity:
            half = self._capacity // 2
            del self._firsts[:half], self._records[:half]

    def floor(self, seq: int) -> RecordRef | None:
        """The known record with the largest ``first_seq <= seq``."""
        i = bisect_right(self._firsts, seq)
        return self._records[i - 1] if i else None

    def after(self, seq: int) -> RecordRef | None:
        """The known record with the smallest ``first_seq > seq``."""
        i = bisect_right(self._firsts, seq)
        return self._records[i] if i < len(self._records) else None

    def holding(self, seq: int) -> RecordRef | None:
        """The known record holding event ``seq``."""
        record = self.floor(seq)
        return record if record is not None and record.holds(seq) else None

    def forget(self, record: RecordRef) -> None:
        i = bisect_right(self._firsts, record.first_seq)
        if i and self._records[i - 1] == record:
            del self._firsts[i - 1], self._records[i - 1]

    def forget_below(self, seq: int) -> None:
        """Drops records that start below ``seq`` (removed by retention)."""
        i = bisect_right(self._firsts, seq - 1)
        del self._firsts[:i], self._records[:i]
