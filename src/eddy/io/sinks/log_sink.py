"""``@sink(type='log', prefix='…', priority='INFO')``: events as log lines, as Siddhi's LogSink.

Each event is one line, ``<prefix> : Event{timestamp=…, data=[…], isExpired=false}``, with
values written as Java writes them; the default prefix is ``<app> : <stream>``. With an
``@map`` other than passThrough the line is ``<prefix> : <mapped payload>``. Lines go to
the Python logger ``eddy.log_sink`` at ``priority`` (FATAL, ERROR, WARN, INFO, DEBUG or
TRACE).

Guarantee: at-least-once — a batch published again is logged again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from eddy.io.api import Event, Guarantee
from eddy.io.javafmt import java_array
from eddy.io.mappers.base import SinkMapper
from eddy.io.metrics import IoMetrics
from eddy.io.sinks.base import MappedSink
from eddy.lang.ast import Attribute

LOGGER = "eddy.log_sink"
PRIORITIES = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
              "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": 5}


def siddhi_event_text(event: Event, attributes: Sequence[Attribute]) -> str:
    """Siddhi's ``Event.toString()``: ``Event{timestamp=1, data=[a, 2.0], isExpired=false}``."""
    data = java_array(event.data, [a.type for a in attributes])
    expired = "true" if event.is_expired else "false"
    return f"Event{{timestamp={event.timestamp}, data={data}, isExpired={expired}}}"


class LogSink(MappedSink):
    """Logs events (see the module docstring)."""

    type = "log"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, stream: str, attributes: Sequence[Attribute], mapper: SinkMapper,
                 metrics: IoMetrics, *, prefix: str, priority: str = "INFO") -> None:
        super().__init__(stream, attributes, mapper, metrics)
        self.prefix = prefix
        self.level = PRIORITIES[priority.upper()]
        self.logger = logging.getLogger(LOGGER)

    def line(self, event: Event) -> str:
        """The log line of one event."""
        if self.mapper.textual:
            return f"{self.prefix} : {self.mapper.text(event)}"
        return f"{self.prefix} : {siddhi_event_text(event, self.attributes)}"

    def _send(self, events: list[Event], ids: Sequence[str] | None) -> None:
        for event in events:
            self.logger.log(self.level, "%s", self.line(event))
