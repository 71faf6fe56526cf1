"""Mappers between payloads and events: ``@map(type='json'|'csv'|'text'|'keyvalue'|
'passThrough')``.

Source mappers read payloads into typed events (:class:`SourceMapper.map`); sink mappers
write events as payloads (:class:`SinkMapper.text`). Look types up with
:func:`source_mapper` and :func:`sink_mapper`, which build from a ``@map`` annotation.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.io.errors import IoConfigError
from eddy.io.mappers.base import Fault, Mapped, SinkMapper, SourceMapper
from eddy.io.mappers.csv_mapper import CsvSinkMapper, CsvSourceMapper
from eddy.io.mappers.json_mapper import JsonSinkMapper, JsonSourceMapper
from eddy.io.mappers.keyvalue_mapper import KeyValueSinkMapper, KeyValueSourceMapper
from eddy.io.mappers.passthrough_mapper import (
    PassThroughSinkMapper,
    PassThroughSourceMapper,
)
from eddy.io.mappers.text_mapper import TextSinkMapper, TextSourceMapper
from eddy.lang.ast import Annotation, Attribute
from eddy.lang.errors import NO_SPAN

SOURCE_MAPPERS: dict[str, type[SourceMapper]] = {m.type.lower(): m for m in (
    JsonSourceMapper, CsvSourceMapper, TextSourceMapper, KeyValueSourceMapper,
    PassThroughSourceMapper)}
SINK_MAPPERS: dict[str, type[SinkMapper]] = {m.type.lower(): m for m in (
    JsonSinkMapper, CsvSinkMapper, TextSinkMapper, KeyValueSinkMapper, PassThroughSinkMapper)}

__all__ = ["SINK_MAPPERS", "SOURCE_MAPPERS", "Fault", "Mapped", "SinkMapper", "SourceMapper",
           "sink_mapper", "source_mapper"]


def _kind(annotation: Annotation | None, default: str, known: Sequence[str], owner: str
          ) -> str:
    kind = (annotation.get("type") if annotation else None) or default
    if kind.lower() not in [k.lower() for k in known]:
        raise IoConfigError(f"@map(type='{kind}') of {owner}: unknown mapper type '{kind}'",
                            annotation.span if annotation else NO_SPAN,
                            f"known mapper types: {', '.join(sorted(known, key=str.lower))}")
    return kind.lower()


def source_mapper(stream: str, attributes: Sequence[Attribute], annotation: Annotation | None,
                  default: str = "json") -> SourceMapper:
    """The source mapper an ``@map`` annotation (or its absence: ``default``) asks for."""
    kind = _kind(annotation, default, [m.type for m in SOURCE_MAPPERS.values()],
                 f"stream '{stream}'")
    return SOURCE_MAPPERS[kind](stream, tuple(attributes), annotation)


def sink_mapper(stream: str, attributes: Sequence[Attribute], annotation: Annotation | None,
                default: str = "json") -> SinkMapper:
    """The sink mapper an ``@map`` annotation (or its absence: ``default``) asks for."""
    kind = _kind(annotation, default, [m.type for m in SINK_MAPPERS.values()],
                 f"stream '{stream}'")
    return SINK_MAPPERS[kind](stream, tuple(attributes), annotation)
