"""Where an incremental aggregation keeps its buckets.

A store holds one row per ``(granularity, AGG_TIMESTAMP, SHARD_ID, group key)``: the bucket
start (epoch millis, UTC), the writing node's shard id (``None`` unless sharded) and the
``group by`` values. A row's *base values* are a list laid out by
:class:`~eddy.runtime.aggregation.values.BasePlan`: the event time and data of the
bucket's latest event (for plain attributes, "last value wins"), then one value per base
column (``AGG_SUM_x``, ``AGG_COUNT``, ``AGG_MIN_x``, ``AGG_MAX_x``, ``AGG_SET_x``).

:class:`AggregationStore` is the interface the runtime writes and reads through.
:class:`InMemoryAggregationStore` is the default; its contents are plain picklable data and
travel in the runtime's snapshot. The RDBMS store (``@store(type='rdbms', …)``,
:mod:`eddy.runtime.aggregation.rdbms`) keeps WSO2's tables and only the rows of
open arrival buckets in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

__all__ = ["AggregationStore", "BaseValues", "BucketKey", "InMemoryAggregationStore"]

BucketKey = tuple[int, str | None, tuple[Any, ...]]
"""``(AGG_TIMESTAMP, SHARD_ID, group key)`` of a row within one granularity."""

BaseValues = list[Any]


class AggregationStore(Protocol):
    """Bucket rows of one aggregation, per granularity."""

    def get(self, granularity: str, key: BucketKey) -> BaseValues | None:
        """The row ``key`` of ``granularity``, or None."""
        ...

    def upsert(self, granularity: str, rows: Iterable[tuple[BucketKey, BaseValues]]) -> None:
        """Writes whole rows (inserting or replacing): idempotent."""
        ...

    def scan(self, granularity: str, start: int, end: int
             ) -> Iterator[tuple[BucketKey, BaseValues]]:
        """The rows of ``granularity`` with ``start <= AGG_TIMESTAMP < end``, oldest bucket
        first, rows of one bucket in insertion order."""
        ...

    def open(self, arrival: int) -> int:
        """The arrival clock moved to ``arrival``; returns the arrival time at which the
        store must be told again (a bucket of some granularity closes then)."""
        ...

    def purge(self, granularity: str, before: int) -> None:
        """Deletes the rows of ``granularity`` whose bucket starts before ``before``."""
        ...

    def get_state(self) -> Any:
        """What a runtime snapshot must carry to restore the store (None for an external
        store)."""
        ...

    def set_state(self, state: Any) -> None:
        ...


class InMemoryAggregationStore:
    """Rows in dictionaries: ``granularity -> AGG_TIMESTAMP -> (SHARD_ID, key) -> values``."""

    def __init__(self, granularities: Iterable[str]) -> None:
        self.granularities = tuple(granularities)
        self.rows: dict[str, dict[int, dict[tuple[str | None, tuple[Any, ...]], BaseValues]]] = {
            g: {} for g in self.granularities}

    def get(self, granularity: str, key: BucketKey) -> BaseValues | None:
        bucket = self.rows[granularity].get(key[0])
        if bucket is None:
            return None
        return bucket.get((key[1], key[2]))

    def upsert(self, granularity: str, rows: Iterable[tuple[BucketKey, BaseValues]]) -> None:
        buckets = self.rows[granularity]
        for (timestamp, shard, group), values in rows:
            bucket = buckets.get(timestamp)
            if bucket is None:
                bucket = buckets[timestamp] = {}
            bucket[(shard, group)] = values

    def scan(self, granularity: str, start: int, end: int
             ) -> Iterator[tuple[BucketKey, BaseValues]]:
        buckets = self.rows[granularity]
        for timestamp in sorted(t for t in buckets if start <= t < end):
            for (shard, group), values in buckets[timestamp].items():
                yield (timestamp, shard, group), values

    def open(self, arrival: int) -> int:
        return 1 << 62  # every bucket is one row over all arrivals: nothing closes

    def purge(self, granularity: str, before: int) -> None:
        buckets = self.rows[granularity]
        for timestamp in [t for t in buckets if t < before]:
            del buckets[timestamp]

    def get_state(self) -> Any:
        return self.rows

    def set_state(self, state: Any) -> None:
        self.rows = {g: dict(state.get(g, {})) for g in self.granularities}
