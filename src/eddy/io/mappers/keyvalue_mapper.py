"""``@map(type='keyvalue')``: events as key-value maps (siddhi-map-keyvalue).

Input: a Python mapping (from an in-memory source) or form-encoded text
``a=1&b=IBM`` (one event per line; HTTP sends it as
``application/x-www-form-urlencoded``). Keys are attribute names unless
``@attributes(a='key', …)`` names the keys. Text values parse to the attribute types
(``"42"`` → 42); typed values must already fit.

Output: a dict of attribute name to value in-process, form-encoded text on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar
from urllib.parse import parse_qsl, urlencode

from eddy.io.api import Event
from eddy.io.convert import MISSING, shown
from eddy.io.errors import MappingError
from eddy.io.javafmt import java_string
from eddy.io.mappers.base import SinkMapper, SourceMapper, payload_text
from eddy.io.options import Option
from eddy.lang.ast import Annotation, Attribute


class KeyValueSourceMapper(SourceMapper):
    """Key-value maps in (see the module docstring)."""

    type = "keyvalue"
    style = "text"
    options = (Option("fail.on.missing.attribute", "true"),)
    nested = ("attributes",)
    content_types = ("application/x-www-form-urlencoded",)

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self.missing_ok = not self.opts.flag("fail.on.missing.attribute")
        mapping = self.attribute_map()
        self.keys = [mapping[n] for n in self.names] if mapping else list(self.names)

    def records(self, payload: object) -> list[object]:
        if isinstance(payload, Mapping):
            return [payload]
        text = payload_text(payload)
        try:
            return [dict(parse_qsl(line, keep_blank_values=True, strict_parsing=True))
                    for line in text.splitlines() if line.strip()]
        except ValueError as error:
            raise MappingError(f"invalid key-value text ({error}); expected a=1&b=x") from None

    def columns(self, records: list[object]) -> list[list[object]]:
        maps = [r if isinstance(r, Mapping) else {} for r in records]
        return [[m.get(k, MISSING) for m in maps] for k in self.keys]

    def render(self, record: object) -> str:
        if isinstance(record, Mapping):
            return urlencode({str(k): v for k, v in record.items()})
        return shown(record)


class KeyValueSinkMapper(SinkMapper):
    """Key-value maps out: a dict in-process, form-encoded text on the wire."""

    type = "keyvalue"
    content_type: ClassVar[str] = "application/x-www-form-urlencoded"

    def format(self, event: Event) -> object:
        return dict(zip(self.names, event.data))

    def text(self, event: Event) -> str:
        return urlencode([(n, "" if v is None else java_string(v, a.type))
                          for n, v, a in zip(self.names, event.data, self.attributes)])
