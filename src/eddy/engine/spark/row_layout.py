"""How a group's input and output rows are laid out as Spark columns.

A group reads all its input streams through one source (every extra read of a Python
source costs a full scan), so its rows have one wide schema: ``_seq`` (position in the
group's input order), ``_ts`` (event time, epoch ms), ``_stream`` (which stream), then one
typed column per attribute of every input stream (``s<i>_<j>``), null outside that stream.

Outputs of every query leave through one writer, so they share one schema: the cause
(``_seq``, ``_order``), the timestamp, the emitting query, the target stream, the expired
flag, and the attribute values. Operators that run in the JVM (Spark SQL, eddy's Java
operators) put the values in typed *value slots* (:func:`value_slots`: the k-th attribute of
a type in ``_v<type><k>``, shared by every query of the group, null where a query has no
such attribute); the Python operators, and every output with an ``object`` attribute, put
them as JSON text in ``_data``. Typed slots spare a JSON encoding in the JVM and a decoding
in the driver per output (a third of a micro-batch where every input event has an output).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from eddy.bus.arrow_codec import ARROW_TYPES
from eddy.lang.ast import Attribute, AttrType

if TYPE_CHECKING:
    from pyspark.sql import Row

    from eddy.lang.semantic import AnalyzedApp

SEQ, TS, STREAM = "_seq", "_ts", "_stream"
STORE_STREAM = "__store_query__"
"""Pseudo-stream carrying on-demand queries, so they run at their place in the input."""
TICK_STREAM = "__tick__"
"""Pseudo-stream of live mode's wall-clock heartbeat: a row with the time and no attributes
(every attribute column null), appended to the input while it is idle, so that timers (time
windows, ``output every <time>``, ``not … for``, ``within``) fire without new events. It is
input like any other, so a batch replayed from a checkpoint fires the same timers again."""
CLOCK = "_clock"
"""Optional input column: the largest ``_ts`` of the rows of the same stream up to this one
(in ``_seq`` order). A source that knows the whole order (the spool) supplies it, so an
operator keyed by hash buckets still sees the clock of the stream, not of its bucket."""

_SPARK_TYPES: dict[AttrType, DataType] = {
    AttrType.INT: IntegerType(), AttrType.LONG: LongType(), AttrType.FLOAT: FloatType(),
    AttrType.DOUBLE: DoubleType(), AttrType.STRING: StringType(), AttrType.BOOL: BooleanType(),
    AttrType.OBJECT: StringType(),
}

ORDER, QUERY, TARGET = "_order", "_query", "_target"
"""Output columns: an output's place among those of its input row (a path: chains nest), the
query that emitted it, and the stream it goes to (or how an on-demand answer ends)."""

OUTPUT_SCHEMA = StructType([
    StructField(SEQ, LongType()), StructField(ORDER, ArrayType(IntegerType())),
    StructField(TS, LongType()), StructField(QUERY, StringType()),
    StructField(TARGET, StringType()), StructField("_expired", BooleanType()),
    StructField("_data", StringType()),
])


DATA = "_data"
"""The output column holding values as JSON text (None where they are in value slots)."""
OUTPUT_HEAD = StructType(OUTPUT_SCHEMA.fields[:-1])
"""The output columns before the values: ``_seq``, ``_order``, ``_ts``, ``_query``,
``_target``, ``_expired``."""
_SLOT_PREFIX = "_v"


def value_slots(attributes: Sequence[Attribute]) -> list[str] | None:
    """The typed output columns holding an output's values, one per attribute (the k-th
    attribute of a type in ``_v<type><k>``, so queries of a group share them), or None when
    an attribute is an ``object``: its values travel as JSON in :data:`DATA`."""
    seen: Counter[AttrType] = Counter()
    slots: list[str] = []
    for attribute in attributes:
        if attribute.type is AttrType.OBJECT:
            return None
        slots.append(f"{_SLOT_PREFIX}{attribute.type.value.lower()}{seen[attribute.type]}")
        seen[attribute.type] += 1
    return slots


def slot_type(slot: str) -> DataType:
    """The Spark type of a value slot (:func:`value_slots`)."""
    return _SPARK_TYPES[AttrType(slot[len(_SLOT_PREFIX):].rstrip("0123456789").upper())]


def output_field(name: str) -> StructField:
    """The output column ``name``: one of :data:`OUTPUT_SCHEMA`'s or a value slot."""
    if name in OUTPUT_SCHEMA.fieldNames():
        return OUTPUT_SCHEMA[name]
    return StructField(name, slot_type(name))


def row_values(row: Mapping[str, Any] | Row, attributes: Sequence[Attribute]) -> list[Any]:
    """An output row's values (a row of the writer's frame, as a mapping), from
    :data:`DATA` or from its value slots, as the attributes' Python types."""
    text = row[DATA]
    if text is not None:  # non-finite floats arrive as text (encode_data)
        values = decode_data(text)
        return [float(v) if isinstance(v, str) and i < len(attributes)
                and attributes[i].type in (AttrType.FLOAT, AttrType.DOUBLE) else v
                for i, v in enumerate(values)]
    slots = value_slots(attributes)
    if slots is None:
        raise ValueError("an output with an object attribute has no _data")
    return [row[slot] for slot in slots]


def spark_type(attr_type: AttrType) -> DataType:
    """The Spark type holding a Siddhi type (OBJECT travels as JSON text; expressions read
    it as a variant, :func:`eddy.engine.compile.scalar_functions.object_from_json`)."""
    return _SPARK_TYPES[attr_type]


@dataclass(frozen=True)
class InputLayout:
    """The wide input schema of one group: which column holds which stream's attribute."""

    streams: tuple[tuple[str, tuple[Attribute, ...]], ...]

    @classmethod
    def of(cls, schemas: Mapping[str, Sequence[Attribute]]) -> InputLayout:
        return cls(tuple((name, tuple(attrs)) for name, attrs in schemas.items()))

    def columns(self, stream: str) -> list[str]:
        """Column names of ``stream``'s attributes, in attribute order."""
        for i, (name, attrs) in enumerate(self.streams):
            if name == stream:
                return [f"s{i}_{j}" for j in range(len(attrs))]
        raise KeyError(stream)

    def attributes(self, stream: str) -> tuple[Attribute, ...]:
        return dict(self.streams)[stream]

    def spark_schema(self, *, clock: bool = False) -> StructType:
        """The input rows' schema; ``clock`` adds :data:`CLOCK` (for sources that supply it)."""
        fields = [StructField(SEQ, LongType(), False), StructField(TS, LongType(), False),
                  StructField(STREAM, StringType(), False)]
        for i, (_, attrs) in enumerate(self.streams):
            fields += [StructField(f"s{i}_{j}", spark_type(a.type)) for j, a in enumerate(attrs)]
        if clock:
            fields.append(StructField(CLOCK, LongType(), False))
        return StructType(fields)

    def arrow_schema(self) -> pa.Schema:
        fields: list[pa.Field[Any]] = [
            pa.field(SEQ, pa.int64(), False), pa.field(TS, pa.int64(), False),
            pa.field(STREAM, pa.string(), False)]
        for i, (_, attrs) in enumerate(self.streams):
            fields += [pa.field(f"s{i}_{j}", ARROW_TYPES[a.type]) for j, a in enumerate(attrs)]
        return pa.schema(fields)

    def to_arrow(self, events: Sequence[tuple[int, int, str, Sequence[Any]]]) -> pa.Table:
        """``(seq, ts, stream, data)`` events as an Arrow table of this layout."""
        columns: dict[str, list[Any]] = {f.name: [None] * len(events)
                                         for f in self.arrow_schema()}
        index = {name: i for i, (name, _) in enumerate(self.streams)}
        for row, (seq, ts, stream, data) in enumerate(events):
            columns[SEQ][row], columns[TS][row], columns[STREAM][row] = seq, ts, stream
            i = index[stream]
            attrs = self.streams[i][1]
            for j, value in enumerate(data):
                columns[f"s{i}_{j}"][row] = _coerce(value, attrs[j].type)
        return pa.table(columns, schema=self.arrow_schema())

    def tick_rows(self, ticks: Sequence[tuple[int, int]]) -> pa.Table:
        """``(seq, ts)`` heartbeats (:data:`TICK_STREAM`) as an Arrow table of this layout."""
        schema = self.arrow_schema()
        columns: dict[str, Any] = {f.name: pa.nulls(len(ticks), f.type) for f in schema}
        columns[SEQ] = pa.array([seq for seq, _ in ticks], pa.int64())
        columns[TS] = pa.array([ts for _, ts in ticks], pa.int64())
        columns[STREAM] = pa.array([TICK_STREAM] * len(ticks), pa.string())
        return pa.table(columns, schema=schema)


def _coerce(value: Any, attr_type: AttrType) -> Any:
    """A JSON input value as the attribute's Python type (a JSON int for a double, …)."""
    if value is None:
        return None
    if attr_type in (AttrType.FLOAT, AttrType.DOUBLE):
        return float(value)
    if attr_type is AttrType.OBJECT:
        return object_json(value)
    return value


def object_json(value: Any) -> str:
    """An input value of an ``object`` attribute as the JSON text Spark columns and the bus
    carry. A JSON number is a ``java.lang.Double`` in the reference (the conformance cases'
    input rule), so it is written as a float: ``7`` becomes ``7.0``, which reads back as a
    Double (``instanceOfDouble``), not as an Integer."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return json.dumps(value)


def encode_data(values: Sequence[Any]) -> str:
    """Output values as the JSON text of ``_data``; non-finite doubles as strings."""
    return json.dumps([_json_safe(v) for v in values])


def encode_rows(rows: Sequence[Sequence[Any]]) -> list[str]:
    """:func:`encode_data` of every row, the same text, a column at a time.

    A per-row ``json.dumps`` costs microseconds of encoder setup; when the rows have one
    width, each column is encoded with the one conversion its values need (ints and finite
    floats by ``repr``, as ``json`` does) and the rows are joined from the pieces.
    """
    if not rows:
        return []
    width = len(rows[0])
    if width == 0 or any(len(row) != width for row in rows):
        return [encode_data(row) for row in rows]
    columns = [_encode_column(column) for column in zip(*rows)]
    if width == 1:
        return [f"[{piece}]" for piece in columns[0]]
    return ["[" + ", ".join(pieces) + "]" for pieces in zip(*columns)]


_INT, _FLOAT, _STR, _BOOL, _NONE = int, float, str, bool, type(None)
_encode_str = json.encoder.encode_basestring_ascii  # what json.dumps uses for str


def _encode_column(values: Sequence[Any]) -> list[str]:
    kinds = set(map(type, values))
    if kinds <= {_INT, _NONE}:
        return ["null" if v is None else int.__repr__(v) for v in values] \
            if _NONE in kinds else list(map(int.__repr__, values))
    if kinds <= {_FLOAT, _NONE}:
        return ["null" if v is None else _encode_float(v) for v in values]
    if kinds <= {_STR, _NONE}:
        return ["null" if v is None else _encode_str(v) for v in values]
    if kinds <= {_BOOL, _NONE}:
        return ["null" if v is None else ("true" if v else "false") for v in values]
    return [json.dumps(_json_safe(v)) for v in values]


def _encode_float(value: float) -> str:
    if math.isfinite(value):
        return float.__repr__(value)
    return json.dumps(_json_safe(value))


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return value


def decode_data(text: str) -> list[Any]:
    """Values from ``_data``: a JSON array, or an object (Spark's to_json of a struct)."""
    value = json.loads(text)
    return list(value.values()) if isinstance(value, dict) else list(value)


def input_layout(analyzed: AnalyzedApp) -> InputLayout:
    """Every defined stream an input may name, plus the on-demand query and heartbeat
    pseudo-streams (the heartbeat has no attributes, so it adds no column)."""
    schemas: dict[str, tuple[Attribute, ...]] = {
        name: info.attributes for name, info in analyzed.streams.items()
        if info.kind == "stream" and not info.implicit}
    schemas[STORE_STREAM] = (Attribute("query", AttrType.STRING),)
    schemas[TICK_STREAM] = ()
    return InputLayout.of(schemas)
