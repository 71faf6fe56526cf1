"""How far each child app is behind on the bus topics it reads: for the dashboard's
distributed view, read by the manager from the shared bus (the heads of each topic's
partitions against the child's committed positions)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eddy.bus import Bus, UnknownTopicError
from eddy.io.app_connectors import query_consumer
from eddy.io.lag import position
from eddy.lang import SiddhiAppError, check
from eddy.plan.bus_binding import crossing_topics
from eddy.store.manager_state import ChildRow

def child_lags(bus: Bus, children: Iterable[ChildRow]) -> list[dict[str, Any]]:
    """Per (topic, reading child): ``{topic, child, consumer, heads, committed,
    lagEvents}``; a topic not created yet has no heads and an unknown lag (None). The
    further of a real-time query's two positions counts (:mod:`eddy.io.lag`)."""
    found: list[dict[str, Any]] = []
    for child in children:
        try:
            _, read = crossing_topics(check(child.text, child.name))
        except (SiddhiAppError, ValueError):
            continue
        consumer = query_consumer(child.name)  # a worker runs a child as one group
        for topic in sorted(read):
            entry: dict[str, Any] = {"topic": topic, "child": child.name,
                                     "consumer": consumer, "heads": None,
                                     "committed": None, "lagEvents": None}
            try:
                heads, starts = bus.end_offsets(topic), bus.start_offsets(topic)
            except UnknownTopicError:
                found.append(entry)
                continue
            committed = [position(bus, consumer, topic, p, start)
                         for p, start in enumerate(starts)]
            entry.update(heads=heads, committed=committed,
                         lagEvents=sum(max(0, h - c) for h, c in zip(heads, committed)))
            found.append(entry)
    return found
