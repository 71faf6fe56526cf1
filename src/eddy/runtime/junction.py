"""Stream junctions and named windows: where chunks go between queries.

A junction hands a chunk to its subscribers synchronously, in the order the reference
subscribes them (query definition order), each getting the chunk's path extended by its
index in the app. This is the one place a future join or pattern receiver plugs in: it
subscribes to the junctions of its input streams like any single-stream query.

A named window (``define window W (...) time(1 min) output all events``) is fed by the
queries that ``insert into W`` (and by input events of stream ``W``); what it emits, reduced
to the kinds its ``output`` clause allows, goes to the junction that ``from W`` queries
subscribe to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from eddy.runtime.context import Path
from eddy.runtime.events import CURRENT, EXPIRED, TIMER, DroppedEventError, Event
from eddy.runtime.windows.base import Window

Receiver = Callable[[list[Event], Path], None]

log = logging.getLogger("eddy.runtime")


class Junction:
    """The subscribers of one stream, in reference order."""

    __slots__ = ("name", "subscribers")

    def __init__(self, name: str) -> None:
        self.name = name
        self.subscribers: list[tuple[int, Receiver]] = []

    def subscribe(self, index: int, receiver: Receiver) -> None:
        self.subscribers.append((index, receiver))
        self.subscribers.sort(key=lambda s: s[0])

    def send(self, chunk: list[Event], prefix: Path) -> None:
        """Hands ``chunk`` to every subscriber. An error the reference only logs ends the
        chunk's delivery here, as the reference's publisher catches it around the whole
        junction: subscribers after the failing one do not see the chunk, and what was
        emitted before stands."""
        try:
            for index, receiver in self.subscribers:
                receiver(chunk, prefix + (index,))
        except DroppedEventError as error:
            log.error("error after consuming events from stream '%s': %s; hence, dropping "
                      "the event(s) %s", self.name, error, [event[2] for event in chunk])


class NamedWindow:
    """A ``define window``: its window processor and the junction it publishes to."""

    def __init__(self, name: str, window: Window, event_type: str, junction: Junction) -> None:
        self.name = name
        self.window = window
        self.junction = junction
        self.allow_current = event_type in ("current", "all")
        self.allow_expired = event_type in ("expired", "all")
        if window.scheduler is not None:
            window.scheduler.target = self.on_timer

    def receive(self, chunk: list[Event], path: Path) -> None:
        """Events inserted into the window (always as current events)."""
        self._publish(self.window.process(chunk), path)

    def on_timer(self, time: int, path: Path) -> None:
        self._publish(self.window.process([(TIMER, time, None)]), path)

    def _publish(self, chunks: list[list[Event]], path: Path) -> None:
        allow_current, allow_expired = self.allow_current, self.allow_expired
        for emission, chunk in enumerate(chunks):
            kept = [e for e in chunk if (e[0] == CURRENT and allow_current)
                    or (e[0] == EXPIRED and allow_expired)]
            if kept:
                self.junction.send(kept, path + (emission, 1))

    def get_state(self) -> Any:
        return self.window.get_state()

    def set_state(self, state: Any) -> None:
        self.window.set_state(state)
