"""Which streams of an execution group are bus topics, and reading a topic's events back.

An *input* is a defined stream that no query of the group inserts into (events reach it
from outside: a source, another group); an *output* is every stream a query inserts into.
A stream that is both (inserted into here and also fed from outside) is treated as an
output only. A child app's ``@bus`` streams are its parent's topics, of which a parallel
instance keeps its share (:mod:`eddy.plan.bus_binding`); every other stream's topic is the
group's prefix and the stream's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eddy.bus import Bus
from eddy.engine.run.bus_sink import OutputStream
from eddy.engine.spark.bus_source import GroupInput, Selection
from eddy.engine.spark.row_layout import STORE_STREAM, InputLayout
from eddy.lang import AnalyzedApp
from eddy.plan.bus_binding import BusBinding, bus_bindings, topic_of


@dataclass(frozen=True)
class GroupTopics:
    """The streams of a group that are bus topics, and where each query's events go."""

    inputs: tuple[str, ...]
    outputs: tuple[OutputStream, ...]
    queries: dict[str, str] = field(hash=False)  # query id → output stream
    store: str | None = None
    """The topic of on-demand queries, when the group has stores to query."""

    bindings: dict[str, BusBinding] = field(default_factory=dict, hash=False)
    """The ``@bus`` bindings of a child app's streams (:mod:`eddy.plan.bus_binding`)."""

    @classmethod
    def of(cls, analyzed: AnalyzedApp, *, prefix: str = "") -> GroupTopics:
        """The topics of ``analyzed`` run as one group: a stream's ``@bus`` topic (a child
        app's crossing streams), else ``prefix`` + stream name."""
        bindings = bus_bindings(analyzed.app)
        queries = {q.id: q.target for q in analyzed.queries
                   if q.target_kind == "stream" and q.target is not None}
        targets = set(queries.values())
        inputs = tuple(name for name, info in analyzed.streams.items()
                       if info.kind == "stream" and not info.implicit and name not in targets)
        outputs = tuple(OutputStream(name, topic_of(bindings, prefix, name),
                                     analyzed.streams[name].attributes)
                        for name in analyzed.streams if name in targets)
        stores = any(info.kind in ("table", "window", "aggregation")
                     for info in analyzed.streams.values())
        return cls(inputs, outputs, queries, prefix + STORE_STREAM if stores else None,
                   bindings)

    def input(self, layout: InputLayout, topics: list[tuple[str, str]]) -> GroupInput:
        """What the group's source reads: ``topics`` and the parts of them it keeps."""
        selections = tuple(Selection(b.topic, b.strategy, b.key, b.partitions, b.read)
                           for s, b in self.bindings.items() if s in self.inputs and b.selects)
        return GroupInput(layout, tuple(topics), selections)

    @property
    def selects(self) -> bool:
        """Whether the group reads only a share of an input topic (a parallel child app)."""
        return any(b.selects for s, b in self.bindings.items() if s in self.inputs)


def output_events(bus: Bus, topic: str) -> list[dict[str, Any]]:
    """Every retained event of ``topic``, partition by partition, as ``{"timestamp", "data"}``
    (for tests and tools)."""
    events: list[dict[str, Any]] = []
    starts, ends = bus.start_offsets(topic), bus.end_offsets(topic)
    names = [a.name for a in bus.topic(topic).attributes]
    for p, (start, end) in enumerate(zip(starts, ends)):
        table = bus.read_table(topic, p, start, end)
        columns: Mapping[str, list[Any]] = table.to_pydict()
        for i in range(table.num_rows):
            events.append({"timestamp": columns["_ts"][i],
                           "data": [columns[n][i] for n in names]})
    return events
