"""How far an app's query is behind the topic a source delivers to, in seconds.

A source that keeps accepting events while the app falls further behind only moves the
problem onto the bus (and its retention); the HTTP source answers 503 with ``Retry-After``
instead once the lag passes ``IoConfig.max_behind_s`` (:mod:`eddy.io.sources.http_source`).

The lag of a stream is the age of the oldest event of its topic that the app's query has
not processed: the bus timestamp of the event at the query's committed consumer position
(sources stamp events with their arrival time), 0 when the position is at the end. The
query commits its position as each micro-batch completes
(:class:`~eddy.engine.run.group_runner.GroupRunner`), so an idle app is not mistaken for a
lagging one. A query that never committed is behind from the topic's first retained event.
A query in real-time mode commits only every few minutes (when Spark checkpoints), and
reports how far it has got in between under :func:`progress_consumer`; the further of the
two positions counts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from eddy.bus import TS, Bus

DEFAULT_TTL_S = 0.25
"""How long one measurement is reused: it costs a few bus queries, a request costs less."""


def progress_consumer(consumer: str) -> str:
    """The consumer under which a query reports positions it reached between its commits
    (outputs stored, not yet checkpointed); retention ignores it, being never behind the
    query's own position."""
    return f"{consumer}/progress"


def position(bus: Bus, consumer: str, topic: str, partition: int, start: int) -> int:
    """Where ``consumer`` stands in a partition whose first kept event is ``start``: the
    further of its committed and its progress positions (``start`` when it has neither)."""
    committed = [c for c in (bus.committed(consumer, topic, partition),
                             bus.committed(progress_consumer(consumer), topic, partition))
                 if c is not None]
    return max([start, *committed])


class ConsumerLag:
    """``stream -> seconds`` (an :data:`~eddy.io.config.Behind`) for one consumer."""

    def __init__(self, bus: Callable[[], Bus], consumer: str,
                 topic_of: Callable[[str], str], *, ttl_s: float = DEFAULT_TTL_S) -> None:
        self._bus = bus
        self.consumer = consumer
        self.topic_of = topic_of
        self.ttl_s = ttl_s
        self._measured: dict[str, tuple[float, float]] = {}  # stream → (at, seconds)
        self._lock = threading.Lock()

    def __call__(self, stream: str) -> float:
        now = time.monotonic()
        with self._lock:
            at, seconds = self._measured.get(stream, (-self.ttl_s - 1, 0.0))
            if now - at <= self.ttl_s:
                return seconds
            seconds = self.measure(stream)
            self._measured[stream] = (now, seconds)
            return seconds

    def measure(self, stream: str) -> float:
        """The lag of ``stream`` now, read from the bus."""
        bus, topic = self._bus(), self.topic_of(stream)
        starts, ends = bus.start_offsets(topic), bus.end_offsets(topic)
        oldest: int | None = None
        for p, (start, end) in enumerate(zip(starts, ends)):
            at = position(bus, self.consumer, topic, p, start)
            if at >= end:
                continue
            ts = bus.read_table(topic, p, at, at + 1).column(TS)[0].as_py()
            oldest = ts if oldest is None else min(oldest, ts)
        if oldest is None:
            return 0.0
        return max(0.0, time.time() - oldest / 1000)
