"""``@sink(type='inMemory', topic='Alerts')``: events to Python code in the same process.

Each event's payload (the :class:`~eddy.io.api.Event` itself with the default passThrough
mapper, else the mapped text or dict) is published to ``topic`` on the
:class:`~eddy.io.inmemory_broker.InMemoryBroker`; Python callbacks subscribe with
``broker.subscribe(topic, callback)``, and ``inMemory`` sources on the topic receive it.

Guarantee: at-least-once — a batch published again reaches the subscribers again; a
subscriber that raises fails the publish.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.io.api import Event, Guarantee
from eddy.io.errors import PublishError
from eddy.io.inmemory_broker import InMemoryBroker
from eddy.io.mappers.base import SinkMapper
from eddy.io.metrics import IoMetrics
from eddy.io.sinks.base import MappedSink
from eddy.lang.ast import Attribute


class InMemorySink(MappedSink):
    """Publishes events to an in-process topic (see the module docstring)."""

    type = "inMemory"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, stream: str, attributes: Sequence[Attribute], mapper: SinkMapper,
                 metrics: IoMetrics, *, topic: str, broker: InMemoryBroker) -> None:
        super().__init__(stream, attributes, mapper, metrics)
        self.topic = topic
        self.broker = broker

    def _send(self, events: list[Event], ids: Sequence[str] | None) -> None:
        for event in events:
            try:
                self.broker.publish(self.topic, self.mapper.format(event))
            except Exception as error:
                raise PublishError(f"{self.describe()}: a subscriber of '{self.topic}' "
                                   f"failed: {error}") from error
