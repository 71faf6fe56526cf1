"""What only the Kafka bus has to get right: records that lost a race, and Kafka's layout."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from bus_samples import kafka_bus_url, read_everything, readings, readings_spec
from confluent_kafka import Consumer, TopicPartition

from eddy.bus import BusError, TopicSpecError, open_bus
from eddy.bus.kafka_bus import KafkaBus
from eddy.bus.kafka_fetch import PartitionReader


@pytest.fixture
def url(kafka_bootstrap: str) -> Iterator[str]:
    url = kafka_bus_url(kafka_bootstrap, f"test-{uuid.uuid4().hex[:12]}")
    yield url
    bus = open_bus(url)
    assert isinstance(bus, KafkaBus)
    bus.destroy()


def test_a_writer_that_lost_a_race_appends_again_and_readers_skip_its_first_try(
        url: str, kafka_bootstrap: str) -> None:
    with open_bus(url) as first, open_bus(url) as second:
        first.create_topic(readings_spec())
        first.append("Temp", readings(0, 5))
        assert second.end_offsets("Temp") == [5]  # second now knows the end: offset 0
        first.append("Temp", readings(5, 3))  # ... which first moves on behind its back
        assert second.append("Temp", readings(8, 2), producer="w", batch_id=1)[0][1:] == (8, 9)
        assert isinstance(second, KafkaBus)
        records = _kafka_offsets(kafka_bootstrap, second.data_topic("Temp"))
        assert records == 4  # 0..4, 5..7, the try that lost (prev 0), 8..9 after 5..7
    with open_bus(url) as fresh:
        table = fresh.read_table("Temp", 0, 0, 10)
        assert table.column("_seq").to_pylist() == list(range(10))
        assert table.column("temp").to_pylist() == [float(t) for t in range(10)]
        assert fresh.read_table("Temp", 0, 6, 9).column("temp").to_pylist() == [6.0, 7.0, 8.0]
        assert fresh.append("Temp", readings(8, 2), producer="w", batch_id=1)[0][1:] == (8, 9)
        assert fresh.end_offsets("Temp") == [10]


def test_each_bus_topic_is_a_kafka_topic_with_its_partitions(url: str,
                                                             kafka_bootstrap: str) -> None:
    with open_bus(url) as bus:
        assert isinstance(bus, KafkaBus)
        bus.create_topic(readings_spec("Temp/Readings", partitions=3))
        from confluent_kafka.admin import AdminClient

        topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10)
        kafka_topic = topics.topics[bus.data_topic("Temp/Readings")]
        assert bus.data_topic("Temp/Readings").endswith(".t.Temp-2FReadings")
        assert sorted(kafka_topic.partitions) == [0, 1, 2]
        assert bus.meta_topic in topics.topics
        with pytest.raises(TopicSpecError, match="longer than Kafka's 249 characters"):
            bus.create_topic(readings_spec("é" * 80))


def _kafka_offsets(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def test_more_partitions_than_open_consumers_are_read_again_after_eviction(url: str) -> None:
    with open_bus(url) as bus:
        bus.create_topic(readings_spec(partitions=20))  # the bus keeps 16 consumers open
        bus.append("Temp", readings(0, 60))
        for _ in range(2):
            tables = read_everything(bus, "Temp")
            assert sorted(t for table in tables for t in table.column("temp").to_pylist()) \
                == [float(t) for t in range(60)]


def test_a_data_topic_reader_never_skips_an_offset(kafka_bootstrap: str) -> None:
    """Committed transactions leave real gaps (their markers take offsets): a data topic's
    reader must fail on one rather than return fewer records; the metadata topic's reader
    (compacted: gaps are normal) passes over them."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, config = f"gaps-{uuid.uuid4().hex[:8]}", {"bootstrap.servers": kafka_bootstrap}
    admin = AdminClient(config)  # kept: its futures fail once it is collected
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=10)
    producer = Producer({**config, "transactional.id": topic})
    producer.init_transactions(10)
    for value in (b"a", b"b"):
        producer.begin_transaction()
        producer.produce(topic, value, partition=0)
        producer.commit_transaction(10)
    compacted = PartitionReader(config, topic, 0, 5.0, contiguous=False)
    assert [m.offset() for m in compacted.messages(0, compacted.watermarks()[1])] == [0, 2]
    data = PartitionReader(config, topic, 0, 1.0)
    with pytest.raises(BusError, match="no record at offset 1 within"):
        data.messages(0, 3)
    compacted.close()
    data.close()


class _LateRecordConsumer:
    """FAKE, named as such: a consumer whose broker first serves offset 1 while offset 0 is
    not readable yet (Tansu assigns an offset before it stores the record). The race lasts
    microseconds on a real broker and cannot be produced on demand."""

    def __init__(self) -> None:
        self.seeks: list[int] = []
        self.served: list[int] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.seeks.append(partitions[0].offset)
        self.served = [1] if len(self.seeks) == 1 else [0, 1]

    def consume(self, num_messages: int, timeout: float) -> list[object]:
        served, self.served = self.served, []
        return [_Message(offset) for offset in served]


class _Message:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> None:
        return None

    def offset(self) -> int:
        return self._offset


def test_a_reader_served_a_later_record_first_fetches_the_earlier_one_again() -> None:
    reader = PartitionReader({}, "t", 0, 5.0)
    fake = _LateRecordConsumer()
    reader._open = fake  # type: ignore[assignment]
    assert [m.offset() for m in reader.messages(0, 2)] == [0, 1]
    assert fake.seeks == [0, 0]  # read from 0, served 1: sought 0 again
