"""The logical plan of an app: execution groups, the topics between them, and their wiring.

An execution group is the unit that runs as one Spark streaming query (``parallel``
instances of it in the distributed mode). Streams that cross groups, and the app's input
streams, are bus topics; each consumer reads a topic with one subscription strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from eddy.lang.ast import Attribute
from eddy.lang.errors import Span

Strategy = Literal["all", "round-robin", "field-grouping"]
ElementKind = Literal["query", "partition", "aggregation"]


@dataclass(frozen=True)
class Element:
    """A query, partition or aggregation, with the global streams it reads and writes."""

    id: str
    kind: ElementKind
    queries: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    stateful: bool
    partition_keys: tuple[tuple[str, str], ...]
    span: Span


@dataclass(frozen=True)
class Subscription:
    """How one group reads one topic; ``partitions`` are those each instance reads.

    The topic's events are split into ``count`` partitions at the reading end — by the
    Java hash of ``key`` (field grouping) or by their bus sequence (round-robin) — so that
    every reader sees the topic in one order (see :mod:`eddy.plan.bus_binding`).
    """

    topic: str
    stream: str
    strategy: Strategy
    key: str | None = None
    partitions: tuple[tuple[int, ...], ...] = ()
    count: int = 1


@dataclass(frozen=True)
class ExecutionGroup:
    """Elements that run together as one Spark streaming query, in ``parallel`` instances;
    ``inputs`` are the topics it reads, ``outputs`` the streams it publishes to others."""

    name: str
    parallel: int
    elements: tuple[Element, ...]
    inputs: tuple[Subscription, ...]
    outputs: tuple[str, ...]

    @property
    def queries(self) -> tuple[str, ...]:
        """The ids of the group's queries, those inside its partitions included."""
        return tuple(q for e in self.elements for q in e.queries)


@dataclass(frozen=True)
class Topic:
    """A bus topic: one stream that enters the app or crosses execution groups, named
    ``<app>.<stream>`` (one topic per stream, whatever its consumers' strategies).

    ``producers`` are group names (empty for an app input, fed by sources); ``partitions``
    is how many parts field-grouped consumers split it into by ``key`` (their largest
    parallelism; the parts are taken at the reading end, the bus topic keeps one order).
    """

    name: str
    stream: str
    attributes: tuple[Attribute, ...]
    producers: tuple[str, ...]
    consumers: tuple[tuple[str, Strategy], ...]
    key: str | None = None
    partitions: int = 1


@dataclass(frozen=True)
class AppPlan:
    """An app's execution groups and topics. ``inputs`` are the streams fed from outside the
    app, ``outputs`` the streams it produces that none of its elements reads."""

    app: str
    groups: tuple[ExecutionGroup, ...]
    topics: tuple[Topic, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    distributed: bool

    def group(self, name: str) -> ExecutionGroup:
        """The group called ``name``; KeyError if there is none."""
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)
