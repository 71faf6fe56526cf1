"""The path every source shares: payloads → mapper → bus, faults → the ``@OnError`` policy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eddy.io.api import DedupKey, Deliver
from eddy.io.mappers.base import Mapped, SourceMapper
from eddy.io.metrics import EVENTS_IN, IoMetrics
from eddy.io.on_error import OnError


@dataclass
class Ingest:
    """Maps payloads of one stream and lands them (see :meth:`receive`)."""

    stream: str
    mapper: SourceMapper
    on_error: OnError
    metrics: IoMetrics
    origin: str
    """Who receives, for log lines: ``http source of TempStream``."""

    def map(self, payloads: Sequence[object]) -> Mapped:
        """The events and faults of ``payloads``; lands nothing."""
        return self.mapper.map(payloads)

    def land(self, deliver: Deliver, mapped: Mapped, ts: int, *,
             dedup: DedupKey | None = None) -> None:
        """Delivers the events of ``mapped`` and hands its faults to the ``@OnError`` policy;
        returns once both are durable."""
        if mapped.events.num_rows:
            deliver(self.stream, mapped.events, ts, dedup=dedup)
            self.metrics.add(EVENTS_IN, self.stream, mapped.events.num_rows)
        self.reject(deliver, mapped, ts, dedup=dedup)

    def reject(self, deliver: Deliver, mapped: Mapped, ts: int, *,
               dedup: DedupKey | None = None) -> None:
        """Hands the faults of ``mapped`` to the ``@OnError`` policy (events stay out)."""
        self.on_error.handle(mapped.faults, deliver, ts, self.origin, dedup=dedup)

    def receive(self, deliver: Deliver, payloads: Sequence[object], ts: int, *,
                dedup: DedupKey | None = None) -> Mapped:
        """Maps ``payloads`` and lands the outcome; returns it."""
        mapped = self.map(payloads)
        self.land(deliver, mapped, ts, dedup=dedup)
        return mapped
