"""``@map(type='json')``: Siddhi's JSON mapping (siddhi-map-json).

Input, default mapping: a payload is one event or a JSON array of events; an event is
Siddhi's envelope ``{"event": {"a": 1, …}}`` or the bare object ``{"a": 1, …}``. Custom
mapping: ``@attributes(a='$.x.y', b='$.list[0]')`` takes each attribute from a JSON path of
the event; ``enclosing.element='$.batch'`` first selects the object or array that holds the
events (paths are then relative to each event, ``$.`` optional). ``fail.on.missing.attribute``
(default true) says whether an event without an attribute is a fault or gets null.

Output: the envelope ``{"event": {…}}`` with ``object`` attributes embedded as JSON, or an
``@payload("{\\"v\\": {{a}}}")`` template.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import ClassVar, cast

import orjson

from eddy.io.api import Event
from eddy.io.convert import MISSING, shown
from eddy.io.errors import MappingError
from eddy.io.jsonpath import JsonPath
from eddy.io.mappers.base import BadRecord, SinkMapper, SourceMapper, payload_text
from eddy.io.options import Option
from eddy.lang.ast import Annotation, Attribute


class JsonSourceMapper(SourceMapper):
    """JSON text in (see the module docstring)."""

    type = "json"
    options = (Option("enclosing.element"), Option("fail.on.missing.attribute", "true"))
    nested = ("attributes",)
    content_types = ("application/json",)

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self.missing_ok = not self.opts.flag("fail.on.missing.attribute")
        enclosing = self.opts.text("enclosing.element")
        self.enclosing = self._path(enclosing, "enclosing.element") if enclosing else None
        mapping = self.attribute_map()
        self.paths = None if mapping is None else [
            self._path(p if p.strip().startswith("$") else "$." + p.strip(), f"attribute {n}")
            for n, p in ((n, mapping[n]) for n in self.names)]
        # The envelope is recognised unless the stream's only attribute is called "event".
        self._envelope = self.names != ("event",)

    def _path(self, text: str, what: str) -> JsonPath:
        try:
            return JsonPath.parse(text)
        except ValueError as error:
            raise self.config_error(f"{what}: {error}") from None

    def records(self, payload: object) -> list[object]:
        document = _parse(payload)
        if self.enclosing is not None:
            document = self.enclosing.get(document)
            if document is MISSING:
                raise MappingError(f"the payload has nothing at enclosing.element "
                                   f"'{self.enclosing.text}'")
        items: list[object] = document if isinstance(document, list) else [document]
        if self.paths is not None:
            return items
        if self._envelope and set(map(type, items)) == {dict}:
            objects = cast("list[dict[str, object]]", items)
            return [e["event"] if len(e) == 1 and "event" in e and type(e["event"]) is dict
                    else e for e in objects]
        return [self._record(item) for item in items]

    def _record(self, item: object) -> object:
        if not isinstance(item, dict):
            return BadRecord(json.dumps(item, ensure_ascii=False),
                             f"expected a JSON object for an event, got {shown(item)}")
        event = item.get("event") if self._envelope and len(item) == 1 else None
        return event if isinstance(event, dict) else item

    def columns(self, records: list[object]) -> list[list[object]]:
        if self.paths is not None:
            return [[path.get(r) for r in records] for path in self.paths]
        if set(map(type, records)) - {dict}:
            return [[r.get(n, MISSING) if isinstance(r, dict) else MISSING for r in records]
                    for n in self.names]
        objects = cast("list[dict[str, object]]", records)
        columns = []
        for name in self.names:
            try:
                columns.append(list(map(itemgetter(name), objects)))
            except KeyError:  # some event lacks it: mark where
                columns.append([r.get(name, MISSING) for r in objects])
        return columns

    def render(self, record: object) -> str:
        return json.dumps(record, ensure_ascii=False, default=str)


def _parse(payload: object) -> object:
    if isinstance(payload, (dict, list)):
        return payload  # already parsed (an in-memory source)
    if isinstance(payload, (bytearray, memoryview)):
        payload = bytes(payload)
    if not isinstance(payload, (bytes, str)):
        raise MappingError(f"expected JSON text, got a {type(payload).__name__}")
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as error:
        if isinstance(payload, bytes):
            payload_text(payload)  # says so when the bytes are not UTF-8
        raise MappingError(f"invalid JSON: {error.msg} at line {error.lineno} column "
                           f"{error.colno}") from None


class JsonSinkMapper(SinkMapper):
    """JSON text out (see the module docstring)."""

    type = "json"
    nested = ("payload",)
    content_type: ClassVar[str] = "application/json"

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self._template = self.template(json_quoting=True)

    def text(self, event: Event) -> str:
        if self._template is not None:
            return self._template.render(event)
        return json.dumps({"event": dict(zip(self.names, event.data))}, ensure_ascii=False,
                          separators=(",", ":"), default=str)
