"""State keys spread over the shuffle partitions: the hash is Spark's, the spread is even,
and Spark's own shuffle puts each bucket where :mod:`eddy.engine.operators.state_keys` says."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eddy.engine.operators.state_keys import (
    hash_bucket,
    key_values,
    murmur3_int,
    partition_of,
    shuffle_partitions,
    spread,
)


def test_the_hash_is_sparks(spark: SparkSession) -> None:
    rng = random.Random(7)
    values = [0, 1, -1, 2**31 - 1, -(2**31), *range(-40, 40, 7),
              *(rng.randint(-(2**31), 2**31 - 1) for _ in range(2000))]
    frame = spark.createDataFrame([(v,) for v in values], "v int")
    assert [row[0] for row in frame.select(F.hash("v")).collect()] == \
        [murmur3_int(v) for v in values]


@given(st.integers(1, 64), st.integers(1, 16))
def test_buckets_share_the_partitions_as_evenly_as_their_count_allows(
        buckets: int, partitions: int) -> None:
    keys = key_values(buckets, partitions)
    assert len(set(keys)) == buckets
    per_partition = Counter(partition_of(k, partitions) for k in keys)
    assert max(per_partition.values()) - min(per_partition.values(), default=0) <= 1
    assert len(per_partition) == min(buckets, partitions)


def test_plain_bucket_numbers_are_uneven_which_is_why_the_keys_exist() -> None:
    assert Counter(partition_of(b, 2) for b in range(4)) == Counter({1: 3, 0: 1})


def test_sparks_shuffle_sends_each_bucket_to_the_partition_chosen_for_it(
        spark: SparkSession) -> None:
    partitions = shuffle_partitions(spark)
    buckets = 2 * partitions + 1
    frame = (spark.range(buckets).select(F.col("id").cast("int").alias("bucket"))
             .withColumn("_key", spread(F.col("bucket"), buckets, spark))
             .repartition(partitions, "_key")
             .select("bucket", F.spark_partition_id().alias("partition")))
    placed = {row.bucket: row.partition for row in frame.collect()}
    assert placed == {b: b % partitions for b in range(buckets)}


def test_a_hash_bucket_keeps_equal_values_together(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(v % 10,) for v in range(100)], "v long")
    keyed = frame.select("v", hash_bucket([F.col("v")], 4, spark).alias("_key")).collect()
    by_value: dict[int, set[int]] = {}
    for row in keyed:
        by_value.setdefault(row.v, set()).add(row._key)
    assert all(len(keys) == 1 for keys in by_value.values())
    assert {k for keys in by_value.values() for k in keys} <= set(
        key_values(4, shuffle_partitions(spark)))
