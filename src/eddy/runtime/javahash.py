"""Java's string forms, object hashes and hash-map iteration orders.

Several reference windows iterate a ``ConcurrentHashMap`` or ``HashMap`` keyed by strings
(``session`` sorts its sessions by end time but breaks ties in map order, ``frequent`` and
``lossyFrequent`` expire events in map order) and build those keys with Java's
``String.valueOf``. Reproducing their output order means reproducing the maps' bucket
layout: the bucket is ``spread(String.hashCode()) & (n - 1)`` for a table of ``n`` slots,
the table doubles as it fills, and within a bucket nodes keep insertion order, except that
``ConcurrentHashMap``'s resize reverses the nodes before the last run of a split bucket.

:class:`ConcurrentHashOrder` keeps that layout as plain lists, so it pickles with the
window state. Tree bins (eight or more colliding keys in one bucket) are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from eddy.bus.routing import (
    java_boolean_hash,
    java_double_hash,
    java_long_hash,
    java_string_hash,
)
from eddy.runtime.java import java_float_text

_HASH_BITS = 0x7FFFFFFF


def java_hash(value: Any) -> int:
    """``Object.hashCode()`` of an attribute value as the JVM would compute it, chosen by the
    value's Python type (Python's own ``hash`` of a string changes from process to process)."""
    if value is None:
        return 0
    if value is True or value is False:
        return java_boolean_hash(value)
    if isinstance(value, str):
        return java_string_hash(value)
    if isinstance(value, float):
        return java_double_hash(value)
    if isinstance(value, int):  # an Integer when it fits 32 bits, else a Long
        return value if -(1 << 31) <= value < (1 << 31) else java_long_hash(value)
    if isinstance(value, (set, frozenset)):
        return sum(java_hash(v) for v in value) & 0xFFFFFFFF
    return hash(value) & 0x7FFFFFFF


def spread(h: int) -> int:
    """The bucket hash both maps use: the high half folded into the low half."""
    h &= 0xFFFFFFFF
    return (h ^ (h >> 16)) & _HASH_BITS


def java_str(value: Any, single: bool = False) -> str:
    """``String.valueOf(value)`` for an attribute value (``single``: a FLOAT attribute)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return java_float_text(value, single)
    return str(value)


def hash_map_order(keys: Iterable[str], capacity: int) -> list[str]:
    """The iteration order of a ``HashMap`` with ``capacity`` slots filled with ``keys`` in
    that order (its resizes keep bucket order, so only the final capacity matters)."""
    mask = capacity - 1
    indexed = [(spread(java_string_hash(k)) & mask, i, k) for i, k in enumerate(keys)]
    indexed.sort()
    return [k for _, _, k in indexed]


def hash_map_capacity(size: int, capacity: int = 16) -> int:
    """The capacity a ``HashMap`` of ``capacity`` slots grows to when it holds ``size`` keys."""
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


class ConcurrentHashOrder:
    """The key order of a ``java.util.concurrent.ConcurrentHashMap`` of string keys.

    Only the keys are kept (values live in an ordinary dict beside it); ``add`` of a key
    already present keeps its place, as ``put`` does.
    """

    __slots__ = ("bins", "size", "members")

    def __init__(self) -> None:
        self.bins: list[list[tuple[int, str]]] = []
        self.size = 0
        self.members: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self.members

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[str]:
        for bucket in self.bins:
            for _, key in bucket:
                yield key

    def add(self, key: str) -> None:
        if key in self.members:
            return
        if not self.bins:
            self.bins = [[] for _ in range(16)]
        h = spread(java_string_hash(key))
        self.bins[h & (len(self.bins) - 1)].append((h, key))
        self.members.add(key)
        self.size += 1
        n = len(self.bins)
        while self.size >= n - (n >> 2):  # sizeCtl is three quarters of the table
            self._transfer()
            n = len(self.bins)

    def remove(self, key: str) -> None:
        if key not in self.members:
            return
        h = spread(java_string_hash(key))
        bucket = self.bins[h & (len(self.bins) - 1)]
        for i, (_, k) in enumerate(bucket):
            if k == key:
                del bucket[i]
                break
        self.members.discard(key)
        self.size -= 1

    def _transfer(self) -> None:
        """Doubles the table as ``ConcurrentHashMap.transfer`` does, lastRun and all."""
        n = len(self.bins)
        new: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
        for i, bucket in enumerate(self.bins):
            if not bucket:
                continue
            run_bit = bucket[0][0] & n
            last_run = 0
            for j in range(1, len(bucket)):
                bit = bucket[j][0] & n
                if bit != run_bit:
                    run_bit, last_run = bit, j
            low: list[tuple[int, str]] = []
            high: list[tuple[int, str]] = []
            if run_bit == 0:
                low = list(bucket[last_run:])
            else:
                high = list(bucket[last_run:])
            for node in bucket[:last_run]:
                if node[0] & n == 0:
                    low.insert(0, node)
                else:
                    high.insert(0, node)
            new[i] = low
            new[i + n] = high
        self.bins = new
