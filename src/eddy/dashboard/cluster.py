"""What a manager node says about the fully distributed deployment (read by the poller from
its API), and the topics between child apps (read from the children's ``@bus`` streams).

A manager answers ``/nodeDetails/runTime`` with ``manager``; the dashboard then reads its
parent apps (``/siddhi-apps`` and each one's ``/status``: a waiting app says why), every
child app and the worker it runs on (``/managers/siddhi-apps``), its workers
(``/resourceClusterWorkers/clusteredWorkerNodeDetails``, which the nodes page can add in
one go) and its scheduling events (``/managers/schedule-events``: workers lost, children
rescheduled, apps waiting) and, per parent, each child's lag on the topics it reads
(``/managers/siddhi-apps/{app}/topics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eddy.lang import SiddhiAppError, check
from eddy.plan.bus_binding import crossing_topics


@dataclass(frozen=True)
class ParentState:
    """One parent app on the manager: ``active`` (every child placed) or ``inactive`` with
    the reason it waits."""

    name: str
    status: str
    reason: str


@dataclass
class ManagerState:
    """The last poll of a manager."""

    parents: list[ParentState] = field(default_factory=list)
    children: list[dict[str, Any]] = field(default_factory=list)
    workers: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    lags: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per parent app, ``/managers/siddhi-apps/{app}/topics``."""
    leader: bool | None = None


@dataclass(frozen=True)
class TopicLink:
    """A bus topic of a parent app: the children writing it and those reading it."""

    topic: str
    producers: tuple[str, ...]
    consumers: tuple[str, ...]
    lags: tuple[int | None, ...] = ()
    """Per consumer, the events it has yet to read (None: unknown)."""


def topics(children: list[dict[str, Any]],
           lags: list[dict[str, Any]] | None = None) -> list[TopicLink]:
    """The topics between a parent's children (:func:`crossing_topics` of each child's
    text), with each reader's lag from the manager's ``…/topics`` when given; a child whose
    text does not analyse is left out."""
    producers: dict[str, set[str]] = {}
    consumers: dict[str, set[str]] = {}
    for child in children:
        name, text = child.get("childAppName", ""), child.get("siddhiApp", "")
        try:
            written, read = crossing_topics(check(text, name))
        except (SiddhiAppError, ValueError):
            continue
        for topic in written:
            producers.setdefault(topic, set()).add(name)
        for topic in read:
            consumers.setdefault(topic, set()).add(name)
    lag = {(entry.get("topic"), entry.get("child")): entry.get("lagEvents")
           for entry in lags or []}
    return [TopicLink(t, tuple(sorted(producers.get(t, ()))),
                      tuple(sorted(consumers.get(t, ()))),
                      tuple(lag.get((t, c)) for c in sorted(consumers.get(t, ()))))
            for t in sorted(set(producers) | set(consumers))]
