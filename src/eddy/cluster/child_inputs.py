"""Holding a parent's crossing topics for children that have not started yet.

A child commits its starting position on each topic it reads as soon as its query starts
(:func:`~eddy.engine.spark.bus_source.initial_positions`), and bus retention never removes
what lies at or after a committed position (:mod:`eddy.bus.retention`). But the children
of a parent start one after another, on different workers, each after its Spark query is
up: a receiver child may be taking events for seconds before the child that reads its
topic first commits — and a topic no consumer committed on is not protected at all, so a
short ``retention_age`` could remove events nobody has read. So the leader, before it
deploys a parent's children, creates every topic a child reads and commits that child's
consumer at the topic's first stored event wherever the consumer has no position yet. A
child that then starts resumes from exactly that position (its committed one), and a
position the child already committed is never moved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from eddy.bus import Bus, BusError, TopicSpec
from eddy.io.app_connectors import query_consumer
from eddy.lang import check
from eddy.plan.bus_binding import bus_bindings, crossing_topics
from eddy.store.manager_state import ChildRow

log = logging.getLogger("eddy.cluster.manager")


def hold_inputs(bus: Bus, children: Iterable[ChildRow]) -> list[tuple[str, str, int]]:
    """Creates each child's input topics on ``bus`` and commits the child's consumer at the
    first stored event of each partition it has no position on; returns what it committed
    as ``(consumer, topic, partition)``. Topics are created as a child's group creates them
    (one partition, the child's attributes), so the child's own creation is a no-op.
    Raises the bus's errors, and :class:`~eddy.lang.SiddhiAppError` for a child text that
    does not compile (the splitter wrote it, so that is a bug, not a user's fault)."""
    committed: list[tuple[str, str, int]] = []
    for child in children:
        analyzed = check(child.text, child.name)
        _, read = crossing_topics(analyzed)
        consumer = query_consumer(child.name)  # a worker runs a child as one group
        for stream, binding in sorted(bus_bindings(analyzed.app).items()):
            if binding.topic not in read:
                continue
            bus.create_topic(TopicSpec(binding.topic, analyzed.streams[stream].attributes))
            for partition, first in enumerate(bus.start_offsets(binding.topic)):
                if bus.committed(consumer, binding.topic, partition) is None:
                    bus.commit(consumer, binding.topic, partition, first)
                    committed.append((consumer, binding.topic, partition))
    return committed


class InputHolds:
    """The leader's holds: each child version's inputs held once while it leads."""

    def __init__(self) -> None:
        self._held: set[tuple[str, str]] = set()  # (child, version)

    def hold(self, bus: Callable[[], Bus], children: Sequence[ChildRow]) -> bool:
        """:func:`hold_inputs` for the ``children`` not held yet, on the bus ``bus()``
        opens; False (logged) when the bus is out of reach, so placement waits a round."""
        fresh = [c for c in children if (c.name, c.version) not in self._held]
        if not fresh:
            return True
        try:
            held = hold_inputs(bus(), fresh)
        except (BusError, OSError) as error:
            log.warning("app %s waits for the bus to hold its children's topics: %s",
                        fresh[0].parent, error)
            return False
        self._held.update((c.name, c.version) for c in fresh)
        if held:
            log.info("bus positions held for children not started yet: %s",
                     ", ".join(f"{consumer} on {topic}[{p}]" for consumer, topic, p in held))
        return True
