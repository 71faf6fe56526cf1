"""What every sink shares: turning what it is given into events, counting, failing loudly."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus import TS
from eddy.bus.arrow_codec import now_ms
from eddy.io.api import Event, Events, Sink
from eddy.io.errors import PublishError
from eddy.io.mappers.base import SinkMapper
from eddy.io.metrics import EVENTS_OUT, PUBLISH_ERRORS, IoMetrics
from eddy.lang.ast import Attribute, AttrType


def as_events(events: Events, attributes: Sequence[Attribute]) -> list[Event]:
    """``events`` as a list of :class:`Event`; an Arrow batch is read by attribute name
    (``_ts`` as the timestamp, now when absent; ``object`` JSON text decoded)."""
    if not isinstance(events, (pa.Table, pa.RecordBatch)):
        return list(events)
    names = events.schema.names
    missing = [a.name for a in attributes if a.name not in names]
    if missing:
        raise ValueError(f"the events have no column {', '.join(missing)}")
    rows = events.num_rows
    now = now_ms()
    stamps: list[int] = [now if t is None else int(t) for t in events.column(TS).to_pylist()] \
        if TS in names else [now] * rows
    columns = []
    for attribute in attributes:
        values = events.column(attribute.name).to_pylist()
        if attribute.type is AttrType.OBJECT:
            values = [None if v is None else json.loads(v) for v in values]
        columns.append(values)
    return [Event(ts, tuple(row)) for ts, row in zip(stamps, zip(*columns))] if columns \
        else [Event(ts, ()) for ts in stamps]


def publishable(events: Events, attributes: Sequence[Attribute],
                ids: Sequence[str] | None) -> list[Event]:
    """:func:`as_events`, checking that ``ids``, when given, are one per event."""
    items = as_events(events, attributes)
    if ids is not None and len(ids) != len(items):
        raise ValueError(f"{len(ids)} ids for {len(items)} events")
    return items


class MappedSink(Sink):
    """A sink that writes each event through a sink mapper; subclasses send the payloads."""

    def __init__(self, stream: str, attributes: Sequence[Attribute], mapper: SinkMapper,
                 metrics: IoMetrics) -> None:
        self.stream = stream
        self.attributes = tuple(attributes)
        self.mapper = mapper
        self.metrics = metrics

    def publish(self, events: Events, *, ids: Sequence[str] | None = None) -> None:
        items = publishable(events, self.attributes, ids)
        if not items:
            return
        try:
            self._send(items, ids)
        except PublishError:
            self.metrics.add(PUBLISH_ERRORS, self.stream)
            raise
        self.metrics.add(EVENTS_OUT, self.stream, len(items))

    @abstractmethod
    def _send(self, events: list[Event], ids: Sequence[str] | None) -> None:
        """Sends the events; raises :class:`PublishError` when it gives up."""

    def close(self) -> None:
        """Nothing to release by default."""
