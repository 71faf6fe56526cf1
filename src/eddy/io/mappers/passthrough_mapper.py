"""``@map(type='passThrough')``: Python values as they are (Siddhi's default mapper).

Input (in-memory sources only): a row is a tuple or list of values in attribute order, a
mapping of attribute name to value, or an :class:`~eddy.io.api.Event`. Values must already
have the attribute types (``typed`` conversion: an int attribute takes ``3``, not ``"3"``).

Output: the :class:`~eddy.io.api.Event` itself, for in-process targets (log, inMemory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from eddy.io.api import Event
from eddy.io.convert import MISSING, shown
from eddy.io.errors import MappingError
from eddy.io.mappers.base import BadRecord, SinkMapper, SourceMapper


class PassThroughSourceMapper(SourceMapper):
    """Python rows in (see the module docstring)."""

    type = "passThrough"
    textual: ClassVar[bool] = False

    def records(self, payload: object) -> list[object]:
        if isinstance(payload, Event):
            payload = payload.data
        if isinstance(payload, Mapping):
            return [payload]
        if isinstance(payload, (tuple, list)):
            if len(payload) > len(self.names):
                return [BadRecord(repr(payload), f"the row has {len(payload)} values; the "
                                  f"stream '{self.stream}' has {len(self.names)} attributes")]
            return [payload]
        raise MappingError(f"expected a row (a tuple, list or mapping), got {shown(payload)}")

    def columns(self, records: list[object]) -> list[list[object]]:
        columns: list[list[object]] = [[] for _ in self.names]
        for record in records:
            if isinstance(record, Mapping):
                for column, name in zip(columns, self.names):
                    column.append(record.get(name, MISSING))
            else:
                row: tuple[object, ...] | list[object] = record  # type: ignore[assignment]
                for i, column in enumerate(columns):
                    column.append(row[i] if i < len(row) else MISSING)
        return columns

    def render(self, record: object) -> str:
        return repr(record)


class PassThroughSinkMapper(SinkMapper):
    """The event itself, for in-process targets."""

    type = "passThrough"
    textual: ClassVar[bool] = False

    def format(self, event: Event) -> object:
        return event

    def text(self, event: Event) -> str:
        raise TypeError("passThrough yields events, not text; use a text mapper such as json")
