"""Converting mapped values to a stream's Siddhi types, a column at a time.

Two styles, by where values come from:

* ``typed`` — JSON and Python values: an ``int`` attribute takes a whole number (``3`` or
  ``3.0``, never ``true`` or ``"3"``), ``float``/``double`` any number, ``string`` text,
  ``bool`` ``true``/``false``, ``object`` anything JSON can hold. ``null`` is null.
* ``text`` — fields of CSV, text and key-value payloads: ``"42"`` parses as a number,
  ``"true"``/``"false"`` (any case) as a bool; an empty field of a non-string attribute is
  null. ``object`` attributes keep the text.

``object`` values travel as JSON text, as the bus stores them. A whole column converts in
one Arrow call when its Python types already fit (the common case, and the fast one); only a
column that does not is walked value by value, to say which events are wrong and why.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus.arrow_codec import ARROW_TYPES
from eddy.io.errors import MappingError
from eddy.lang.ast import Attribute, AttrType

Style = Literal["typed", "text"]


class Missing(Enum):
    """The value of an attribute a payload does not have (unlike an explicit null)."""

    MISSING = "missing"


MISSING = Missing.MISSING

_INT_RANGE = {AttrType.INT: (-(2**31), 2**31 - 1), AttrType.LONG: (-(2**63), 2**63 - 1)}
_TEXT_INT = re.compile(r"[+-]?[0-9]+")
_TEXT_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?"
                         r"|[+-]?(NaN|Infinity)")
_NONE = type(None)
_FAST_KINDS: dict[AttrType, frozenset[type]] = {
    AttrType.INT: frozenset({int, _NONE}), AttrType.LONG: frozenset({int, _NONE}),
    AttrType.FLOAT: frozenset({int, float, _NONE}),
    AttrType.DOUBLE: frozenset({int, float, _NONE}),
    AttrType.STRING: frozenset({str, _NONE}), AttrType.BOOL: frozenset({bool, _NONE}),
}


def shown(value: object) -> str:
    """A value as an error message shows it: ``the text "abc"``, ``true``, ``a JSON object``."""
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return f"the text {text if len(text) <= 40 else text[:37] + '…' + chr(34)}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, (list, tuple)):
        return "a JSON array"
    if isinstance(value, (int, float)):
        return repr(value)
    return f"a {type(value).__name__}"


# -- one value -----------------------------------------------------------------------------------

def typed_value(value: object, kind: AttrType) -> object:
    """A JSON/Python value as ``kind``; :class:`MappingError` saying why it does not fit."""
    if value is None:
        return None
    if kind in _INT_RANGE:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise MappingError(f"expected a whole number, got {shown(value)}")
        if not isinstance(value, numbers.Integral):
            number = float(value)
            if not number.is_integer():
                raise MappingError(f"expected a whole number, got {shown(value)}")
            value = int(number)
        return _in_range(int(value), kind)
    if kind in (AttrType.FLOAT, AttrType.DOUBLE):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise MappingError(f"expected a number, got {shown(value)}")
        return float(value)
    if kind is AttrType.STRING:
        if not isinstance(value, str):
            raise MappingError(f"expected text, got {shown(value)}")
        return value
    if kind is AttrType.BOOL:
        if not isinstance(value, bool):
            raise MappingError(f"expected true or false, got {shown(value)}")
        return value
    return object_text(value)


def text_value(value: object, kind: AttrType) -> object:
    """A text field as ``kind``; :class:`MappingError` saying why it does not parse."""
    if value is None:
        return None
    if not isinstance(value, str):
        return typed_value(value, kind)
    if kind is AttrType.STRING:
        return value
    if kind is AttrType.OBJECT:
        return object_text(value)
    text = value.strip()
    if not text:
        return None
    if kind in _INT_RANGE:
        if not _TEXT_INT.fullmatch(text):
            raise MappingError(f"expected a whole number, got {shown(value)}")
        return _in_range(int(text), kind)
    if kind in (AttrType.FLOAT, AttrType.DOUBLE):
        if not _TEXT_FLOAT.fullmatch(text):
            raise MappingError(f"expected a number, got {shown(value)}")
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise MappingError(f"expected true or false, got {shown(value)}")
    return lowered == "true"


def object_text(value: object) -> str:
    """An ``object`` value as the JSON text the bus stores."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError) as error:
        raise MappingError(f"a {type(value).__name__} cannot be stored as an object "
                           f"(it has no JSON form: {error})") from None


def _in_range(value: int, kind: AttrType) -> int:
    low, high = _INT_RANGE[kind]
    if not low <= value <= high:
        raise MappingError(f"{value} does not fit {kind.siddhi_name} "
                           f"({'32' if kind is AttrType.INT else '64'}-bit)")
    return value


_CONVERTERS: dict[Style, Callable[[object, AttrType], object]] = {
    "typed": typed_value, "text": text_value}


# -- columns -------------------------------------------------------------------------------------

@dataclass
class Converted:
    """Columns converted to a stream's types: the events that fit, and why the others do not.

    ``errors`` maps the index of each event that does not fit to its reason; ``table`` holds
    the other events in their order.
    """

    table: pa.Table
    errors: dict[int, str] = field(default_factory=dict)
    _columns: Sequence[Sequence[object]] = ()
    _attributes: tuple[Attribute, ...] = ()
    _style: Style = "typed"
    _missing_ok: bool = False

    def values_of(self, row: int) -> tuple[object, ...]:
        """The converted values of event ``row``, null where a value does not fit."""
        out: list[object] = []
        for column, attribute in zip(self._columns, self._attributes):
            try:
                out.append(_convert_one(column[row], attribute.type, self._style,
                                        self._missing_ok))
            except MappingError:
                out.append(None)
        return tuple(out)


def convert_columns(columns: Sequence[Sequence[object]], attributes: Sequence[Attribute],
                    style: Style, *, missing_ok: bool = False) -> Converted:
    """Converts one list of raw values per attribute (:data:`MISSING` where a payload had
    none) to an Arrow table of the stream's types; see :class:`Converted`.

    ``missing_ok`` turns a missing attribute into null instead of an error (Siddhi's
    ``fail.on.missing.attribute='false'``).
    """
    attributes = tuple(attributes)
    rows = len(columns[0]) if columns else 0
    arrays: list[pa.Array[Any]] = []
    slow: dict[int, list[object]] = {}
    errors: dict[int, list[str]] = {}
    for index, (column, attribute) in enumerate(zip(columns, attributes)):
        array = _fast_column(column, attribute.type, style)
        if array is None:
            values = _slow_column(column, attribute, style, missing_ok, errors)
            slow[index] = values
            array = _array(values, attribute.type)
        arrays.append(array)
    names = [a.name for a in attributes]
    if not errors:
        return Converted(pa.Table.from_arrays(arrays, names=names))
    keep = [i for i in range(rows) if i not in errors]
    good = [pa.array([slow[i][r] for r in keep], type=ARROW_TYPES[attributes[i].type])
            if i in slow else arrays[i].take(pa.array(keep, type=pa.int64()))
            for i in range(len(attributes))]
    return Converted(pa.Table.from_arrays(good, names=names),
                     {row: "; ".join(reasons) for row, reasons in sorted(errors.items())},
                     columns, attributes, style, missing_ok)


def _array(values: Sequence[object], kind: AttrType) -> pa.Array[Any]:
    return pa.array([None if v is MISSING else v for v in values], type=ARROW_TYPES[kind])


def _fast_column(column: Sequence[object], kind: AttrType, style: Style) -> pa.Array[Any] | None:
    """The column in one Arrow call when its Python types already fit, else None."""
    kinds = set(map(type, column))
    try:
        if style == "typed" and kind in _FAST_KINDS:
            if kinds <= _FAST_KINDS[kind]:
                return pa.array(column, type=ARROW_TYPES[kind])
        elif kinds <= {str, _NONE} and kind is AttrType.STRING:
            return pa.array(column, type=pa.string())
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        pass  # e.g. an int beyond 32 bits: let the slow path say which
    return None


def _slow_column(column: Sequence[object], attribute: Attribute, style: Style,
                 missing_ok: bool, errors: dict[int, list[str]]) -> list[object]:
    values: list[object] = []
    convert = _CONVERTERS[style]
    for row, value in enumerate(column):
        if value is MISSING:
            values.append(None)
            if not missing_ok:
                errors.setdefault(row, []).append(f"attribute '{attribute.name}' is missing")
            continue
        try:
            values.append(convert(value, attribute.type))
        except MappingError as error:
            values.append(None)
            errors.setdefault(row, []).append(
                f"attribute '{attribute.name}' ({attribute.type.siddhi_name}): {error.reason}")
    return values


def _convert_one(value: object, kind: AttrType, style: Style, missing_ok: bool) -> object:
    if value is MISSING:
        if missing_ok:
            return None
        raise MappingError("missing")
    return _CONVERTERS[style](value, kind)
