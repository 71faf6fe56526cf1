"""How a child app's text says which bus topic a stream is, and which part of it it reads.

A child app (:mod:`eddy.plan.children`) is an ordinary Siddhi app whose crossing streams
carry one eddy annotation on their definition::

    @bus(topic='TempApp.TempStream', strategy='field-grouping', key='roomNo',
         partitions='2', read='0')
    define stream TempStream (deviceID long, roomNo int, temp double);

* ``topic`` — the bus topic holding the stream: ``<parent app>.<stream>``, in the parent's
  namespace, the same topic a single-node run of the parent uses. A group that writes the
  stream appends to it (the engine's de-duplicated batch appends); a group that reads it
  reads it directly as its input, with its positions committed with its checkpoints; a
  ``@source`` on the stream writes its events to it.
* ``strategy`` (readers only) — ``all`` (default), ``round-robin`` or ``field-grouping``.
  Every reader reads the whole topic in one order; a parallel instance keeps the events of
  the ``read`` parts of ``partitions`` parts: the part of an event is
  ``abs(javaHash(key)) % partitions`` for field grouping (the bus's own routing hash,
  :mod:`eddy.bus.routing`, as WSO2 SP routes a partitioned stream, so the same key always
  goes to the same instance) and ``bus sequence % partitions`` for round-robin.

Splitting at the reading end, not into physical bus partitions, keeps one order per topic:
a parallel-1 reader of a stream that others read field-grouped sees exactly the order a
single-node run sees, which physical partitions merged by timestamp would not give.
"""

from __future__ import annotations

from dataclasses import dataclass

from eddy.lang import AnalyzedApp, ast
from eddy.plan.model import Strategy

BUS_ANNOTATION = "bus"


@dataclass(frozen=True)
class BusBinding:
    """One stream's topic and, for a reader, the parts of it this instance keeps."""

    stream: str
    topic: str
    strategy: Strategy = "all"
    key: str | None = None
    partitions: int = 1
    read: tuple[int, ...] = ()

    @property
    def selects(self) -> bool:
        """Whether the reader keeps only some of the topic's events."""
        return self.strategy != "all" and self.partitions > 1

    def annotation(self) -> ast.Annotation:
        """The ``@bus(...)`` annotation that says this in a child's text."""
        items = [("topic", self.topic)]
        if self.strategy != "all":
            items.append(("strategy", self.strategy))
            if self.key is not None:
                items.append(("key", self.key))
            items += [("partitions", str(self.partitions)),
                      ("read", ",".join(str(p) for p in self.read))]
        return ast.Annotation(BUS_ANNOTATION,
                              tuple(ast.AnnotationElement(k, v) for k, v in items))


def bus_bindings(app: ast.SiddhiApp) -> dict[str, BusBinding]:
    """The ``@bus`` bindings of an app's stream definitions, by stream name (an app that is
    not a child has none). Malformed values raise ValueError (the splitter writes them)."""
    found: dict[str, BusBinding] = {}
    for definition in app.definitions:
        if not isinstance(definition, ast.StreamDefinition):
            continue
        annotation = ast.find_annotation(definition.annotations, BUS_ANNOTATION)
        if annotation is None:
            continue
        topic = annotation.get("topic")
        if not topic:
            raise ValueError(f"@bus on stream '{definition.name}' names no topic")
        strategy = annotation.get("strategy", "all")
        if strategy not in ("all", "round-robin", "field-grouping"):
            raise ValueError(f"@bus strategy '{strategy}' of stream '{definition.name}'")
        read = annotation.get("read") or ""
        found[definition.name] = BusBinding(
            definition.name, topic, strategy,  # type: ignore[arg-type]
            annotation.get("key"), int(annotation.get("partitions") or "1"),
            tuple(int(p) for p in read.split(",") if p.strip()))
    return found


def topic_of(bindings: dict[str, BusBinding], prefix: str, stream: str) -> str:
    """The topic of ``stream``: its binding's, else ``prefix + stream`` (an app's own)."""
    binding = bindings.get(stream)
    return binding.topic if binding is not None else prefix + stream


def crossing_topics(analyzed: AnalyzedApp) -> tuple[set[str], set[str]]:
    """``(written, read)``: the ``@bus`` topics a child app's queries or ``@source``s write
    (a receiver child's source writes straight into its stream's topic), and those it reads
    (every other ``@bus`` stream) — the edges between a parent's children."""
    targets = {q.target for q in analyzed.queries if q.target is not None}
    targets |= {d.name for d in analyzed.app.definitions
                if isinstance(d, ast.StreamDefinition)
                and ast.find_annotation(d.annotations, "source") is not None}
    written: set[str] = set()
    read: set[str] = set()
    for stream, binding in bus_bindings(analyzed.app).items():
        (written if stream in targets else read).add(binding.topic)
    return written, read
