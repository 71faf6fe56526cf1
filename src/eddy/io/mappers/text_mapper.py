"""``@map(type='text')``: free text (siddhi-map-text).

Input, default mapping: Siddhi's text layout, one ``name:value`` pair per attribute separated
by commas (and usually line breaks); string values in double quotes::

    symbol:"IBM",
    price:125.2

Custom mapping: regular expressions named by ``regex.<ID>='…'`` options, and
``@attributes(a='A[1]', b='B[2]', c='A[name]')`` taking each attribute from a group (by
index, 0 for the whole match, or by name) of the first match of a regex in the payload
(``regex.A[1]`` is accepted too). Java's ``(?<name>…)`` groups work. A regex that does not
match, or a group that did not take part, leaves its attributes missing.

``event.grouping.enabled='true'`` splits a payload into several events at ``delimiter``
(default ``~~~~~~~~~~``, as Siddhi).

Output: the same ``name:value`` layout, or an ``@payload("…{{a}}…")`` template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from eddy.io.api import Event
from eddy.io.convert import MISSING
from eddy.io.javafmt import java_string
from eddy.io.mappers.base import BadRecord, SinkMapper, SourceMapper, payload_text
from eddy.io.options import Option
from eddy.lang.ast import Annotation, Attribute, AttrType

_GROUP_REF = re.compile(r"\s*(?:regex\.)?([A-Za-z_]\w*)\s*\[\s*(\w+)\s*\]\s*")
_PAIR = re.compile(r'\s*([^\s:,]+)\s*:\s*("(?:[^"\\]|\\.)*"|[^,\n]*?)\s*(?:,|\n|$)')
_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_DEFAULT_GROUP_DELIMITER = "~~~~~~~~~~"


@dataclass(frozen=True)
class _GroupRef:
    regex: str
    group: int | str


class TextSourceMapper(SourceMapper):
    """Free text in (see the module docstring)."""

    type = "text"
    style = "text"
    options = (Option("regex.*"), Option("fail.on.missing.attribute", "true"),
               Option("event.grouping.enabled", "false"),
               Option("delimiter", _DEFAULT_GROUP_DELIMITER))
    nested = ("attributes",)
    content_types = ("text/plain",)

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self.missing_ok = not self.opts.flag("fail.on.missing.attribute")
        self.grouping = self.opts.flag("event.grouping.enabled")
        self.group_delimiter = self.opts.text("delimiter") or _DEFAULT_GROUP_DELIMITER
        self.regexes = {name: self._compile(name, text)
                        for name, text in self.opts.family("regex").items()}
        mapping = self.attribute_map()
        if mapping is None and self.regexes:
            raise self.config_error("defines regex.* options but no @attributes that use "
                                    "them", hint="add @attributes(a='A[1]', …)")
        self.refs = None if mapping is None else [self._ref(n, mapping[n]) for n in self.names]

    def _compile(self, name: str, text: str) -> re.Pattern[str]:
        try:
            return re.compile(_JAVA_NAMED_GROUP.sub(r"(?P<\1>", text))
        except re.error as error:
            raise self.config_error(f"regex.{name}='{text}' is not a valid regular "
                                    f"expression: {error}") from None

    def _ref(self, attribute: str, text: str) -> _GroupRef:
        match = _GROUP_REF.fullmatch(text)
        if match is None:
            raise self.config_error(f"@attributes({attribute}='{text}') must name a regex "
                                    f"group such as 'A[1]' or 'A[name]'")
        regex, group = match.group(1), match.group(2)
        pattern = self.regexes.get(regex)
        if pattern is None:
            raise self.config_error(f"@attributes({attribute}='{text}') uses regex.{regex}, "
                                    f"which is not defined",
                                    hint=f"defined: {', '.join(self.regexes) or 'none'}")
        ref: int | str = int(group) if group.isdigit() else group
        if isinstance(ref, int) and ref > pattern.groups:
            raise self.config_error(f"@attributes({attribute}='{text}'): regex.{regex} has "
                                    f"{pattern.groups} groups")
        if isinstance(ref, str) and ref not in pattern.groupindex:
            raise self.config_error(f"@attributes({attribute}='{text}'): regex.{regex} has "
                                    f"no group named '{ref}'")
        return _GroupRef(regex, ref)

    def records(self, payload: object) -> list[object]:
        text = payload_text(payload)
        parts = [p for p in text.split(self.group_delimiter) if p.strip()] \
            if self.grouping else [text]
        return [self._record(part) for part in parts]

    def _record(self, text: str) -> _TextRecord | BadRecord:
        if self.refs is None:
            return self._default_record(text)
        matches = {name: pattern.search(text) for name, pattern in self.regexes.items()}
        values: list[object] = []
        for ref in self.refs:
            match = matches[ref.regex]
            value = match.group(ref.group) if match is not None else None
            values.append(MISSING if value is None else value)
        return _TextRecord(text, values)

    def _default_record(self, text: str) -> _TextRecord | BadRecord:
        pairs: dict[str, object] = {}
        position, end = 0, len(text.rstrip())
        while position < end:
            match = _PAIR.match(text, position)
            if match is None or match.end() == position:
                return BadRecord(text, f"cannot read {text[position:position + 30]!r} as "
                                       f"name:value (Siddhi's text layout)")
            name, value = match.group(1), match.group(2)
            pairs[name] = _unquote(value) if value.startswith('"') else \
                (None if value == "null" else value)
            position = match.end()
        return _TextRecord(text, [pairs.get(n, MISSING) for n in self.names])

    def columns(self, records: list[object]) -> list[list[object]]:
        rows = [r.values for r in records if isinstance(r, _TextRecord)]
        return [[row[i] for row in rows] for i in range(len(self.names))]

    def render(self, record: object) -> str:
        return record.text if isinstance(record, _TextRecord) else str(record)


@dataclass(frozen=True)
class _TextRecord:
    text: str
    values: list[object]


def _unquote(value: str) -> str:
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)),
                  value[1:-1])


class TextSinkMapper(SinkMapper):
    """Text out: ``name:value`` pairs, strings quoted, or an ``@payload`` template."""

    type = "text"
    nested = ("payload",)
    content_type: ClassVar[str] = "text/plain"

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self._template = self.template()

    def text(self, event: Event) -> str:
        if self._template is not None:
            return self._template.render(event)
        lines = []
        for attribute, value in zip(self.attributes, event.data):
            shown = java_string(value, attribute.type)
            if attribute.type is AttrType.STRING and value is not None:
                shown = '"' + shown.replace("\\", "\\\\").replace('"', '\\"') + '"'
            lines.append(f"{attribute.name}:{shown}")
        return ",\n".join(lines)
