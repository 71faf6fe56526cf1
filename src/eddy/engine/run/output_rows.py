"""A micro-batch's output rows (:data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`) as typed
columns, a column at a time.

Every output of a group crosses into the driver as a row with its values in typed value
slots (the JVM's operators) or JSON-encoded in ``_data`` (the Python operators), and every
one of them has to reach the bus as typed Arrow columns in the group's order. Slots are
taken as they are (:func:`output_values`). Done a row at a time in Python, ordering and
decoding would cost ~30 µs an event (a sort key, a decoded dict, a conversion per value) —
more than the whole Spark micro-batch for a plain filter — so here the order is one
``numpy.lexsort`` and JSON values are decoded by Arrow's JSON reader
(objects, as Spark's ``to_json`` writes them) or by one ``json.loads`` of the whole batch
and a typed ``pyarrow.array`` per column (arrays, as the per-event runtime writes them).
Only values Arrow cannot take as they are (``"NaN"`` for a double, a JSON object for an
``object`` attribute, …) go through the per-value conversion, and only in their column.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from eddy.bus.arrow_codec import ARROW_TYPES
from eddy.engine.spark.row_layout import DATA, ORDER, SEQ, value_slots
from eddy.lang.ast import Attribute, AttrType

_SHORTER_FIRST = np.iinfo(np.int64).min
"""Pads a shorter ``_order`` so it sorts before the longer ones it is a prefix of, as
Python compares lists."""


def group_order(rows: pa.Table) -> np.ndarray:
    """The row indices of ``rows`` sorted by ``(_seq, _order)`` — the group's order, each
    output after the input that caused it (DESIGN.md §3); stable for equal keys."""
    return ordered(order_keys(rows))


def order_keys(rows: pa.Table) -> list[np.ndarray]:
    """``(_seq, _order)`` of ``rows`` as sort keys, most significant first: ``_seq``, then
    one int64 array per position of the ``_order`` paths (a shorter path padded so that it
    sorts first). Made once per batch, so each stream's rows are ordered by indexing these
    arrays instead of taking their list column out of the batch again."""
    count = rows.num_rows
    if count == 0:
        return [np.zeros(0, np.int64)]
    seq = rows.column(SEQ).to_numpy()
    order = rows.column(ORDER).combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(order), 0).to_numpy().astype(np.int64)
    width = int(lengths.max())
    keys: list[np.ndarray] = []  # the order's positions, first to last
    if width:
        flat = pc.list_flatten(order).to_numpy().astype(np.int64)
        if flat.size == count * width:  # every path as long: no padding
            keys = list(flat.reshape(count, width).T)
        else:  # one gather per position (a scatter of every element cost 4x as much)
            starts = np.cumsum(lengths) - lengths
            for j in range(width):
                present = lengths > j
                key = flat[np.where(present, starts + j, 0)]
                key[~present] = _SHORTER_FIRST
                keys.append(key)
    return [seq, *keys]


def ordered(keys: list[np.ndarray]) -> np.ndarray:
    """The indices that sort rows by ``keys`` (:func:`order_keys`, or some rows' part of
    them); ``0, 1, …`` when they are in order already, as an operator's own outputs
    usually are."""
    count = len(keys[0])
    if _sorted(keys):
        return np.arange(count, dtype=np.int64)
    return np.lexsort(keys[::-1])


def _sorted(keys: list[np.ndarray]) -> bool:
    """Whether the rows are already in the lexicographic order of ``keys`` (most
    significant first): each row's key tuple at most the next one's."""
    if len(keys[0]) < 2:
        return True
    in_order = np.ones(len(keys[0]) - 1, bool)
    for key in reversed(keys):
        later, earlier = key[1:], key[:-1]
        in_order = (earlier < later) | ((earlier == later) & in_order)
    return bool(in_order.all())


def output_values(rows: pa.Table, attributes: Sequence[Attribute]) -> list[pa.Array[Any]]:
    """The values of output ``rows`` (all of one stream) as one typed array per attribute,
    from their value slots, from ``_data`` where it is set, or from both.

    Raises ``ValueError`` when a JSON row does not have one value per attribute.
    """
    slots = value_slots(attributes)
    data = rows.column(DATA).combine_chunks()
    if slots is None or data.null_count == 0:
        return decode_values(data, attributes)
    typed = [rows.column(slot).combine_chunks().cast(ARROW_TYPES[a.type])
             for slot, a in zip(slots, attributes, strict=True)]
    if data.null_count == len(data):
        return typed
    written = pc.is_valid(data)
    decoded = decode_values(data.filter(written), attributes)
    return [pc.replace_with_mask(column, written, values)
            for column, values in zip(typed, decoded, strict=True)]


def decode_values(data: pa.Array[Any] | pa.ChunkedArray[Any],
                  attributes: Sequence[Attribute]) -> list[pa.Array[Any]]:
    """The values of ``_data`` texts as one typed array per attribute.

    Raises ``ValueError`` when a row does not have one value per attribute.
    """
    texts = data.combine_chunks() if isinstance(data, pa.ChunkedArray) else data
    objects = any(a.type is AttrType.OBJECT for a in attributes)  # must become JSON text
    if len(texts) and not objects and pc.all(pc.starts_with(texts, "{")).as_py():
        columns = _objects(texts, attributes)
        if columns is not None:
            return columns
    return _decoded(texts.to_pylist(), attributes)


def _objects(texts: pa.Array[Any],
             attributes: Sequence[Attribute]) -> list[pa.Array[Any]] | None:
    """Spark's ``to_json`` objects (keys = the attribute names) read by Arrow's JSON reader;
    None when a value does not fit its column as it is (the caller decodes them)."""
    # each text and a newline, joined by "": the stubs know only arrays as arguments
    lines = pc.binary_join_element_wise(texts, "\n", "")  # type: ignore[call-overload]
    width = np.int64 if pa.types.is_large_string(lines.type) else np.int32
    offsets = np.frombuffer(lines.buffers()[1], width, len(lines) + 1,
                            lines.offset * np.dtype(width).itemsize)
    body = lines.buffers()[2][int(offsets[0]):int(offsets[-1])]
    schema = pa.schema([(a.name, ARROW_TYPES[a.type]) for a in attributes])
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    try:
        table = pa_json.read_json(io.BytesIO(body.to_pybytes()), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_rows != len(texts):
        return None
    return [table.column(a.name).combine_chunks() for a in attributes]


def _decoded(texts: list[Any], attributes: Sequence[Attribute]) -> list[pa.Array[Any]]:
    # One parse for the whole batch; a row is a JSON array (runtime) or object (to_json).
    decoded: list[Any] = json.loads("[" + ",".join(texts) + "]")
    rows = [list(v.values()) if isinstance(v, dict) else v for v in decoded]
    width = len(attributes)
    for row in rows:
        if len(row) != width:
            raise ValueError(f"an output has {len(row)} values where {width} are expected")
    columns = list(zip(*rows)) if rows else [() for _ in attributes]
    return [_column(list(values), a.type) for values, a in zip(columns, attributes, strict=True)]


def _column(values: list[Any], attr_type: AttrType) -> pa.Array[Any]:
    arrow = ARROW_TYPES[attr_type]
    if attr_type is AttrType.OBJECT:  # a string value too must become JSON text
        return pa.array([typed(v, attr_type) for v in values], arrow)
    try:  # refuses what needs converting: "NaN" for a double, a JSON object for text, …
        return pa.array(values, arrow)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([typed(v, attr_type) for v in values], arrow)


def typed(value: Any, attr_type: AttrType) -> Any:
    """A decoded JSON value as the attribute's Python type (non-finite doubles arrive as
    the strings ``NaN``/``Infinity``; an object becomes its JSON text)."""
    if value is None:
        return None
    if attr_type in (AttrType.INT, AttrType.LONG):
        return int(value)
    if attr_type in (AttrType.FLOAT, AttrType.DOUBLE):
        return float(value)
    if attr_type is AttrType.BOOL:
        return bool(value)
    if attr_type is AttrType.OBJECT:  # ``_data`` embeds the value; the bus keeps JSON text
        return json.dumps(value)
    return value if isinstance(value, str) else str(value)
