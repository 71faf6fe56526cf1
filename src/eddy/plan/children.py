"""Splitting a ``@dist`` app into child apps: one per execution group instance.

Each child is a complete Siddhi app that a worker deploys unchanged (``POST /siddhi-apps``)
and runs as one execution group. It holds the group's queries and partitions as written
(without ``@dist``), the definitions they use, and a ``@bus`` annotation on every stream
that crosses groups or leaves the app (:mod:`eddy.plan.bus_binding`): the stream is the
topic ``<parent>.<stream>`` of the shared bus, read with the group's subscription strategy.

As WSO2 SP (digest §1): children are named ``<parent>-<group>-<instance>``; a user
``@source`` stream read by more than one group, or by a parallel group, gets a receiver
group ``passthrough-<stream>`` whose child holds the source (placed on a receiver node;
eddy's source writes straight into the stream's topic, so the passthrough runs no query);
otherwise the source stays in the group that reads it, which then is a receiver child.
A ``@dist(parallel='n')`` nested in the ``@source`` makes n receiver instances, each
opening the same source on its own receiver node (an HTTP source's port on each, behind a
load balancer); unlike WSO2, which ignores it when the stream needs no passthrough, it
always makes one, so the receivers the user asked for exist.
A user ``@sink`` stays where its stream is produced. Unlike WSO2, names are deterministic,
every app annotation is kept (only the name changes), and queries keep their ids (an
``@info(name=…)`` is added where the id was generated).

An app without ``@dist`` is its own single child: same name, same text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from eddy.lang import ast, check
from eddy.lang.errors import SiddhiAppError
from eddy.lang.formatter import format_app
from eddy.lang.semantic import AnalyzedApp
from eddy.plan.bus_binding import BUS_ANNOTATION, BusBinding
from eddy.plan.groups import PlanError, build_plan, parallel_of
from eddy.plan.model import AppPlan, Element, ExecutionGroup, Subscription

PASSTHROUGH = "passthrough-"


@dataclass(frozen=True)
class ChildApp:
    """One instance of one execution group of a parent app, as deployable app text."""

    parent: str
    """The parent app's name."""
    name: str
    """Deterministic: ``f"{parent}-{group}-{instance}"`` (the parent's own name when the
    parent has no ``@dist``)."""
    group: str
    """The execution group's name."""
    instance: int
    """1-based instance of a parallel group."""
    receiver: bool
    """The child holds user-defined ``@source`` connectors: it goes on a receiver node."""
    text: str
    """A complete Siddhi app a worker deploys unchanged through ``POST /siddhi-apps``."""
    version: str
    """sha256 hex of ``text`` (content hash, for reconciliation)."""


def _version(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _has(definition: ast.Definition, name: str) -> bool:
    return ast.find_annotation(definition.annotations, name) is not None


def split_app(text: str, origin: str = "<app>") -> tuple[ChildApp, ...]:
    """The child apps of ``text``, passthrough (receiver) groups first, then the execution
    groups in plan order, instances 1..parallel. Raises
    :class:`~eddy.lang.errors.SiddhiAppError` (positioned in ``origin``) for an app that
    cannot be split."""
    analyzed = check(text, origin)
    plan = build_plan(analyzed)
    if not plan.distributed:
        receiver = any(isinstance(d, ast.StreamDefinition) and _has(d, "source")
                       for d in analyzed.app.definitions)
        return (ChildApp(plan.app, plan.app, plan.groups[0].name, 1, receiver, text,
                         _version(text)),)
    try:
        children = _Splitter(analyzed, plan).children()
    except PlanError as fault:
        raise SiddhiAppError([fault.issue], text, origin) from None
    for child in children:  # a child the engine could not run is a bug in the splitter
        check(child.text, f"{origin} ({child.name})")
    return children


@dataclass(frozen=True)
class _Group:
    """An execution group as the splitter renders it: the plan's group, or a passthrough."""

    name: str
    parallel: int
    elements: tuple[Element, ...]
    inputs: tuple[Subscription, ...]
    writes: tuple[str, ...]
    """Streams it writes to the bus (for other groups, or out of the app)."""
    sources: tuple[str, ...]
    """Streams whose user ``@source`` it holds."""


class _Splitter:
    """Renders the children of one planned app; use :func:`split_app`."""

    def __init__(self, analyzed: AnalyzedApp, plan: AppPlan) -> None:
        self.analyzed = analyzed
        self.plan = plan
        self.app = analyzed.app
        self.definitions = {d.name: d for d in self.app.definitions}
        self.ast_elements = self._ast_elements()

    def _ast_elements(self) -> dict[str, ast.ExecutionElement]:
        """The written query or partition of each plan element id."""
        by_id: dict[str, ast.ExecutionElement] = {}
        partition_no = 0
        ids = {info.index: info.id for info in self.analyzed.queries if info.partition is None}
        for index, element in enumerate(self.app.elements):
            if isinstance(element, ast.Partition):
                partition_no += 1
                by_id[f"partition-{partition_no}"] = self._named_partition(element, index)
            else:
                by_id[ids[index]] = _named(element, ids[index])
        return by_id

    def _named_partition(self, partition: ast.Partition, index: int) -> ast.Partition:
        inner = [i.id for i in self.analyzed.queries if i.index == index]
        queries = tuple(_named(q, qid) for q, qid in zip(partition.queries, inner))
        return replace(partition, annotations=_without(partition.annotations, "dist"),
                       queries=queries)

    # -- groups ------------------------------------------------------------------------------
    def groups(self) -> list[_Group]:
        """Passthrough groups for the sources that need one, then the plan's groups."""
        readers: dict[str, list[ExecutionGroup]] = {}
        for group in self.plan.groups:
            for sub in group.inputs:
                readers.setdefault(sub.stream, []).append(group)
        passthrough: list[_Group] = []
        kept: dict[str, list[str]] = {}  # group -> source streams it keeps
        for definition in self.app.definitions:
            if not (isinstance(definition, ast.StreamDefinition) and _has(definition, "source")):
                continue
            stream = definition.name
            if stream in self.analyzed.streams and any(
                    stream in e.outputs for g in self.plan.groups for e in g.elements):
                raise PlanError(f"stream '{stream}' has a @source and is also inserted into "
                                "by a query; it cannot be split", definition.span)
            consumers = readers.get(stream, [])
            receivers = _receiver_parallel(definition)
            if len(consumers) == 1 and consumers[0].parallel == 1 and receivers == 1:
                kept.setdefault(consumers[0].name, []).append(stream)
            else:
                passthrough.append(_Group(PASSTHROUGH + stream, receivers, (), (), (stream,),
                                          (stream,)))
        names = {g.name for g in self.plan.groups}
        for receiver in passthrough:
            if receiver.name in names:
                raise PlanError(f"execution group '{receiver.name}' is the name of the receiver "
                                "group of a @source; rename the group", self.app.span)
        self._check_self_reads()
        return passthrough + [_Group(g.name, g.parallel, g.elements, g.inputs, g.outputs,
                                     tuple(kept.get(g.name, ()))) for g in self.plan.groups]

    def _check_self_reads(self) -> None:
        """A group may not both write a crossing stream and read it from the bus: it would
        read its own events back."""
        for group in self.plan.groups:
            for sub in group.inputs:
                if sub.stream in group.outputs:
                    raise PlanError(
                        f"stream '{sub.stream}' is written by execution group '{group.name}' "
                        "and by another group that it reads it from; put the queries that "
                        "insert into it in one group", group.elements[0].span)

    def children(self) -> tuple[ChildApp, ...]:
        """Every instance of every group, as child apps."""
        out: list[ChildApp] = []
        for group in self.groups():
            for instance in range(1, group.parallel + 1):
                name = f"{self.plan.app}-{group.name}-{instance}"
                text = format_app(self._child_app(group, instance, name))
                out.append(ChildApp(self.plan.app, name, group.name, instance,
                                    bool(group.sources), text, _version(text)))
        return tuple(out)

    # -- one child ---------------------------------------------------------------------------
    def _child_app(self, group: _Group, instance: int, name: str) -> ast.SiddhiApp:
        annotations = (ast.Annotation("app:name", (ast.AnnotationElement(None, name),)),) + \
            _without(self.app.annotations, "app:name")
        bindings = self._bindings(group, instance)
        used = {n for e in group.elements for n in e.inputs + e.outputs} | set(group.sources)
        for element in group.elements:  # what the group's queries read and write
            for query_id in element.queries:
                query = self.analyzed.query(query_id)
                used.update(n for n in query.inputs if not n.startswith("#"))
                if query.target is not None:
                    used.add(query.target)
        definitions: list[ast.Definition] = []
        for stream_name, info in self.analyzed.streams.items():
            if stream_name not in used or info.partition is not None:
                continue
            definition = info.definition
            if info.kind == "stream":
                definitions.append(self._stream(group, stream_name, bindings.get(stream_name)))
            elif info.kind == "aggregation":
                definitions.append(self._aggregation(group, stream_name))
            elif definition is not None:
                definitions.append(definition)
        definitions += [d for d in self.app.definitions if isinstance(d, ast.FunctionDefinition)]
        elements = tuple(self.ast_elements[e.id] for e in group.elements if e.kind != "aggregation")
        return ast.SiddhiApp(annotations, tuple(definitions), elements)

    def _bindings(self, group: _Group, instance: int) -> dict[str, BusBinding]:
        """The ``@bus`` binding of each stream the child reads from or writes to the bus."""
        bindings: dict[str, BusBinding] = {}
        for stream in group.writes + group.sources:
            bindings[stream] = BusBinding(stream, self._topic(stream))
        for sub in group.inputs:
            if sub.stream in group.sources:
                continue  # its own source writes the topic, the group reads it all
            if sub.strategy == "field-grouping" and sub.key not in {
                    a.name for a in self.analyzed.streams[sub.stream].attributes}:
                raise PlanError(f"group '{group.name}' is partitioned by '{sub.key}' of "
                                f"'{sub.stream}', which is not an attribute: a parallel group "
                                "is fed by the value of an attribute", group.elements[0].span,
                                "partition by an attribute, or give the group parallel 1")
            read = sub.partitions[instance - 1] if sub.partitions else ()
            bindings[sub.stream] = BusBinding(sub.stream, sub.topic, sub.strategy, sub.key,
                                              sub.count, read) \
                if sub.strategy != "all" else BusBinding(sub.stream, sub.topic)
        return bindings

    def _topic(self, stream: str) -> str:
        return f"{self.plan.app}.{stream}"

    def _stream(self, group: _Group, name: str, binding: BusBinding | None) -> ast.Definition:
        """The stream's definition in this child: without the user ``@source`` unless the
        child holds it, without the user ``@sink`` unless the child produces the stream,
        with its ``@bus`` binding when it crosses."""
        info = self.analyzed.streams[name]
        definition = info.definition if isinstance(info.definition, ast.StreamDefinition) \
            else ast.StreamDefinition(name, (), info.attributes)
        annotations = _without(definition.annotations, BUS_ANNOTATION)
        if name not in group.sources:
            annotations = _without(annotations, "source")
        annotations = tuple(_without_nested_dist(a) if a.is_named("source") else a
                            for a in annotations)
        produced = any(name in e.outputs for e in group.elements)
        if not produced:
            annotations = _without(annotations, "sink")
        if binding is not None:
            annotations += (binding.annotation(),)
        return replace(definition, annotations=annotations)

    def _aggregation(self, group: _Group, name: str) -> ast.Definition:
        """An aggregation runs in its own group; a group that only joins a stored one reads
        the shared store, which eddy does not split yet."""
        definition = self.definitions[name]
        if any(e.kind == "aggregation" and e.id == name for e in group.elements):
            return definition
        raise PlanError(f"execution group '{group.name}' joins aggregation '{name}', which "
                        "runs in its own group; eddy cannot split that yet", definition.span,
                        "put the joining query in the aggregation's group (leave out @dist)")


def _receiver_parallel(definition: ast.StreamDefinition) -> int:
    """How many receiver instances a source stream asks for: the ``@dist(parallel)``
    nested in its ``@source`` annotations, the least when several say (as WSO2 SP), 1 when
    none does."""
    asked = [parallel_of(dist) for source in definition.annotations if source.is_named("source")
             for dist in source.nested("dist")]
    return min(asked, default=1)


def _without_nested_dist(annotation: ast.Annotation) -> ast.Annotation:
    """A ``@source`` without its nested ``@dist``: the parent's parallelism, which the
    split already made into receiver instances."""
    return replace(annotation, annotations=_without(annotation.annotations, "dist"))


def _without(annotations: tuple[ast.Annotation, ...], name: str) -> tuple[ast.Annotation, ...]:
    return tuple(a for a in annotations if not a.is_named(name))


def _named(query: ast.Query, query_id: str) -> ast.Query:
    """The query without ``@dist``, with ``@info(name=…)`` so that it keeps its id."""
    annotations = _without(query.annotations, "dist")
    if query.name is None:
        info = ast.find_annotation(annotations, "info")
        named = ast.Annotation("info", ((info.elements if info else ()) +
                                        (ast.AnnotationElement("name", query_id),)),
                               info.annotations if info else ())
        annotations = (named,) + _without(annotations, "info")
    return replace(query, annotations=annotations)
