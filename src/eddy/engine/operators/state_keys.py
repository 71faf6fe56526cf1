"""State keys that spread a stateful operator's buckets evenly over the shuffle partitions.

A Python stateful operator splits its work into a few state keys (hash buckets of a
partition value), and Spark sends each key to the shuffle partition
``pmod(murmur3(key), partitions)``, one task each. With the plain bucket numbers as keys
that is uneven: on two partitions the keys 0–3 hash 3 : 1 and 0–7 hash 5 : 3, so one core
worked through three quarters of a four-bucket pattern while the other sat idle (measured:
the operator's stage took as long as its larger task, ~750 ms of a ~1 s micro-batch).

:func:`spread` gives bucket ``b`` the smallest key value not taken whose partition is
``b mod partitions``, so the buckets share the partitions as evenly as their count allows.
Only the work's placement depends on it, never a result: a checkpoint started with another
partition count (Spark keeps the first one) still runs correctly, merely unevenly.
"""

from __future__ import annotations

from functools import lru_cache

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

SEED = 42
"""The seed of Spark's ``hash()`` and of its hash partitioning."""


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & 0xFFFFFFFF


def murmur3_int(value: int, seed: int = SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt``: the hash an int column's value partitions by."""
    k1 = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k1 = _rotl(k1, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = _rotl(seed ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_of(value: int, partitions: int) -> int:
    """The shuffle partition of an int key ``value`` (Spark's ``HashPartitioning``)."""
    return murmur3_int(value) % partitions


@lru_cache(maxsize=64)
def key_values(buckets: int, partitions: int) -> tuple[int, ...]:
    """Per bucket, its key: bucket ``b`` lands on partition ``b mod partitions``."""
    chosen: list[int] = []
    candidate = 0
    for bucket in range(buckets):
        while partition_of(candidate, partitions) != bucket % partitions:
            candidate += 1
        chosen.append(candidate)
        candidate += 1
    return tuple(chosen)


def shuffle_partitions(spark: SparkSession) -> int:
    """The partitions a stateful operator's new checkpoint gets (Spark keeps them after)."""
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or "1"))


def spread(bucket: Column, buckets: int, spark: SparkSession) -> Column:
    """The state key of ``bucket`` (an int in ``[0, buckets)``), spread over the session's
    shuffle partitions."""
    values = key_values(buckets, shuffle_partitions(spark))
    return F.element_at(F.array(*(F.lit(v) for v in values)), bucket + 1)


def hash_bucket(columns: list[Column], buckets: int, spark: SparkSession) -> Column:
    """The spread state key of the hash bucket of ``columns``' values."""
    return spread(F.pmod(F.hash(*columns), F.lit(buckets)), buckets, spark)


__all__ = ["hash_bucket", "key_values", "murmur3_int", "partition_of", "shuffle_partitions",
           "spread"]
