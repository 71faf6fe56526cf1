"""Running one sink: follow its stream's bus topic from a committed position and publish.

A sink is fed from the bus, not from the query: the app's query appends its outputs to the
topic ``<app>.<stream>`` (idempotently), and a :class:`SinkFollower` reads that topic from
where the sink last stopped, publishes what it read and then commits the position as a bus
consumer. So a process killed at any moment neither loses an output (it was on the bus
before the query committed its batch, and the sink's position is behind it) nor re-sends
more than the one batch it was publishing when it died — and that batch carries the same
event ids again, ``<token>:<stream>:<partition>:<bus seq>``, so a target that deduplicates
by id (a JetStream sink, ``jetstream='true'``) takes each event exactly once. Other targets
(log, file, http, core NATS, inMemory) may see the last batch twice: at-least-once. Each
sink's own ``guarantee`` says which.

``token`` is random per app and kept with the sinks' state (``IoConfig.state_dir``), so an
app started afresh on an empty bus does not reuse the ids of an earlier run that the target
may still remember.

A publish that fails is retried with backoff (capped at :data:`MAX_BACKOFF_S`) until it
succeeds or the follower stops; the position does not move past an unpublished event, and
the bus keeps every event behind a committed position.
"""

from __future__ import annotations

import logging
import threading
import time

from eddy.bus import SEQ, Bus
from eddy.io.api import Sink
from eddy.io.errors import PublishError

log = logging.getLogger("eddy.io.sinks")

POLL_S = 0.01
"""How often an idle follower looks for new events (the end offsets are a cheap read)."""
MAX_EVENTS = 10_000
"""The most events one publish takes."""
MAX_BACKOFF_S = 5.0


class SinkFollower:
    """Publishes every event of ``topic`` to ``sink`` once the sink's position passed it."""

    def __init__(self, bus: Bus, topic: str, sink: Sink, consumer: str, token: str, *,
                 max_events: int = MAX_EVENTS, poll_s: float = POLL_S) -> None:
        self.bus = bus
        self.topic = topic
        self.sink = sink
        self.consumer = consumer
        self.token = token
        self.max_events = max_events
        self.poll_s = poll_s
        self.published = 0
        self.error: str | None = None
        """The last publish error, while the follower retries (None once it succeeded)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Commits the start position of a new consumer (so retention keeps what it has yet
        to publish) and starts following on a thread of its own."""
        spec = self.bus.topic(self.topic)
        starts = self.bus.start_offsets(self.topic)
        for partition in range(spec.partitions):
            if self.bus.committed(self.consumer, self.topic, partition) is None:
                self.bus.commit(self.consumer, self.topic, partition, starts[partition])
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"eddy-sink-{self.topic}")
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stops after the publish in progress; the position stays where it was committed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        partitions = self.bus.topic(self.topic).partitions
        positions = [self.bus.committed(self.consumer, self.topic, p) or 0
                     for p in range(partitions)]
        while not self._stop.is_set():
            try:
                ends = self.bus.end_offsets(self.topic)
            except Exception as error:  # the bus is away for a moment: try again
                log.warning("%s: cannot read the bus: %s", self.sink.describe(), error)
                self._stop.wait(1.0)
                continue
            moved = False
            for partition, end in enumerate(ends):
                while positions[partition] < end and not self._stop.is_set():
                    upto = min(end, positions[partition] + self.max_events)
                    if not self._publish(partition, positions[partition], upto):
                        break
                    positions[partition] = upto
                    moved = True
            if not moved:
                self._stop.wait(self.poll_s)

    def _publish(self, partition: int, start: int, end: int) -> bool:
        """Publishes ``[start, end)`` and commits ``end``; False when stopped meanwhile."""
        table = self.bus.read_table(self.topic, partition, start, end)
        prefix = f"{self.token}:{self.sink.stream}:{partition}:"
        ids = [prefix + str(seq) for seq in table.column(SEQ).to_pylist()]
        backoff = 0.1
        while True:
            try:
                self.sink.publish(table, ids=ids)
                break
            except (PublishError, OSError, ValueError) as error:
                self.error = str(error)
                log.error("%s: %s; retrying in %.1f s (events stay on the bus)",
                          self.sink.describe(), error, backoff)
            if self._stop.wait(backoff):
                return False
            backoff = min(MAX_BACKOFF_S, backoff * 2)
        self.error = None
        self.bus.commit(self.consumer, self.topic, partition, end)
        self.published += table.num_rows
        return True

    def wait_until_published(self, timeout: float) -> bool:
        """Whether the sink caught up with the end of the topic within ``timeout`` s."""
        target = self.bus.end_offsets(self.topic)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = [self.bus.committed(self.consumer, self.topic, p) or 0
                    for p in range(len(target))]
            if all(d >= t for d, t in zip(done, target)):
                return True
            time.sleep(self.poll_s)
        return False
