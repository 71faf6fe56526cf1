"""Partition routing reproduces Java's hashCode, so a key lands where WSO2 puts it."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from eddy.bus import routing
from eddy.lang.ast import AttrType

INT_MIN = -(2**31)


@pytest.mark.parametrize(("text", "java"), [
    ("", 0),
    ("a", 97),
    ("abc", 96354),
    ("hello", 99162322),
    ("Hello World", -862545276),
    ("Aa", 2112),  # the classic collision:
    ("BB", 2112),  # "Aa" and "BB" hash alike in Java
    ("polygenelubricants", INT_MIN),  # the String whose hashCode is Integer.MIN_VALUE
    ("roomNo", -925319172),
    ("é", 233),
    ("\U0001F600", 0xD83D * 31 + 0xDE00),  # hashed by UTF-16 code units (a surrogate pair)
])
def test_string_hash_matches_java(text: str, java: int) -> None:
    assert routing.java_string_hash(text) == java


def test_boxed_hashes_match_java() -> None:
    assert routing.java_int_hash(-5) == -5
    assert routing.java_long_hash(1 << 32) == 1
    assert routing.java_long_hash(-1) == 0
    assert routing.java_long_hash(-(2**63)) == INT_MIN
    assert routing.java_double_hash(1.0) == 1072693248
    assert routing.java_double_hash(0.0) == 0
    assert routing.java_double_hash(-0.0) == INT_MIN
    assert routing.java_double_hash(math.nan) == 2146959360
    assert routing.java_float_hash(1.0) == 1065353216
    assert routing.java_float_hash(math.nan) == 0x7FC00000
    assert routing.java_boolean_hash(True) == 1231
    assert routing.java_boolean_hash(False) == 1237


def test_partition_is_abs_hash_modulo_count() -> None:
    assert routing.partition_for("a", AttrType.STRING, 4) == 97 % 4
    assert routing.partition_for("Hello World", AttrType.STRING, 7) == 862545276 % 7
    # Java's Math.abs(Integer.MIN_VALUE) overflows; eddy uses 2**31.
    assert routing.partition_for("polygenelubricants", AttrType.STRING, 3) == 2**31 % 3
    assert routing.partition_for(None, AttrType.STRING, 5) == 0


@pytest.mark.parametrize(("attr_type", "values"), [
    (AttrType.STRING, ["", "a", "room7", "Hello World", "polygenelubricants", None, "x" * 300]),
    (AttrType.STRING, ["é", "日本語", "\U0001F600 ok", None, "plain"]),  # not all ASCII
    (AttrType.OBJECT, ['{"a": 1}', "[1, 2]", None]),
    (AttrType.INT, [0, 1, -1, 2**31 - 1, -(2**31), None]),
    (AttrType.LONG, [0, 1, -1, 2**63 - 1, -(2**63), 1 << 32, None]),
    (AttrType.DOUBLE, [0.0, -0.0, 1.5, -2.25, math.inf, math.nan, 1e300, None]),
    (AttrType.FLOAT, [0.0, -0.0, 1.5, math.nan, None]),
    (AttrType.BOOL, [True, False, None]),
])
def test_vectorised_routing_equals_per_value_routing(attr_type: AttrType, values: list[object]
                                                     ) -> None:
    arrow_types = {AttrType.STRING: pa.string(), AttrType.OBJECT: pa.string(),
                   AttrType.INT: pa.int32(), AttrType.LONG: pa.int64(),
                   AttrType.DOUBLE: pa.float64(), AttrType.FLOAT: pa.float32(),
                   AttrType.BOOL: pa.bool_()}
    column = pa.array(values, type=arrow_types[attr_type])
    for partitions in (1, 2, 3, 8, 13):
        expected = [routing.partition_for(v, attr_type, partitions) for v in values]
        assert routing.key_partitions(column, attr_type, partitions).tolist() == expected


def test_vectorised_string_routing_on_a_sliced_chunked_column() -> None:
    words = [f"key-{i}" for i in range(1000)]
    column = pa.chunked_array([pa.array(words[:400]), pa.array(words[400:])]).slice(123, 600)
    expected = [routing.partition_for(w, AttrType.STRING, 6) for w in words[123:723]]
    assert routing.key_partitions(column, AttrType.STRING, 6).tolist() == expected


def test_round_robin_spreads_rows_evenly_from_the_start_partition() -> None:
    assert routing.round_robin_partitions(7, 3, 2).tolist() == [2, 0, 1, 2, 0, 1, 2]
    counts = np.bincount(routing.round_robin_partitions(1000, 4, 1), minlength=4)
    assert counts.tolist() == [250, 250, 250, 250]


def test_split_keeps_row_order_within_each_partition() -> None:
    table = pa.table({"n": list(range(10))})
    parts = routing.split(table, np.array([1, 0, 1, 2, 0, 1, 2, 2, 0, 1]), 4)
    assert [(p, t.column("n").to_pylist()) for p, t in parts] == [
        (0, [1, 4, 8]), (1, [0, 2, 5, 9]), (2, [3, 6, 7])]
