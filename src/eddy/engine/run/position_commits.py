"""Moving a group's consumer position on the bus as soon as a micro-batch completes.

Spark commits a source's position only when it plans the next batch. An idle group would
then look a batch behind for as long as no event arrives, and a source that refuses events
while the app lags (the HTTP source's 503) would never see it catch up. So a listener of the
query's progress commits each completed batch's end offsets as the group's position; Spark's
own commit, later, writes the same numbers. The progress arrives as Spark's JSON
(:mod:`eddy.engine.spark.query_progress`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from eddy.bus import Bus, open_bus
from eddy.engine.spark.bus_source import Offsets
from eddy.engine.spark.query_progress import Progress

log = logging.getLogger("eddy.engine.run.position_commits")
LOG_FIRST_PROGRESS = 3
"""Batches after a start whose progress is logged with the time since the start (where a
restart, e.g. an HA takeover, spends its time)."""


class PositionCommits:
    """Commits the end of each completed batch of one query as its group's consumer
    position (see the module docstring). Runs on Spark's listener thread with a bus of its
    own, opened on the first progress."""

    def __init__(self, bus_url: str, consumer: str, started: float | None = None) -> None:
        self.bus_url, self.consumer = bus_url, consumer
        self._started = time.monotonic() if started is None else started
        self._logged = 0
        self._bus: Bus | None = None
        self._lock = threading.Lock()
        self._closed = False

    def on_progress(self, progress: Progress) -> None:
        """One progress of the query (see :mod:`eddy.engine.spark.query_progress`)."""
        sources = progress.get("sources") or []
        if not sources:
            return
        if self._logged < LOG_FIRST_PROGRESS:
            self._logged += 1
            log.info("%s: batch %s (%d rows) done %.2f s after the start; its steps in ms: %s",
                     self.consumer, progress.get("batchId"), progress.get("numInputRows", 0),
                     time.monotonic() - self._started, progress.get("durationMs", {}))
        end = sources[0].get("endOffset")
        offsets: Offsets = json.loads(end) if isinstance(end, str) else dict(end or {})
        with self._lock:
            if self._closed or not offsets:
                return
            try:
                self._bus = self._bus or open_bus(self.bus_url)
                for topic, positions in offsets.items():
                    for p, position in enumerate(positions):
                        self._bus.commit(self.consumer, topic, p, position)
            except Exception:  # the next batch's commit (by Spark) writes the same
                log.warning("could not commit %s's position", self.consumer, exc_info=True)

    def close(self) -> None:
        """Stops committing (a progress that arrives later is ignored) and closes the bus."""
        with self._lock:
            self._closed = True
            if self._bus is not None:
                self._bus.close()
                self._bus = None
