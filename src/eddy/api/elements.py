"""``GET /siddhi-apps/{app}/elements``: the app as WSO2 SP 4.4's element descriptors.

WSO2's status dashboard draws an app's event flow from these (``AppEventFlow.jsx``): every
entry is an edge from ``inputStreamId`` to ``outputStreamId``, each end with its type
(``Stream``, ``Table``, ``Window``, ``Trigger``, ``Aggregation``, ``Source``, ``Sink``) and
its text (``…SiddhiApp``), all of them strings the dashboard reads unconditionally. As in
WSO2 SP 4.4 there is one entry per (query, input) pair, one per aggregation (its input
stream → the aggregation), one per ``@source`` (the source type → its stream) and one per
``@sink`` (its stream → the sink type). A query entry names the query and its text, and the
user-defined function it calls; a query inside a partition carries the partition's text as
``query``, its own as ``partitionQuery``, and the partition type of its input with that
type's text. Source and sink entries also keep eddy's earlier ``source``/``sink`` fields.
The text of each part is cut from the app as written.
"""

from __future__ import annotations

from typing import Any

from eddy.lang import AnalyzedApp
from eddy.lang.ast import (AggregationDefinition, Annotation, FunctionCall, FunctionDefinition,
                           Partition, Query, ValuePartitionType)
from eddy.lang.errors import Span
from eddy.lang.formatter import format_annotation
from eddy.lang.scope import schema_text
from eddy.lang.walk import walk_expression

_KINDS = {"stream": "Stream", "table": "Table", "window": "Window",
          "aggregation": "Aggregation", "trigger": "Trigger", "inner": "Stream"}
RETURN = "return"  # the output of a partition query that only returns its events


def source_text(source: str, span: Span) -> str:
    """The text a span covers (1-based lines, 0-based columns, exclusive end)."""
    lines = source.splitlines(keepends=True)
    if not 1 <= span.line <= len(lines) or span.end_line < span.line:
        return ""
    if span.line == span.end_line:
        return lines[span.line - 1][span.column:span.end_column]
    parts = [lines[span.line - 1][span.column:]]
    parts += lines[span.line:span.end_line - 1]
    parts.append(lines[span.end_line - 1][:span.end_column] if span.end_line <= len(lines)
                 else "")
    return "".join(parts).strip()


def _element(analyzed: AnalyzedApp, name: str | None) -> tuple[str, str]:
    """``(type, definition text)`` of an element; implied streams get a ``define stream``."""
    if name is None:
        return "Stream", ""
    info = analyzed.streams.get(name)
    if info is None:
        for part in analyzed.partitions:
            info = part.inner_streams.get(name.lstrip("#"))
            if info is not None:
                break
    if info is None:
        return "Stream", ""
    if info.definition is None:
        return _KINDS[info.kind], f"define stream {info.name} {schema_text(info.attributes)};"
    return _KINDS[info.kind], source_text(analyzed.source, info.definition.span)


def _edge(analyzed: AnalyzedApp, input_id: str, output_id: str | None) -> dict[str, Any]:
    """An entry's two ends, with their types and texts."""
    input_type, input_text = _element(analyzed, input_id)
    output_type, output_text = _element(analyzed, output_id)
    return {"inputStreamId": input_id, "inputStreamType": input_type,
            "inputStreamSiddhiApp": input_text,
            "outputStreamId": output_id if output_id is not None else RETURN,
            "outputStreamType": output_type, "outputStreamSiddhiApp": output_text}


def _function(analyzed: AnalyzedApp, query: Query) -> dict[str, str]:
    """``function`` and ``functionQuery`` of the user-defined function the selection calls."""
    defined = {d.name: d for d in analyzed.app.definitions
               if isinstance(d, FunctionDefinition)}
    for attribute in query.selector.attributes or ():
        for expression in walk_expression(attribute.expression):
            if (isinstance(expression, FunctionCall) and expression.namespace is None
                    and expression.name in defined):
                definition = defined[expression.name]
                return {"function": definition.name,
                        "functionQuery": source_text(analyzed.source, definition.span)}
    return {}


def _partition(analyzed: AnalyzedApp, index: int, input_id: str) -> dict[str, str]:
    """The partition fields of a query inside the partition at element ``index`` reading
    ``input_id``."""
    part: Partition = analyzed.partition(index).partition
    types = part.partition_types
    chosen = next((t for t in types if t.stream == input_id), types[0] if types else None)
    fields = {"query": source_text(analyzed.source, part.span)}
    if chosen is not None:
        fields["partitionType"] = ("Value Partition" if isinstance(chosen, ValuePartitionType)
                                   else "Range Partition")
        fields["partitionTypeQuery"] = source_text(analyzed.source, chosen.span)
    return fields


def _annotation_text(analyzed: AnalyzedApp, annotation: Annotation) -> str:
    return source_text(analyzed.source, annotation.span) or format_annotation(annotation)


def _io(analyzed: AnalyzedApp, annotation: Annotation, stream: str) -> dict[str, Any]:
    """A source's entry (its type → the stream) or a sink's (the stream → its type)."""
    kind = annotation.get("type") or ""
    text = _annotation_text(analyzed, annotation)
    if annotation.is_named("source"):
        entry = _edge(analyzed, stream, stream)
        entry.update(inputStreamId=kind, inputStreamType="Source", inputStreamSiddhiApp=text,
                     source=kind, sourceStream=stream, sourceSiddhiApp=text)
    else:
        entry = _edge(analyzed, stream, stream)
        entry.update(outputStreamId=kind, outputStreamType="Sink", outputStreamSiddhiApp=text,
                     sink=kind, sinkStream=stream, sinkSiddhiApp=text)
    return entry


def app_elements(analyzed: AnalyzedApp) -> list[dict[str, Any]]:
    """The descriptors of every query input, aggregation, source and sink of the app."""
    result: list[dict[str, Any]] = []
    for info in analyzed.queries:
        # an inner stream is "#S" at both ends of its edges, so the graph joins them
        target = f"#{info.target}" if info.target_kind == "inner" else info.target
        for name in info.inputs:
            entry = _edge(analyzed, name, target)
            query_text = source_text(analyzed.source, info.query.span)
            entry.update(query=query_text, queryName=info.id)
            if info.partition is not None:
                entry["partitionQuery"] = query_text
                entry.update(_partition(analyzed, info.partition, name))
            entry.update(_function(analyzed, info.query))
            result.append(entry)
    for definition in analyzed.app.definitions:
        if isinstance(definition, AggregationDefinition) and definition.input is not None:
            result.append(_edge(analyzed, definition.input.stream, definition.name))
    for definition in analyzed.app.definitions:
        for annotation in definition.annotations:
            if annotation.is_named("source") or annotation.is_named("sink"):
                result.append(_io(analyzed, annotation, definition.name))
    return result
