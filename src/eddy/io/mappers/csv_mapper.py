"""``@map(type='csv')``: delimited text (siddhi-map-csv).

Input: each line of a payload is one event, fields in attribute order, split by
``delimiter`` (default ``,``) with ``"`` quoting. ``header.present='true'``: the first line
names the columns and fields are taken by attribute name. ``@attributes(a='0', b='2')``
takes attributes from field positions instead. A line with more fields than the stream
has attributes is a fault; a line with fewer misses attributes (a fault unless
``fail.on.missing.attribute='false'``). Empty fields of non-string attributes are null.

Output: one line per event, fields in attribute order, quoted where needed.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import ClassVar

from eddy.io.api import Event
from eddy.io.convert import MISSING
from eddy.io.errors import MappingError
from eddy.io.javafmt import java_string
from eddy.io.mappers.base import BadRecord, SinkMapper, SourceMapper, payload_text
from eddy.io.options import Option
from eddy.lang.ast import Annotation, Attribute


def _delimiter(mapper: SourceMapper | SinkMapper) -> str:
    value = mapper.opts.text("delimiter") or ","
    if len(value) != 1:
        raise mapper.config_error(f"delimiter must be one character, not '{value}'")
    return value


class CsvSourceMapper(SourceMapper):
    """Delimited text in (see the module docstring)."""

    type = "csv"
    style = "text"
    options = (Option("delimiter", ","), Option("header.present", "false"),
               Option("fail.on.missing.attribute", "true"))
    nested = ("attributes",)
    content_types = ("text/csv", "text/plain")

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self.delimiter = _delimiter(self)
        self.header_present = self.opts.flag("header.present")
        self.missing_ok = not self.opts.flag("fail.on.missing.attribute")
        mapping = self.attribute_map()
        self.positions: list[int] | None = None
        if mapping is not None:
            if self.header_present:
                raise self.config_error("takes either header.present='true' or @attributes "
                                        "positions, not both")
            self.positions = [self._position(n, mapping[n]) for n in self.names]
        self._fixed_header: list[int] | None = None

    def _position(self, name: str, text: str) -> int:
        if not text.strip().isdigit():
            raise self.config_error(f"@attributes({name}='{text}') must be a field position "
                                    f"(0, 1, …)")
        return int(text)

    def with_header(self, line: str) -> CsvSourceMapper:
        """This mapper for payloads without header lines, whose header is ``line`` (a file
        source reads the header once, from the file's first line)."""
        clone = object.__new__(CsvSourceMapper)
        clone.__dict__.update(self.__dict__)
        clone._fixed_header = self._header_positions(self._split(line)[0])
        return clone

    def _split(self, text: str) -> list[list[str]]:
        try:
            return [row for row in csv.reader(io.StringIO(text), delimiter=self.delimiter,
                                               strict=True) if row]
        except csv.Error as error:
            raise MappingError(f"invalid CSV: {error}") from None

    def _header_positions(self, header: list[str]) -> list[int]:
        columns = {name.strip(): i for i, name in enumerate(header)}
        missing = [n for n in self.names if n not in columns]
        if missing:
            raise MappingError(f"the CSV header ({', '.join(header)}) has no column "
                               f"{', '.join(repr(m) for m in missing)}")
        return [columns[n] for n in self.names]

    def records(self, payload: object) -> list[object]:
        rows = self._split(payload_text(payload))
        positions = self.positions or self._fixed_header
        if self.header_present and self._fixed_header is None:
            if not rows:
                return []
            positions = self._header_positions(rows[0])
            rows = rows[1:]
        if positions is not None:
            return [_Row(row, [row[p] if p < len(row) else MISSING for p in positions])
                    for row in rows]
        width = len(self.names)
        return [_Row(row, list(row)) if len(row) <= width else
                BadRecord(self.delimiter.join(row), f"the line has {len(row)} fields; the "
                          f"stream '{self.stream}' has {width} attributes") for row in rows]

    def columns(self, records: list[object]) -> list[list[object]]:
        rows = [r.values for r in records if isinstance(r, _Row)]
        return [[v[i] if i < len(v) else MISSING for v in rows] for i in range(len(self.names))]

    def render(self, record: object) -> str:
        fields = record.fields if isinstance(record, _Row) else [str(record)]
        out = io.StringIO()
        csv.writer(out, delimiter=self.delimiter, lineterminator="").writerow(fields)
        return out.getvalue()


@dataclass(frozen=True)
class _Row:
    """One line: its fields as written, and the raw value of each attribute."""

    fields: list[str]
    values: list[object]


class CsvSinkMapper(SinkMapper):
    """Delimited text out, one line per event (without the line break)."""

    type = "csv"
    options = (Option("delimiter", ","),)
    content_type: ClassVar[str] = "text/csv"

    def __init__(self, stream: str, attributes: tuple[Attribute, ...],
                 annotation: Annotation | None) -> None:
        super().__init__(stream, attributes, annotation)
        self.delimiter = _delimiter(self)
        self._kinds = [a.type for a in self.attributes]

    def header(self) -> str:
        """The header line: the attribute names."""
        return self._line(list(self.names))

    def text(self, event: Event) -> str:
        return self._line(["" if v is None else java_string(v, k)
                           for v, k in zip(event.data, self._kinds)])

    def _line(self, fields: list[str]) -> str:
        out = io.StringIO()
        csv.writer(out, delimiter=self.delimiter, lineterminator="").writerow(fields)
        return out.getvalue()
