"""Appended batches are checked and cast into a topic's layout; records are Arrow IPC."""

from __future__ import annotations

import pyarrow as pa
import pytest
from bus_samples import ALL_TYPES, readings, readings_spec

from eddy.bus import BatchSchemaError, TopicSpec, TopicSpecError
from eddy.bus import arrow_codec as codec
from eddy.lang.ast import Attribute, AttrType


def test_conform_casts_columns_and_stamps_missing_timestamps() -> None:
    spec = TopicSpec("T", ALL_TYPES)
    batch = pa.table({  # python ints arrive as int64 and must fit int32/float32 safely
        "o": ['{"k": 1}'], "b": [True], "s": ["x"], "d": [1], "f": [2], "l": [3], "i": [4],
    })
    table = codec.conform(spec, batch, stamp_ms=1_700_000_000_000)
    assert table.schema == codec.stored_schema(spec)
    assert table.to_pylist() == [{"_ts": 1_700_000_000_000, "i": 4, "l": 3, "f": 2.0, "d": 1.0,
                                  "s": "x", "b": True, "o": '{"k": 1}'}]


def test_conform_keeps_given_timestamps_and_fills_null_ones() -> None:
    batch = readings(0, 3).append_column("_ts", pa.array([5, None, 7], pa.int64()))
    table = codec.conform(readings_spec(), batch, stamp_ms=99)
    assert table.column("_ts").to_pylist() == [5, 99, 7]


def test_conform_accepts_arrow_timestamps() -> None:
    batch = readings(0, 1).append_column(
        "_ts", pa.array([1_700_000_000_123_000], pa.timestamp("us")))
    assert codec.conform(readings_spec(), batch).column("_ts").to_pylist() == [1_700_000_000_123]


@pytest.mark.parametrize(("batch", "message"), [
    (pa.table({"room": ["a"]}), "missing temp"),
    (pa.table({"room": ["a"], "temp": [1.0], "humidity": [3]}), "unknown humidity"),
    (pa.table({"room": ["a"], "temp": [1.0], "_seq": [1]}), "must not carry '_seq'"),
    (pa.table({"room": ["a"], "temp": ["hot"]}), "column 'temp' of type string"),
])
def test_conform_rejects_batches_that_do_not_fit(batch: pa.Table, message: str) -> None:
    with pytest.raises(BatchSchemaError, match=message):
        codec.conform(readings_spec(), batch)


def test_conform_rejects_values_that_would_overflow() -> None:
    spec = TopicSpec("T", (Attribute("i", AttrType.INT),))
    with pytest.raises(BatchSchemaError, match="column 'i'"):
        codec.conform(spec, pa.table({"i": [2**40]}))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "T", "attributes": (Attribute("_ts", AttrType.LONG),)}, "clashes"),
    ({"name": "T", "attributes": (Attribute("a", AttrType.LONG),) * 2}, "defined twice"),
    ({"name": "T", "attributes": (), "partitions": 0}, "positive"),
    ({"name": "T", "attributes": (), "key": "room"}, "not an attribute"),
    ({"name": "", "attributes": ()}, "non-empty"),
])
def test_invalid_topic_definitions_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TopicSpecError, match=message):
        TopicSpec(**kwargs)  # type: ignore[arg-type]


def test_topic_definitions_round_trip_through_json() -> None:
    spec = TopicSpec("T", ALL_TYPES, partitions=3, key="s")
    assert TopicSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("compression", codec.COMPRESSIONS)
def test_records_round_trip_and_respect_the_size_limit(compression: str) -> None:
    table = codec.conform(readings_spec(), readings(0, 5000), stamp_ms=1)
    records = codec.encode_records(table, 20_000, compression)
    assert len(records) > 1
    assert all(record.size <= 20_000 for _, record in records)
    decoded = pa.concat_tables([codec.decode(record.to_pybytes()) for _, record in records])
    assert sum(rows for rows, _ in records) == 5000
    assert decoded.equals(table)


def test_an_event_larger_than_a_record_is_refused() -> None:
    table = codec.conform(readings_spec(), pa.table({"room": ["x" * 5000], "temp": [1.0]}))
    with pytest.raises(BatchSchemaError, match="one event needs"):
        codec.encode_records(table, 1000)


def test_slice_record_numbers_the_events_it_keeps() -> None:
    table = codec.conform(readings_spec(), readings(0, 10), stamp_ms=1)
    batches = list(codec.slice_record(table, 100, 103, 106))
    assert [row["_seq"] for b in batches for row in b.to_pylist()] == [103, 104, 105]
    assert [row["temp"] for b in batches for row in b.to_pylist()] == [3.0, 4.0, 5.0]
