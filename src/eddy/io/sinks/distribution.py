"""``@sink(…, @distribution(strategy=…, @destination(…), …))``: one sink over several
destinations (Siddhi's distributed sinks).

Each ``@destination`` adds its options to the sink's and makes one sink. Strategies:

* ``roundRobin`` — events go to the destinations in turn. With event ids the turn starts at
  a position derived from the first id, so a batch published again goes where it went
  before (and a deduplicating target recognises it).
* ``partitioned`` — ``partitionKey`` picks the destination: ``abs(hashCode(key)) % n`` with
  Java's ``hashCode`` (:mod:`eddy.bus.routing`), as WSO2 routes partitioned streams.
* ``broadcast`` — every destination gets every event (ids get ``@<destination>``
  appended, so destinations that share a deduplicating target do not drop each other's
  copies).

Guarantee: the weakest of the destinations'.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Literal

from eddy.bus.routing import java_string_hash, partition_for
from eddy.io.api import Event, Events, Guarantee, Sink
from eddy.io.errors import PublishError
from eddy.io.sinks.base import publishable
from eddy.lang.ast import Attribute

Strategy = Literal["roundRobin", "partitioned", "broadcast"]
STRATEGIES: tuple[Strategy, ...] = ("roundRobin", "partitioned", "broadcast")
_STRENGTH: dict[Guarantee, int] = {"at-most-once": 0, "at-least-once": 1, "exactly-once": 2}


class DistributedSink(Sink):
    """Spreads events over destination sinks (see the module docstring)."""

    def __init__(self, destinations: Sequence[Sink], strategy: Strategy,
                 partition_key: str | None = None) -> None:
        if not destinations:
            raise ValueError("a distributed sink needs at least one destination")
        first = destinations[0]
        self.stream = first.stream
        self.type = first.type
        self.attributes = first.attributes
        self.destinations = list(destinations)
        self.strategy = strategy
        self.guarantee = min((d.guarantee for d in destinations), key=_STRENGTH.__getitem__)
        self._key: tuple[int, Attribute] | None = None
        if strategy == "partitioned":
            names = [a.name for a in self.attributes]
            if partition_key not in names:
                raise ValueError(f"partitionKey '{partition_key}' is not an attribute of "
                                 f"'{self.stream}' ({', '.join(names)})")
            index = names.index(partition_key)
            self._key = (index, self.attributes[index])
        self._next = 0
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.type} sink of {self.stream} ({self.strategy} over " \
               f"{len(self.destinations)} destinations)"

    def publish(self, events: Events, *, ids: Sequence[str] | None = None) -> None:
        items = publishable(events, self.attributes, ids)
        if not items:
            return
        errors: list[PublishError] = []
        for destination, (chosen, chosen_ids) in zip(self.destinations,
                                                     self.assign(items, ids)):
            if not chosen:
                continue
            try:
                destination.publish(chosen, ids=chosen_ids)
            except PublishError as error:
                errors.append(error)
        if errors:
            raise errors[0]

    def assign(self, events: list[Event], ids: Sequence[str] | None
               ) -> list[tuple[list[Event], list[str] | None]]:
        """The events (and ids) each destination gets, in destination order."""
        count = len(self.destinations)
        if self.strategy == "broadcast":
            return [(events, None if ids is None else [f"{i}@{d}" for i in ids])
                    for d in range(count)]
        if self.strategy == "partitioned":
            assert self._key is not None
            index, attribute = self._key
            targets = [partition_for(e.data[index], attribute.type, count) for e in events]
        else:
            start = self._start(len(events), ids)
            targets = [(start + i) % count for i in range(len(events))]
        out: list[tuple[list[Event], list[str] | None]] = [
            ([], None if ids is None else []) for _ in range(count)]
        for position, (event, target) in enumerate(zip(events, targets)):
            chosen, chosen_ids = out[target]
            chosen.append(event)
            if chosen_ids is not None and ids is not None:
                chosen_ids.append(ids[position])
        return out

    def _start(self, rows: int, ids: Sequence[str] | None) -> int:
        count = len(self.destinations)
        if ids:
            return abs(java_string_hash(ids[0])) % count
        with self._lock:
            start, self._next = self._next, (self._next + rows) % count
        return start

    def close(self) -> None:
        for destination in self.destinations:
            destination.close()
