"""The wall clock of a running group, as events on its own bus topic.

Outside playback, Siddhi fires time windows, ``output every <time>``, absent patterns and
``within`` expiries from a scheduler, with no input needed. eddy's runtime only moves its
clock on rows it is given, so a running group gets a heartbeat: while its inputs are idle, a
``__tick__`` event with the current time is appended to the group's tick topic every
interval, and the group reads that topic like any input (the operator hands such rows to
``Runtime.advance``). Because the heartbeat is on the bus, a micro-batch replayed after a
crash sees the very same ticks and fires the very same timers: restarts stay exact.

Groups whose queries are all plain filters and projections have no timers, and
playback apps (``@app:playback``) run on event time only; neither gets a heartbeat, so an
idle app of that kind costs no micro-batches.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus import TS, Bus, TopicSpec
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import AnalyzedApp, ast
from eddy.lang.ast import find_annotation

INTERVAL_S = 0.5
"""How often an idle group's clock moves: timers fire at most this late (plus one batch)."""

log = logging.getLogger("eddy.engine.run.heartbeat")


def needs_heartbeat(analyzed: AnalyzedApp, layout: InputLayout) -> bool:
    """Whether the group can have timers that must fire without input: a window, an output
    rate, a join, pattern or sequence, a named window, an aggregation or a trigger. Decided
    from the app alone (no Spark needed), erring towards a heartbeat."""
    del layout  # every stream of the layout is read; what matters is what the queries do
    if find_annotation(analyzed.app.annotations, "app:playback") is not None:
        return False
    if any(info.kind in ("window", "aggregation", "trigger")
           for info in analyzed.streams.values()):
        return True
    return any(_may_have_timers(info.query) for info in analyzed.queries)


def _may_have_timers(query: ast.Query) -> bool:
    source = query.input
    return (query.output_rate is not None or not isinstance(source, ast.SingleInputStream)
            or source.window is not None)


def tick_topic_spec(name: str) -> TopicSpec:
    """The tick topic: events with a timestamp and no attributes, one partition."""
    return TopicSpec(name, ())


class Heartbeat:
    """Appends a tick to ``topic`` every ``interval_s`` while the ``inputs`` topics stay
    unchanged (a busy group's clock moves with its events)."""

    def __init__(self, bus: Bus, topic: str, inputs: list[str], *,
                 interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._bus, self._topic, self._inputs = bus, topic, inputs
        self._interval_s, self._clock = interval_s, clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {topic}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _ends(self) -> list[list[int]]:
        return [self._bus.end_offsets(topic) for topic in self._inputs]

    def _run(self) -> None:
        seen = self._ends()
        while not self._stop.wait(self._interval_s):
            try:
                now = self._ends()
                if now == seen:
                    ts = int(self._clock() * 1000)
                    self._bus.append(self._topic, pa.table({TS: pa.array([ts], pa.int64())}))
                seen = now
            except Exception:  # a closed bus at shutdown, a transient bus error: try again
                if self._stop.is_set():
                    return
                log.warning("heartbeat of %s could not be appended", self._topic,
                            exc_info=True)
