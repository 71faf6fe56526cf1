"""Building an app's sources and sinks from its ``@source``/``@sink`` annotations.

Every fault in those annotations (an unknown type or option, a bad value, a mapper that
does not fit the transport) is collected and raised as one
:class:`~eddy.lang.errors.SiddhiAppError`, each fault naming the annotation and its line.
Building opens nothing: sources bind and connect in ``start``, sinks on first publish.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol, TypeVar, cast

from eddy.io.api import Sink, Source
from eddy.io.config import IoConfig
from eddy.io.errors import IoConfigError
from eddy.io.ingest import Ingest
from eddy.io.mappers import sink_mapper, source_mapper
from eddy.io.on_error import OnError, fault_attributes, fault_stream, on_error_action
from eddy.io.options import Option, Options, check_nested, describe
from eddy.io.sink_types import SINK_TYPES, SinkSpec, SinkType
from eddy.io.sinks.distribution import STRATEGIES, DistributedSink, Strategy
from eddy.io.source_types import SOURCE_TYPES, SourceSpec, SourceType
from eddy.lang.ast import Annotation, AnnotationElement, Attribute, StreamDefinition
from eddy.lang.errors import AppIssue, SiddhiAppError
from eddy.lang.semantic import AnalyzedApp


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


def build_sources(analyzed: AnalyzedApp, config: IoConfig | None = None, *,
                  streams: Collection[str] | None = None) -> list[Source]:
    """The sources of the app's stream definitions (only of ``streams``, if given), in text
    order; SiddhiAppError listing every faulty ``@source``/``@map``."""
    config = config or IoConfig()
    sources: list[Source] = []
    issues: list[AppIssue] = []
    for definition, annotation, index in _transports(analyzed, "source", streams, issues):
        try:
            sources.append(_source(analyzed, definition, annotation, index, config))
        except IoConfigError as error:
            issues.append(error.issue)
    _raise(issues, analyzed)
    return sources


def build_sinks(analyzed: AnalyzedApp, config: IoConfig | None = None, *,
                streams: Collection[str] | None = None) -> dict[str, list[Sink]]:
    """The sinks of the app by stream name (only of ``streams``, if given); SiddhiAppError
    listing every faulty ``@sink``/``@map``/``@distribution``."""
    config = config or IoConfig()
    sinks: dict[str, list[Sink]] = {}
    issues: list[AppIssue] = []
    for definition, annotation, _ in _transports(analyzed, "sink", streams, issues):
        try:
            sinks.setdefault(definition.name, []).append(
                _sink(analyzed, definition, annotation, config))
        except IoConfigError as error:
            issues.append(error.issue)
    _raise(issues, analyzed)
    return sinks


def delivery_streams(analyzed: AnalyzedApp, streams: Collection[str] | None = None
                     ) -> dict[str, tuple[Attribute, ...]]:
    """The streams the app's sources deliver to, with their attributes: every stream with a
    ``@source`` (only of ``streams``, if given), and its fault stream ``!S`` when it has
    ``@OnError(action='STREAM')``. Each needs a bus topic before the sources start."""
    out: dict[str, tuple[Attribute, ...]] = {}
    for definition in analyzed.app.definitions:
        if not isinstance(definition, StreamDefinition) or \
                (streams is not None and definition.name not in streams) or \
                not any(a.is_named("source") for a in definition.annotations):
            continue
        out[definition.name] = definition.attributes
        try:
            streamed = on_error_action(definition) == "STREAM"
        except IoConfigError:
            streamed = False  # build_sources reports it
        if streamed:
            out[fault_stream(definition.name)] = fault_attributes(definition.attributes)
    return out


def _transports(analyzed: AnalyzedApp, kind: str, streams: Collection[str] | None,
                issues: list[AppIssue]
                ) -> list[tuple[StreamDefinition, Annotation, int]]:
    found: list[tuple[StreamDefinition, Annotation, int]] = []
    for definition in analyzed.app.definitions:
        annotations = [a for a in definition.annotations if a.is_named(kind)]
        if not annotations or (streams is not None and definition.name not in streams):
            continue
        if not isinstance(definition, StreamDefinition):
            issues.append(IoConfigError(f"@{kind} is only allowed on a stream definition, not "
                                        f"on '{definition.name}'", annotations[0].span).issue)
            continue
        found += [(definition, annotation, i) for i, annotation in enumerate(annotations)]
    return found


def _raise(issues: list[AppIssue], analyzed: AnalyzedApp) -> None:
    if issues:
        issues.sort(key=lambda i: (i.span.line, i.span.column))
        raise SiddhiAppError(issues, analyzed.source, analyzed.filename)


def _type_of(annotation: Annotation, known: dict[str, N], owner: str) -> N:
    names = ", ".join(sorted((t.name for t in known.values()), key=str.lower))
    kind = annotation.get("type")
    if kind is None:
        raise IoConfigError(f"@{annotation.name} of {owner} needs type='…'", annotation.span,
                            f"known types: {names}")
    found = known.get(kind.lower())
    if found is None:
        raise IoConfigError(f"{describe(annotation)} of {owner}: unknown {annotation.name} type "
                            f"'{kind}'", annotation.span, f"known types: {names}")
    return found


def _map_annotation(annotation: Annotation, owner: str) -> Annotation | None:
    maps = annotation.nested("map")
    if len(maps) > 1:
        raise IoConfigError(f"{describe(annotation)} of {owner} has more than one @map",
                            maps[1].span)
    return maps[0] if maps else None


def _source(analyzed: AnalyzedApp, definition: StreamDefinition, annotation: Annotation,
            index: int, config: IoConfig) -> Source:
    owner = f"stream '{definition.name}'"
    source_type: SourceType = _type_of(annotation, SOURCE_TYPES, owner)
    check_nested(annotation, ("map", "dist"), owner)
    opts = Options(annotation, source_type.options, owner)
    map_annotation = _map_annotation(annotation, owner)
    mapper = source_mapper(definition.name, definition.attributes, map_annotation,
                           source_type.default_mapper)
    if source_type.textual and not mapper.textual:
        raise IoConfigError(
            f"{describe(annotation)} of {owner}: the {mapper.type} mapper reads Python rows, "
            f"but a {source_type.name} source receives bytes",
            (map_annotation or annotation).span, "use json, csv, text or keyvalue")
    on_error = OnError(definition.name, definition.attributes, on_error_action(definition),
                       config.metrics)
    ingest = Ingest(definition.name, mapper, on_error, config.metrics,
                    f"{source_type.name} source of {definition.name}")
    spec = SourceSpec(analyzed.name, definition.name, index, opts, ingest, config)
    return source_type.build(spec)


def _sink(analyzed: AnalyzedApp, definition: StreamDefinition, annotation: Annotation,
          config: IoConfig) -> Sink:
    owner = f"stream '{definition.name}'"
    sink_type: SinkType = _type_of(annotation, SINK_TYPES, owner)
    check_nested(annotation, ("map", "distribution"), owner)
    map_annotation = _map_annotation(annotation, owner)
    distributions = annotation.nested("distribution")
    if not distributions:
        return _one_sink(analyzed, definition, annotation, map_annotation, sink_type, config)
    distribution = distributions[0]
    check_nested(distribution, ("destination",), owner)
    opts = Options(distribution, (Option("strategy", required=True), Option("partitionKey")),
                   owner)
    strategy = cast(Strategy, opts.choice("strategy", STRATEGIES))
    destinations = distribution.nested("destination")
    if not destinations:
        raise opts.error("needs at least one @destination(…)")
    children = [_one_sink(analyzed, definition, _merged(annotation, destination),
                          map_annotation, sink_type, config) for destination in destinations]
    try:
        return DistributedSink(children, strategy, opts.text("partitionKey"))
    except ValueError as error:
        raise opts.error(str(error)) from None


def _merged(sink: Annotation, destination: Annotation) -> Annotation:
    """The sink's options overridden by one ``@destination``'s, at the destination's place."""
    own = {e.key.lower() for e in destination.elements if e.key is not None}
    elements: tuple[AnnotationElement, ...] = tuple(
        e for e in sink.elements if e.key is None or e.key.lower() not in own)
    return Annotation(sink.name, elements + destination.elements, span=destination.span)


def _one_sink(analyzed: AnalyzedApp, definition: StreamDefinition, annotation: Annotation,
              map_annotation: Annotation | None, sink_type: SinkType, config: IoConfig) -> Sink:
    owner = f"stream '{definition.name}'"
    opts = Options(annotation, sink_type.options, owner)
    mapper = sink_mapper(definition.name, definition.attributes, map_annotation,
                         sink_type.default_mapper)
    if sink_type.textual and not mapper.textual:
        raise IoConfigError(
            f"{describe(annotation)} of {owner}: the {mapper.type} mapper yields Python "
            f"objects, but a {sink_type.name} sink sends text",
            (map_annotation or annotation).span, "use json, csv, text or keyvalue")
    spec = SinkSpec(analyzed.name, definition.name, definition.attributes, opts, mapper, config)
    return sink_type.build(spec)
