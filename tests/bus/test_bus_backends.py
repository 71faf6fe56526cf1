"""The bus contract, checked on every real backend (SQLite file, NATS JetStream, Kafka)."""

from __future__ import annotations

import math
import os
import random
import time

import pyarrow as pa
import pytest
from bus_samples import ALL_TYPES, BusFactory, read_everything, readings, readings_spec

from eddy.bus import (
    Bus,
    BusError,
    PartitionRange,
    Retention,
    SequenceRangeError,
    TopicConflictError,
    TopicSpec,
    UnknownTopicError,
)
from eddy.bus import arrow_codec, routing
from eddy.lang.ast import AttrType

# -- topics --------------------------------------------------------------------------------


def test_create_topic_is_idempotent_and_refuses_a_different_definition(bus: Bus) -> None:
    bus.create_topic(readings_spec(partitions=2))
    bus.create_topic(readings_spec(partitions=2))
    with pytest.raises(TopicConflictError, match="already exists"):
        bus.create_topic(readings_spec(partitions=3))
    assert bus.topics() == [readings_spec(partitions=2)]
    assert bus.topic("Temp") == readings_spec(partitions=2)
    assert bus.end_offsets("Temp") == [0, 0]


def test_unknown_topics_are_named(bus: Bus) -> None:
    with pytest.raises(UnknownTopicError, match="'Nope'"):
        bus.append("Nope", readings(0, 1))


# -- append and read -----------------------------------------------------------------------


def test_every_siddhi_type_round_trips_with_nulls(bus: Bus) -> None:
    spec = TopicSpec("AllTypes", ALL_TYPES)
    bus.create_topic(spec)
    rows = [
        {"_ts": 1_700_000_000_001, "i": -(2**31), "l": 2**63 - 1, "f": 1.5, "d": -0.0,
         "s": "héllo \U0001F600", "b": True, "o": '{"nested": [1, null]}'},
        {"_ts": 1_700_000_000_002, "i": None, "l": None, "f": None, "d": None, "s": None,
         "b": None, "o": None},
        {"_ts": 1_700_000_000_003, "i": 7, "l": -1, "f": math.inf, "d": 1e-300, "s": "",
         "b": False, "o": "42"},
    ]
    table = pa.Table.from_pylist(rows, schema=arrow_codec.stored_schema(spec))
    assert bus.append("AllTypes", table) == [PartitionRange(0, 0, 2)]
    nan_row = pa.Table.from_pylist([{**rows[2], "_ts": 1_700_000_000_004, "d": math.nan}],
                                   schema=arrow_codec.stored_schema(spec))
    assert bus.append("AllTypes", nan_row.to_batches()[0]) == [PartitionRange(0, 3, 3)]

    back = bus.read_table("AllTypes", 0, 0, 4)
    assert back.schema == arrow_codec.read_schema(spec)
    got = back.to_pylist()
    assert got[:3] == [{"_seq": n, **row} for n, row in enumerate(rows)]
    assert got[3]["_seq"] == 3 and math.isnan(got[3]["d"])


def test_sequences_grow_without_gaps_per_partition(bus: Bus) -> None:
    bus.create_topic(readings_spec(partitions=3))
    seen: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for n in (1, 5, 2, 9, 3):
        for r in bus.append("Temp", readings(0, n)):
            seen[r.partition] += range(r.first_seq, r.last_seq + 1)
    ends = bus.end_offsets("Temp")
    for partition, seqs in seen.items():
        assert seqs == list(range(ends[partition]))
        assert bus.read_table("Temp", partition, 0, ends[partition]).column(
            "_seq").to_pylist() == seqs
    assert sum(ends) == 20


def test_timestamps_are_stamped_at_append_unless_given(bus: Bus) -> None:
    bus.create_topic(readings_spec())
    before = arrow_codec.now_ms()
    bus.append("Temp", readings(0, 2))
    after = arrow_codec.now_ms()
    bus.append("Temp", readings(2, 1).append_column("_ts", pa.array([42], pa.int64())))
    stamps = bus.read_table("Temp", 0, 0, 3).column("_ts").to_pylist()
    assert before <= stamps[0] == stamps[1] <= after and stamps[2] == 42


def test_any_sub_range_reads_exactly_its_events(bus: Bus) -> None:
    bus.create_topic(readings_spec())
    sizes = [1, 7, 30, 2, 64, 5, 1, 40]
    total = 0
    for size in sizes:
        bus.append("Temp", readings(total, size))
        total += size
    rng = random.Random(11)
    cases = [(0, total), (0, 1), (total - 1, total), (7, 8), (8, 38), (3, 100), (5, 5)]
    cases += [tuple(sorted(rng.sample(range(total + 1), 2))) for _ in range(25)]
    for start, end in cases:
        table = bus.read_table("Temp", 0, start, end)
        assert table.column("_seq").to_pylist() == list(range(start, end)), (start, end)
        assert table.column("temp").to_pylist() == [float(s) for s in range(start, end)]


def test_long_ranges_of_small_batches_read_in_order(bus: Bus) -> None:
    bus.create_topic(readings_spec())
    for i in range(40):
        bus.append("Temp", readings(i * 3, 3))
    assert bus.read_table("Temp", 0, 4, 119).column("temp").to_pylist() == \
        [float(s) for s in range(4, 119)]
    assert bus.read_table("Temp", 0, 0, 120).num_rows == 120


def test_reading_past_the_end_is_an_error(bus: Bus) -> None:
    bus.create_topic(readings_spec())
    bus.append("Temp", readings(0, 5))
    with pytest.raises(SequenceRangeError, match="events end at 5"):
        list(bus.read("Temp", 0, 3, 6))
    with pytest.raises(SequenceRangeError, match="partitions 0..0"):
        list(bus.read("Temp", 1, 0, 1))


# -- idempotent appends --------------------------------------------------------------------


def test_replaying_a_batch_id_writes_nothing_and_returns_the_first_ranges(bus: Bus) -> None:
    bus.create_topic(readings_spec(partitions=4))  # round-robin
    first = bus.append("Temp", readings(0, 10), producer="query-1/0", batch_id=7)
    bus.append("Temp", readings(100, 3))
    again = bus.append("Temp", readings(0, 10), producer="query-1/0", batch_id=7)
    assert again == first
    other = bus.append("Temp", readings(0, 10), producer="query-1/1", batch_id=7)
    assert sum(r.events for r in other) == 10 and other != first
    assert sum(bus.end_offsets("Temp")) == 23


def test_a_replayed_batch_lands_where_the_first_one_did(buses: BusFactory) -> None:
    bus = buses.open()
    bus.create_topic(readings_spec(partitions=3))
    first = bus.append("Temp", readings(0, 8), producer="w", batch_id=1)
    other_process = buses.open()  # no shared round-robin state
    assert other_process.append("Temp", readings(0, 8), producer="w", batch_id=1) == first


# -- routing -------------------------------------------------------------------------------


def test_key_routing_puts_a_key_where_java_hashcode_says(bus: Bus) -> None:
    bus.create_topic(readings_spec(partitions=4, key="room"))
    bus.append("Temp", readings(0, 70, rooms=7))
    for partition, table in enumerate(read_everything(bus, "Temp")):
        for room in set(table.column("room").to_pylist()):
            assert abs(routing.java_string_hash(room)) % 4 == partition
    rooms_per_partition = [set(t.column("room").to_pylist()) for t in read_everything(bus, "Temp")]
    assert sum(len(r) for r in rooms_per_partition) == 7  # every room in one partition only


def test_key_routing_of_numeric_keys(bus: Bus) -> None:
    spec = TopicSpec("Ids", ALL_TYPES[:2], partitions=5, key="l")
    bus.create_topic(spec)
    values = [0, 1, -1, 2**40, -(2**63), 12345678901]
    bus.append("Ids", pa.table({"i": [0] * 6, "l": values}))
    for partition, table in enumerate(read_everything(bus, "Ids")):
        for value in table.column("l").to_pylist():
            assert routing.partition_for(value, AttrType.LONG, 5) == partition


def test_round_robin_spreads_events_evenly(bus: Bus) -> None:
    bus.create_topic(readings_spec(partitions=3))
    for i in range(10):
        bus.append("Temp", readings(i * 10, 10))
    ends = bus.end_offsets("Temp")
    assert sum(ends) == 100 and max(ends) - min(ends) <= 1


# -- consumers and retention ---------------------------------------------------------------


def test_commits_are_per_consumer_and_partition(bus: Bus) -> None:
    bus.create_topic(readings_spec(partitions=2))
    assert bus.committed("q1", "Temp", 0) is None
    bus.commit("q1", "Temp", 0, 5)
    bus.commit("q1", "Temp", 0, 9)
    bus.commit("q 2/x", "Temp", 1, 3)
    assert bus.committed("q1", "Temp", 0) == 9
    assert bus.committed("q1", "Temp", 1) is None
    assert bus.committed("q 2/x", "Temp", 1) == 3
    bus.remove_consumer("q1")
    assert bus.committed("q1", "Temp", 0) is None
    assert bus.committed("q 2/x", "Temp", 1) == 3


def fill(bus: Bus, batches: int = 5, size: int = 10) -> None:
    """``batches`` stored batches of ``size`` events: batch i holds i*size .. i*size+size-1."""
    bus.create_topic(readings_spec())
    for i in range(batches):
        bus.append("Temp", readings(i * size, size))


@pytest.mark.parametrize("limits", [Retention(max_age_ms=1), Retention(max_bytes=1)],
                         ids=["age", "size"])
def test_retention_never_removes_committed_positions(buses: BusFactory, limits: Retention
                                                     ) -> None:
    bus = buses.open(retention=limits)
    fill(bus)
    time.sleep(0.01)  # every batch is now older than 1 ms
    bus.commit("slow", "Temp", 0, 25)
    bus.commit("fast", "Temp", 0, 50)
    assert bus.trim() == 20  # batches 0..9 and 10..19; 20..29 holds the slow position
    assert bus.start_offsets("Temp") == [20]
    assert bus.read_table("Temp", 0, 25, 50).column("temp").to_pylist() == \
        [float(s) for s in range(25, 50)]
    with pytest.raises(SequenceRangeError, match="removed by retention"):
        list(bus.read("Temp", 0, 19, 30))
    assert bus.trim() == 0
    bus.commit("slow", "Temp", 0, 50)
    assert bus.trim() == 20  # the last batch stays: it marks where the sequence stands
    assert bus.start_offsets("Temp") == [40] and bus.end_offsets("Temp") == [50]
    bus.append("Temp", readings(50, 5))
    assert bus.end_offsets("Temp") == [55]


def test_retention_keeps_young_and_small_partitions(buses: BusFactory) -> None:
    bus = buses.open(retention=Retention(max_age_ms=3_600_000, max_bytes=10**9))
    fill(bus)
    assert bus.trim() == 0
    assert bus.start_offsets("Temp") == [0]


def test_without_consumers_retention_applies_its_limits_alone(buses: BusFactory) -> None:
    bus = buses.open(retention=Retention(max_bytes=1))
    fill(bus)
    assert bus.trim() == 40
    assert bus.read_table("Temp", 0, 40, 50).num_rows == 10


def test_a_removed_consumer_no_longer_holds_events_back(buses: BusFactory) -> None:
    bus = buses.open(retention=Retention(max_bytes=1))
    fill(bus)
    bus.commit("gone", "Temp", 0, 0)
    assert bus.trim() == 0
    bus.remove_consumer("gone")
    assert bus.trim() == 40


# -- durability ----------------------------------------------------------------------------


def test_reopening_keeps_topics_events_and_commits(buses: BusFactory) -> None:
    bus = buses.open()
    bus.create_topic(readings_spec(partitions=2, key="room"))
    bus.append("Temp", readings(0, 30))
    bus.commit("q", "Temp", 1, 4)
    before = read_everything(bus, "Temp")
    bus.close()
    again = buses.open()
    assert again.topics() == [readings_spec(partitions=2, key="room")]
    assert [t.equals(b) for t, b in zip(read_everything(again, "Temp"), before)] == [True, True]
    assert again.committed("q", "Temp", 1) == 4
    ranges = again.append("Temp", readings(30, 10))
    assert all(r.first_seq == before[r.partition].num_rows for r in ranges)


def test_a_forked_child_is_told_to_open_its_own_bus(bus: Bus) -> None:
    bus.create_topic(readings_spec())
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the bus refuses to be used here
        try:
            bus.end_offsets("Temp")
        except BusError as error:
            os._exit(0 if "open a new one" in str(error) else 1)
        except BaseException:
            os._exit(2)
        os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert bus.end_offsets("Temp") == [0]  # the parent's bus still works
