"""What every mapper is: source mappers turn payloads into typed events, sink mappers the
reverse.

A source mapper splits each payload into *records* (a JSON object, a CSV row, a regex
match…), extracts one raw value per attribute, and converts whole columns to the stream's
types (:mod:`eddy.io.convert`). A payload it cannot read at all (bad JSON) is one fault; a
record it cannot convert (a wrong type, a missing attribute) is a fault of its own while the
others go through. Each fault keeps the raw text and a reason a person understands.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.io.api import Event
from eddy.io.convert import Style, convert_columns
from eddy.io.errors import IoConfigError, MappingError
from eddy.io.mappers.template import Template
from eddy.io.options import Option, Options, check_nested
from eddy.lang.ast import Annotation, Attribute


@dataclass(frozen=True)
class Fault:
    """An event, or a whole payload, that does not fit the stream.

    ``index`` counts the events (and unreadable payloads) of one :meth:`SourceMapper.map`
    call from 0; ``values`` are the attribute values that did convert (null elsewhere), or
    None when the payload could not be read at all.
    """

    index: int
    payload: str
    reason: str
    values: tuple[object, ...] | None = None


@dataclass
class Mapped:
    """The outcome of mapping payloads: the events that fit, in order, and the faults."""

    events: pa.Table
    faults: list[Fault] = field(default_factory=list)


@dataclass(frozen=True)
class BadRecord:
    """A record a mapper recognised but cannot use (a JSON array item that is not an object)."""

    raw: str
    reason: str


def payload_text(payload: object) -> str:
    """A payload as text: bytes are decoded as UTF-8; MappingError if they are not UTF-8."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, (bytes, bytearray, memoryview)):
        try:
            return bytes(payload).decode("utf-8")
        except UnicodeDecodeError as error:
            raise MappingError(f"the payload is not UTF-8 text (byte {error.start} is "
                               f"0x{bytes(payload)[error.start]:02x})") from None
    raise MappingError(f"expected text, got a {type(payload).__name__}")


def shown_payload(payload: object) -> str:
    """A payload as a fault records it: text as it is, anything else by ``repr``."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload).decode("utf-8", errors="replace")
    return payload if isinstance(payload, str) else repr(payload)


class Mapper(ABC):
    """What source and sink mappers share: the stream and the checked ``@map`` options."""

    type: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    nested: ClassVar[tuple[str, ...]] = ()

    def __init__(self, stream: str, attributes: Sequence[Attribute],
                 annotation: Annotation | None) -> None:
        self.stream = stream
        self.attributes = tuple(attributes)
        self.names = tuple(a.name for a in self.attributes)
        self.annotation = annotation or Annotation("map", ())
        owner = f"stream '{stream}'"
        check_nested(self.annotation, self.nested, owner)
        self.opts = Options(self.annotation, self.options, owner)

    def config_error(self, message: str, span_of: Annotation | None = None,
                     hint: str | None = None) -> IoConfigError:
        """An error about this ``@map`` (or its nested ``span_of``) with its position."""
        return self.opts.error(message, span_of.span if span_of else None, hint)


class SourceMapper(Mapper):
    """Payloads in, events of the stream out."""

    style: ClassVar[Style] = "typed"
    content_types: ClassVar[tuple[str, ...]] = ()
    """HTTP content types this mapper reads; empty for mappers of Python objects."""
    textual: ClassVar[bool] = True
    """Whether payloads are text (bytes); False for mappers of Python objects."""
    missing_ok: bool = False

    @abstractmethod
    def records(self, payload: object) -> list[object]:
        """The records of one payload (items may be :class:`BadRecord`); MappingError when
        the payload cannot be read at all."""

    @abstractmethod
    def columns(self, records: list[object]) -> list[list[object]]:
        """One list of raw values per attribute (``MISSING`` where a record has none)."""

    @abstractmethod
    def render(self, record: object) -> str:
        """A record as text, for a fault."""

    def map(self, payloads: Sequence[object]) -> Mapped:
        """Maps payloads to events; never raises for bad data (see :class:`Fault`)."""
        records: list[object] = []
        positions: list[int] | None = None  # None while record i is event i
        faults: list[Fault] = []
        count = 0
        for payload in payloads:
            try:
                items = self.records(payload)
            except MappingError as error:
                positions = positions if positions is not None else list(range(len(records)))
                faults.append(Fault(count, shown_payload(payload), error.reason))
                count += 1
                continue
            if positions is None and BadRecord not in set(map(type, items)):
                records += items
            else:
                positions = positions if positions is not None else list(range(len(records)))
                for offset, item in enumerate(items):
                    if isinstance(item, BadRecord):
                        faults.append(Fault(count + offset, item.raw, item.reason))
                    else:
                        records.append(item)
                        positions.append(count + offset)
            count += len(items)
        converted = convert_columns(self.columns(records), self.attributes, self.style,
                                    missing_ok=self.missing_ok)
        for row, reason in converted.errors.items():
            index = positions[row] if positions is not None else row
            faults.append(Fault(index, self.render(records[row]), reason,
                                converted.values_of(row)))
        faults.sort(key=lambda f: f.index)
        return Mapped(converted.table, faults)

    def attribute_map(self) -> dict[str, str] | None:
        """``@attributes(a='…', …)`` (or positional, in attribute order) by attribute name;
        None when the mapping is the default one."""
        nested = self.annotation.nested("attributes")
        if not nested:
            return None
        if len(nested) > 1:
            raise self.config_error("has more than one @attributes", nested[1])
        spec = nested[0]
        keyed = {e.key: e.value for e in spec.elements if e.key is not None}
        positional = spec.positional
        if keyed and positional:
            raise self.config_error("@attributes mixes name='…' and bare values; use one",
                                    spec)
        if positional:
            if len(positional) != len(self.names):
                raise self.config_error(
                    f"@attributes lists {len(positional)} values for the "
                    f"{len(self.names)} attributes of '{self.stream}'", spec)
            return dict(zip(self.names, positional))
        unknown = [k for k in keyed if k not in self.names]
        if unknown:
            raise self.config_error(f"@attributes maps '{unknown[0]}', which is not an "
                                    f"attribute of '{self.stream}'", spec,
                                    f"attributes: {', '.join(self.names)}")
        missing = [n for n in self.names if n not in keyed]
        if missing:
            raise self.config_error(f"@attributes does not map {', '.join(missing)}", spec,
                                    "map every attribute of the stream")
        return keyed


class SinkMapper(Mapper):
    """Events of the stream in, payloads out."""

    content_type: ClassVar[str] = "text/plain"
    textual: ClassVar[bool] = True
    """Whether :meth:`text` works (False for passThrough, which yields Python objects)."""

    def format(self, event: Event) -> object:
        """The payload of one event for an in-process target (text, a dict or the event)."""
        return self.text(event)

    @abstractmethod
    def text(self, event: Event) -> str:
        """The payload of one event as text, for transports that carry bytes."""

    def template(self, *, json_quoting: bool = False) -> Template | None:
        """The ``@payload("…{{a}}…")`` template, or None for the default layout."""
        nested = self.annotation.nested("payload")
        if not nested:
            return None
        spec = nested[0]
        if len(nested) > 1 or len(spec.elements) != 1 or spec.elements[0].key is not None:
            raise self.config_error('takes one @payload("…") with the template text', spec)
        try:
            return Template(spec.elements[0].value, self.attributes, json_quoting=json_quoting)
        except ValueError as error:
            raise self.config_error(str(error), spec) from None
