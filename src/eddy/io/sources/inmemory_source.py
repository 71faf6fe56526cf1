"""``@source(type='inMemory', topic='Stock', @map(type='passThrough'))``: events from Python.

Code in the same process sends rows with :meth:`InMemorySource.send`, or publishes them to
the source's topic on the :class:`~eddy.io.inmemory_broker.InMemoryBroker` (where
``inMemory`` sinks publish too). ``send`` returns once the events are on the bus.

Guarantee: at-least-once — ``send`` returning means the events are durable; if it raises,
nothing of that call was acknowledged and the caller may send again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from eddy.bus.arrow_codec import now_ms
from eddy.io.api import Deliver, Guarantee, Source
from eddy.io.errors import IoError
from eddy.io.ingest import Ingest
from eddy.io.inmemory_broker import InMemoryBroker
from eddy.io.mappers.base import Mapped


class InMemorySource(Source):
    """Receives rows from Python code (see the module docstring)."""

    type = "inMemory"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, ingest: Ingest, topic: str, broker: InMemoryBroker) -> None:
        self.stream = ingest.stream
        self.ingest = ingest
        self.topic = topic
        self.broker = broker
        self._deliver: Deliver | None = None
        self._in_flight = 0
        self._idle = threading.Condition()

    def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self.broker.subscribe(self.topic, self._on_message)

    def stop(self) -> None:
        self.broker.unsubscribe(self.topic, self._on_message)
        with self._idle:
            self._deliver = None
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=30)

    def send(self, rows: Sequence[object], ts: int | None = None) -> Mapped:
        """Maps ``rows`` (each a payload for the mapper: a tuple, dict, JSON text, …) and lands
        them; returns what was accepted and rejected once that is durable. Safe to call from
        several threads at once (their events share bus appends)."""
        with self._idle:
            deliver = self._deliver
            if deliver is None:
                raise IoError(f"{self.describe()} is not started")
            self._in_flight += 1
        try:
            return self.ingest.receive(deliver, rows, now_ms() if ts is None else ts)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def _on_message(self, message: object) -> None:
        self.send([message])
