"""Which partition an event goes to: Java ``hashCode`` of the key, or round-robin.

WSO2 Stream Processor spreads a partitioned stream over its destinations with
``partitionKeyValue.hashCode() % destinationCount`` (``PartitionedDistributionStrategy``),
where the key is a Java ``String``. eddy computes the same hash so that a key lands on the
same partition number as in WSO2:

* ``string`` (and ``object``, which travels as JSON text) keys: ``String.hashCode`` over
  the UTF-16 code units, ``s[0]*31^(n-1) + … + s[n-1]`` in 32-bit arithmetic.
* other key types, which WSO2's strategy cannot partition by, use the hash of the boxed
  Java value: ``Integer.hashCode`` (the value), ``Long.hashCode`` (``(int)(v ^ (v >>> 32))``),
  ``Double.hashCode``/``Float.hashCode`` (of ``doubleToLongBits``/``floatToIntBits``, NaN
  canonical) and ``Boolean.hashCode`` (1231/1237).

The partition is ``abs(hash) % partitions``. WSO2 skips the ``abs``, so its negative hashes
select no destination and the event is dropped; eddy keeps those events and, for the one
hash whose Java ``Math.abs`` overflows (``Integer.MIN_VALUE``), uses ``2**31 % partitions``.
Null keys go to partition 0.

Everything here works on whole Arrow columns with numpy, because the bus routes batches of
thousands of events at a time.
"""

from __future__ import annotations

import math
import struct
from typing import Any, cast

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]

from eddy.lang.ast import AttrType

_MASK32 = 0xFFFF_FFFF
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF
_DOUBLE_NAN_BITS = 0x7FF8_0000_0000_0000
_FLOAT_NAN_BITS = 0x7FC0_0000


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``"a"`` → 97, ``"hello"`` → 99162322."""
    if text.isascii():
        units: bytes | tuple[int, ...] = text.encode("ascii")
    else:
        data = text.encode("utf-16-be", "surrogatepass")  # a lone surrogate is one unit
        units = struct.unpack(f">{len(data) // 2}H", data)
    h = 0
    for unit in units:
        h = (31 * h + unit) & _MASK32
    return _int32(h)


def java_int_hash(value: int) -> int:
    """Java's ``Integer.hashCode``: the value itself."""
    return _int32(value)


def java_long_hash(value: int) -> int:
    """Java's ``Long.hashCode``: ``(int)(value ^ (value >>> 32))``."""
    bits = value & _MASK64
    return _int32(bits ^ (bits >> 32))


def java_double_hash(value: float) -> int:
    """Java's ``Double.hashCode``: the long hash of ``doubleToLongBits(value)``."""
    bits = _DOUBLE_NAN_BITS if math.isnan(value) else \
        struct.unpack(">q", struct.pack(">d", value))[0]
    return java_long_hash(bits)


def java_float_hash(value: float) -> int:
    """Java's ``Float.hashCode``: ``floatToIntBits(value)``."""
    if math.isnan(value):
        return _FLOAT_NAN_BITS
    return int(struct.unpack(">i", struct.pack(">f", value))[0])


def java_boolean_hash(value: bool) -> int:
    """Java's ``Boolean.hashCode``: 1231 for true, 1237 for false."""
    return 1231 if value else 1237


def java_hash(value: object, attr_type: AttrType) -> int:
    """The Java hash eddy routes a key of ``attr_type`` by (see the module docstring)."""
    if attr_type in (AttrType.STRING, AttrType.OBJECT):
        return java_string_hash(str(value))
    if attr_type is AttrType.INT:
        return java_int_hash(int(value))  # type: ignore[call-overload]
    if attr_type is AttrType.LONG:
        return java_long_hash(int(value))  # type: ignore[call-overload]
    if attr_type is AttrType.DOUBLE:
        return java_double_hash(float(value))  # type: ignore[arg-type]
    if attr_type is AttrType.FLOAT:
        return java_float_hash(float(value))  # type: ignore[arg-type]
    return java_boolean_hash(bool(value))


def partition_for(value: object, attr_type: AttrType, partitions: int) -> int:
    """The partition of one key value (None → 0)."""
    if value is None:
        return 0
    return abs(java_hash(value, attr_type)) % partitions


def key_partitions(column: pa.Array[Any] | pa.ChunkedArray[Any], attr_type: AttrType,
                   partitions: int) -> np.ndarray:
    """The partition of every row, from its key column (vectorised :func:`partition_for`)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    hashes = _hashes(array, attr_type)
    result: np.ndarray = np.abs(hashes) % partitions  # int64: abs(MIN_VALUE) cannot overflow
    if array.null_count:
        result[array.is_null().to_numpy(zero_copy_only=False)] = 0
    return result


def round_robin_partitions(rows: int, partitions: int, start: int) -> np.ndarray:
    """Row ``i`` goes to ``(start + i) % partitions``, as WSO2's roundRobin strategy does."""
    return (np.arange(rows, dtype=np.int64) + start) % partitions


def split(table: pa.Table, assignment: np.ndarray, partitions: int) -> list[tuple[int, pa.Table]]:
    """The rows of each partition, in their original order; partitions without rows omitted."""
    counts = np.bincount(assignment, minlength=partitions)
    if np.count_nonzero(counts) == 1:
        return [(int(np.flatnonzero(counts)[0]), table)]
    ordered = table.take(np.argsort(assignment, kind="stable"))
    parts, offset = [], 0
    for partition, count in enumerate(counts.tolist()):
        if count:
            parts.append((partition, ordered.slice(offset, count)))
            offset += count
    return parts


# -- vectorised hashes (int64 arrays holding 32-bit signed Java hashes) ------------------------


def _hashes(array: pa.Array[Any], attr_type: AttrType) -> np.ndarray:
    if attr_type in (AttrType.STRING, AttrType.OBJECT):
        return _string_hashes(array)
    if attr_type is AttrType.BOOL:
        values = array.fill_null(False).to_numpy(zero_copy_only=False)
        return np.where(values, 1231, 1237).astype(np.int64)
    if attr_type is AttrType.INT:
        return np.asarray(array.fill_null(0).to_numpy(), dtype=np.int64)
    if attr_type is AttrType.FLOAT:
        floats = np.asarray(array.fill_null(0.0).to_numpy(), dtype=np.float32)
        bits = floats.view(np.int32).copy()
        bits[np.isnan(floats)] = _FLOAT_NAN_BITS
        return bits.astype(np.int64)
    if attr_type is AttrType.DOUBLE:
        doubles = np.asarray(array.fill_null(0.0).to_numpy(), dtype=np.float64)
        longs = doubles.view(np.int64).copy()
        longs[np.isnan(doubles)] = _DOUBLE_NAN_BITS
        return _long_hashes(longs)
    return _long_hashes(np.asarray(array.fill_null(0).to_numpy(), dtype=np.int64))


def _long_hashes(values: np.ndarray) -> np.ndarray:
    bits = values.view(np.uint64)
    folded = (bits ^ (bits >> np.uint64(32))).astype(np.uint32)
    return folded.view(np.int32).astype(np.int64)


_pow31 = np.ones(1, dtype=np.uint64)


def _powers_of_31(count: int) -> np.ndarray:
    """``31**k mod 2**32`` for k < count (grown by doubling and kept)."""
    global _pow31
    while len(_pow31) < count:
        n = len(_pow31)
        step = np.uint64(pow(31, n, 1 << 32))
        _pow31 = np.concatenate([_pow31, (_pow31 * step) & np.uint64(_MASK32)])
    return _pow31[:count]


def _string_hashes(array: pa.Array[Any]) -> np.ndarray:
    array = array.cast(pa.large_string())
    if len(array) == 0:
        return np.zeros(0, dtype=np.int64)
    if pc.all(pc.string_is_ascii(array)).as_py() is not False:  # None: every value null
        return _ascii_hashes(array)
    # Non-ASCII text hashes by UTF-16 code unit; do it once per distinct value.
    encoded = cast("pa.DictionaryArray[Any, Any]", pc.dictionary_encode(array))
    table = np.array([java_string_hash(str(s)) for s in encoded.dictionary.to_pylist()] or [0],
                     dtype=np.int64)
    hashes: np.ndarray = table[encoded.indices.fill_null(0).to_numpy()]
    return hashes


def _ascii_hashes(array: pa.Array[Any]) -> np.ndarray:
    """String.hashCode of ASCII strings: one byte is one UTF-16 unit, so sum b*31^k by numpy."""
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(cast(bytes, offsets_buffer), dtype=np.int64,
                            count=len(array) + 1, offset=array.offset * 8)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if hi == lo:
        return np.zeros(len(array), dtype=np.int64)
    data = np.frombuffer(cast(bytes, data_buffer), dtype=np.uint8, count=hi - lo, offset=lo)
    lengths = np.diff(offsets)
    ends = np.repeat(offsets[1:], lengths)  # per byte: the end of its string
    exponents = ends - 1 - np.arange(lo, hi, dtype=np.int64)
    terms = data.astype(np.uint64) * _powers_of_31(int(lengths.max()))[exponents]
    # Sums wrap modulo 2**64, which keeps them right modulo 2**32.
    sums = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(terms, dtype=np.uint64)])
    rel = offsets - lo
    folded = ((sums[rel[1:]] - sums[rel[:-1]]) & np.uint64(_MASK32)).astype(np.uint32)
    hashes: np.ndarray = folded.view(np.int32).astype(np.int64)
    return hashes
