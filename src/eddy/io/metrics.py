"""Counters of what sources and sinks did, per stream, for the node's metrics.

Plain thread-safe counters (sources run on server threads); the worker's metrics collector
reads :meth:`IoMetrics.snapshot` and exports it however it exports the rest.
"""

from __future__ import annotations

import threading
from collections import Counter

EVENTS_IN = "events_in"
"""Events a source landed on the bus."""
MAPPING_ERRORS = "mapping_errors"
"""Events (or unreadable payloads) a source mapper rejected."""
FAULTS_STREAMED = "faults_streamed"
"""Rejected events sent to the fault stream ``!S``."""
REQUESTS_REJECTED = "requests_rejected"
"""HTTP requests answered 4xx/5xx (auth, size, content type, backlog, bad payload)."""
EVENTS_OUT = "events_out"
"""Events a sink published."""
PUBLISH_ERRORS = "publish_errors"
"""Publish calls a sink gave up on."""


class IoMetrics:
    """Counters by (name, stream)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def add(self, name: str, stream: str, count: int = 1) -> None:
        """Adds ``count`` to counter ``name`` of ``stream``."""
        with self._lock:
            self._counts[(name, stream)] += count

    def count(self, name: str, stream: str) -> int:
        """The value of counter ``name`` of ``stream``."""
        with self._lock:
            return self._counts[(name, stream)]

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Every counter: ``{name: {stream: value}}``."""
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            for (name, stream), value in self._counts.items():
                out.setdefault(name, {})[stream] = value
            return out
