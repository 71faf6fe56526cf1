"""``GET /siddhi-apps/{app}/elements``: the app as WSO2 SP's element descriptors.

WSO2's dashboard draws an app's graph from these: one descriptor per (query, input) pair,
naming the input and output elements with their kinds and definitions, the query's text
and name, and its partition; plus one per ``@source`` and ``@sink``. The text of each part
is cut from the app as written.
"""

from __future__ import annotations

from typing import Any

from eddy.lang import AnalyzedApp
from eddy.lang.ast import Annotation, Partition, ValuePartitionType
from eddy.lang.errors import Span
from eddy.lang.formatter import format_annotation
from eddy.lang.scope import schema_text

_KINDS = {"stream": "Stream", "table": "Table", "window": "Window",
          "aggregation": "Aggregation", "trigger": "Trigger", "inner": "InnerStream"}


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


def _definition(analyzed: AnalyzedApp, name: str | None) -> tuple[str | None, str | None]:
    """``(kind, definition text)`` of an element, a ``define stream`` for implied ones."""
    if name is None:
        return None, None
    info = analyzed.streams.get(name)
    if info is None:
        for part in analyzed.partitions:
            info = part.inner_streams.get(name.lstrip("#"))
            if info is not None:
                break
    if info is None:
        return "Stream", None
    if info.definition is None:
        return _KINDS[info.kind], f"define stream {info.name} {schema_text(info.attributes)};"
    return _KINDS[info.kind], source_text(analyzed.source, info.definition.span)


def _partition(analyzed: AnalyzedApp, index: int | None) -> dict[str, str]:
    if index is None:
        return {}
    part: Partition = analyzed.partitions[index].partition
    kinds = {"Value Partition" if isinstance(t, ValuePartitionType) else "Range Partition"
             for t in part.partition_types}
    return {"partitionType": ", ".join(sorted(kinds)),
            "partitionQuery": source_text(analyzed.source, part.span)}


def _io(annotation: Annotation, stream: str, analyzed: AnalyzedApp) -> dict[str, str]:
    role = "source" if annotation.is_named("source") else "sink"
    return {role: annotation.get("type") or "", f"{role}Stream": stream,
            f"{role}SiddhiApp": format_annotation(annotation)}


def app_elements(analyzed: AnalyzedApp) -> list[dict[str, Any]]:
    """The descriptors of every query input, source and sink of the app."""
    result: list[dict[str, Any]] = []
    for info in analyzed.queries:
        output_type, output_text = _definition(analyzed, info.target)
        for name in info.inputs:
            input_type, input_text = _definition(analyzed, name)
            result.append({
                "inputStreamId": name, "inputStreamType": input_type,
                "inputStreamSiddhiApp": input_text,
                "outputStreamId": info.target, "outputStreamType": output_type,
                "outputStreamSiddhiApp": output_text,
                "query": source_text(analyzed.source, info.query.span), "queryName": info.id,
                **_partition(analyzed, info.partition)})
    for definition in analyzed.app.definitions:
        for annotation in definition.annotations:
            if annotation.is_named("source") or annotation.is_named("sink"):
                result.append(_io(annotation, definition.name, analyzed))
    return result
