"""The contracts of sources and sinks: how events enter the bus and leave the app.

A **source** receives payloads from a transport (HTTP, NATS, a file, Kafka, Python code),
maps them to events of its stream and hands them to ``deliver``; ``deliver`` lands them on
the bus and returns only once they are durable, and only then does the source acknowledge
them to the transport (HTTP 200, a Kafka offset commit, a saved file position). Malformed
payloads go to the stream's ``@OnError`` policy, never nowhere.

A **sink** publishes output events of its stream to a transport. ``publish`` returns when
the transport has taken them (or raises), so a caller that marks a batch done only after
``publish`` returns gets the sink's ``guarantee``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal, NamedTuple, Protocol

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.lang.ast import Attribute

Guarantee = Literal["exactly-once", "at-least-once", "at-most-once"]
"""What a source or sink promises about each event it handles once it acknowledged it."""


class DedupKey(NamedTuple):
    """Makes an append idempotent: the bus stores one batch per (producer, batch id)."""

    producer: str
    batch_id: int


class Deliver(Protocol):
    """Lands events of ``stream`` on the bus; returns only when they are durable.

    ``rows`` has one column per attribute of the stream (the fault stream ``!S`` adds
    ``_error``) and optionally ``_ts``; rows without a timestamp get ``ts`` (epoch ms).
    With ``dedup`` a repeated call with the same key stores nothing new. Raises when the
    events could not be stored; the source then does not acknowledge them.
    """

    def __call__(self, stream: str, rows: pa.Table, ts: int, *,
                 dedup: DedupKey | None = None) -> None: ...


class Event(NamedTuple):
    """One output event as a sink sees it: Siddhi's ``Event{timestamp, data, isExpired}``."""

    timestamp: int
    data: tuple[object, ...]
    is_expired: bool = False


Events = Sequence[Event] | pa.Table | pa.RecordBatch
"""What :meth:`Sink.publish` takes: events, or an Arrow batch of ``_ts`` plus attributes."""


class Source(ABC):
    """Receives payloads from one transport for one stream (one ``@source`` annotation)."""

    stream: str
    """The stream the source feeds."""
    type: str
    """The ``@source(type=…)`` it was built from."""
    guarantee: Guarantee
    """What happens to an event the transport handed over: ``at-least-once`` (acknowledged
    only after it is on the bus, so a crash before that makes the sender send it again),
    ``exactly-once`` (also deduplicated on the bus) or ``at-most-once`` (the transport
    does not wait for an acknowledgement)."""

    @abstractmethod
    def start(self, deliver: Deliver) -> None:
        """Starts receiving, handing events to ``deliver``; returns once it is listening."""

    @abstractmethod
    def stop(self) -> None:
        """Stops receiving and waits for deliveries in progress; safe to call twice."""

    def describe(self) -> str:
        """A short description for logs: ``http source of TempStream``."""
        return f"{self.type} source of {self.stream}"


class Sink(ABC):
    """Publishes the events of one stream to one transport (one ``@sink`` annotation)."""

    stream: str
    """The stream whose events the sink publishes."""
    type: str
    """The ``@sink(type=…)`` it was built from."""
    attributes: tuple[Attribute, ...]
    """The stream's attributes, in the order of :attr:`Event.data`."""
    guarantee: Guarantee
    """``exactly-once`` where the target drops duplicates by the event ids passed to
    :meth:`publish`, ``at-least-once`` where a re-published batch reaches it twice."""

    @abstractmethod
    def publish(self, events: Events, *, ids: Sequence[str] | None = None) -> None:
        """Publishes ``events`` and returns once the target has them; raises
        :class:`~eddy.io.errors.PublishError` when it gave up.

        ``ids`` are stable event ids (one per event, the same when a batch is published
        again, e.g. ``<query>:<batch id>:<row>``); targets that deduplicate use them.
        """

    @abstractmethod
    def close(self) -> None:
        """Releases connections; safe to call twice."""

    def describe(self) -> str:
        """A short description for logs: ``log sink of AlertStream``."""
        return f"{self.type} sink of {self.stream}"
