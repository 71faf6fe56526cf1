"""The messaging layer: durable topics of sequence-numbered events, in Arrow batches.

Plain Python (no Spark): sources, HTTP receivers, the Spark data source adapters in
``eddy.engine`` and tests all use it the same way::

    from eddy.bus import TopicSpec, open_bus

    with open_bus("sqlite:///eddy-data/bus/bus.db") as bus:
        bus.create_topic(TopicSpec("TempStream", attributes, partitions=4, key="roomNo"))
        ranges = bus.append("TempStream", arrow_table, producer="q1-0", batch_id=7)
        ends = bus.end_offsets("TempStream")
        for batch in bus.read("TempStream", 0, 0, ends[0]): ...

Backends: :mod:`eddy.bus.sqlite_bus` (embedded default), :mod:`eddy.bus.nats_bus`
(JetStream) and :mod:`eddy.bus.kafka_bus`; URLs in :mod:`eddy.bus.url`; partition routing in
:mod:`eddy.bus.routing`.
"""

from __future__ import annotations

from eddy.bus.api import Bus
from eddy.bus.errors import (
    BatchSchemaError,
    BusError,
    BusURLError,
    SequenceRangeError,
    TopicConflictError,
    TopicSpecError,
    UnknownTopicError,
)
from eddy.bus.retention import Retention
from eddy.bus.topic import SEQ, TS, PartitionRange, TopicSpec
from eddy.bus.url import default_url, kafka_url, open_bus, sqlite_url

__all__ = [
    "SEQ", "TS", "BatchSchemaError", "Bus", "BusError", "BusURLError", "PartitionRange",
    "Retention", "SequenceRangeError", "TopicConflictError", "TopicSpec", "TopicSpecError",
    "UnknownTopicError", "default_url", "kafka_url", "open_bus", "sqlite_url",
]
