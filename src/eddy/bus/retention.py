"""Retention: which stored batches of a partition may be removed.

A partition's log only ever loses a *prefix* of whole stored batches, so sequences stay
contiguous from the first retained event to the end. A batch is removable when

* every event in it lies below the lowest position committed on the partition by any
  consumer (``last_seq < protect_from``) — a committed position is never trimmed away;
  with no consumer on the partition nothing is protected — and
* it is older than ``max_age_ms`` (by the time it was appended), or the partition holds
  more than ``max_bytes`` of stored batches without it and the batches before it.

The last stored batch of a partition is always kept: the NATS backend needs it to know
where the partition's sequence stands, and the SQLite backend keeps it too so that both
trim alike (they feed their batch lists through :func:`removable_prefix`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Retention:
    """Limits on what a bus keeps, per topic partition (like Kafka's ``retention.ms/bytes``).

    None means no limit; with both None nothing is ever removed.
    """

    max_age_ms: int | None = None
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_age_ms", "max_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"retention {name} must be >= 0, got {value}")

    @property
    def unlimited(self) -> bool:
        """True when nothing would ever be removed."""
        return self.max_age_ms is None and self.max_bytes is None


@dataclass(frozen=True)
class StoredBatch:
    """What retention needs to know about one stored batch of events."""

    first_seq: int
    last_seq: int
    appended_at_ms: int
    nbytes: int
    ref: int = 0
    """The backend's handle for the batch (SQLite row id, JetStream stream sequence)."""

    @property
    def count(self) -> int:
        return self.last_seq - self.first_seq + 1


def removable_prefix(batches: Iterable[StoredBatch], retention: Retention, *,
                     protect_from: int | None, now_ms: int, total_bytes: int,
                     at_most: int) -> list[StoredBatch]:
    """The leading ``batches`` (oldest first) that retention removes now.

    ``protect_from`` is the lowest committed position on the partition (None when no
    consumer committed one), ``total_bytes`` the size of the whole partition and
    ``at_most`` how many batches may go (the partition's count less those always kept).
    ``batches`` is consumed lazily and only as far as needed.
    """
    removable: list[StoredBatch] = []
    if retention.unlimited:
        return removable
    total = total_bytes
    for batch in batches:
        if len(removable) >= at_most:
            break
        if protect_from is not None and batch.last_seq >= protect_from:
            break
        too_old = retention.max_age_ms is not None \
            and batch.appended_at_ms < now_ms - retention.max_age_ms
        too_big = retention.max_bytes is not None and total > retention.max_bytes
        if not (too_old or too_big):
            break
        total -= batch.nbytes
        removable.append(batch)
    return removable
