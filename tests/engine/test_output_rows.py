"""The column-at-a-time decoding of output rows against the row-at-a-time definition: Python's
sort of ``(_seq, _order)`` and :func:`typed` applied to each decoded value."""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.engine.run.output_rows import decode_values, group_order, typed
from eddy.lang.ast import Attribute, AttrType

ATTRIBUTES = (Attribute("i", AttrType.INT), Attribute("l", AttrType.LONG),
              Attribute("f", AttrType.FLOAT), Attribute("d", AttrType.DOUBLE),
              Attribute("s", AttrType.STRING), Attribute("b", AttrType.BOOL),
              Attribute("o", AttrType.OBJECT))

_INT = st.integers(-2**31, 2**31 - 1)
_VALUES = {
    AttrType.INT: _INT | st.integers(-1000, 1000).map(float),
    AttrType.LONG: st.integers(-2**63, 2**63 - 1),
    AttrType.FLOAT: st.floats(-1e6, 1e6, width=32) | _INT,
    AttrType.DOUBLE: st.floats(allow_nan=False) | st.sampled_from(["NaN", "Infinity"]) | _INT,
    AttrType.STRING: st.text(max_size=5) | _INT,
    AttrType.BOOL: st.booleans(),
    AttrType.OBJECT: st.text(max_size=5) | st.dictionaries(st.text(max_size=2), _INT,
                                                            max_size=2),
}
_ROW = st.tuples(*(st.none() | _VALUES[a.type] for a in ATTRIBUTES))


def _text(row: tuple[Any, ...], as_object: bool) -> str:
    """A row as the runtime writes it (an array) or as Spark's to_json does (an object)."""
    if as_object:
        return json.dumps(dict(zip((a.name for a in ATTRIBUTES), row, strict=True)))
    return json.dumps(list(row))


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return (math.isnan(got) and math.isnan(want)) or got == want
    return bool(got == want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_ROW, st.booleans()), max_size=30))
def test_decoded_columns_hold_each_value_as_its_attribute_type(
        rows: list[tuple[tuple[Any, ...], bool]]) -> None:
    texts = pa.array([_text(row, as_object) for row, as_object in rows])
    columns = decode_values(texts, ATTRIBUTES)
    for j, attribute in enumerate(ATTRIBUTES):
        want = pa.array([typed(row[j], attribute.type) for row, _ in rows],
                        columns[j].type).to_pylist()
        got = columns[j].to_pylist()
        assert all(_same(g, w) for g, w in zip(got, want, strict=True)), attribute


def test_spark_objects_take_arrows_reader_and_keep_their_rows() -> None:
    """Objects with every value as Arrow takes it, in many rows: the reader's path. An
    ``object`` attribute's value is embedded as itself and comes out as its JSON text."""
    sent = [(k, 2**40 + k, 0.5, k / 4, f"r{k}", k % 2 == 0, {"k": k}) for k in range(5000)]
    texts = pa.chunked_array([pa.array([_text(r, True) for r in sent[:2500]]),
                              pa.array([_text(r, True) for r in sent[2500:]])])
    columns = decode_values(texts, ATTRIBUTES)
    want = [(*sent[k][:-1], json.dumps(sent[k][-1])) for k in (0, 4999)]
    assert [tuple(c[k].as_py() for c in columns) for k in (0, 4999)] == want
    assert [c.type for c in columns] == [pa.int32(), pa.int64(), pa.float32(), pa.float64(),
                                         pa.string(), pa.bool_(), pa.string()]


def test_a_row_of_the_wrong_width_is_an_error() -> None:
    with pytest.raises(ValueError, match="2 values where 7 are expected"):
        decode_values(pa.array(["[1, 2]"]), ATTRIBUTES)


_KEY = st.tuples(st.integers(0, 5), st.none() | st.lists(st.integers(-3, 3), max_size=4))


@settings(max_examples=300, deadline=None)
@given(st.lists(_KEY, max_size=40), st.lists(_KEY, max_size=3), st.integers(1, 3))
def test_group_order_is_pythons_sort_of_seq_then_order(
        keys: list[tuple[int, list[int] | None]], skipped: list[tuple[int, list[int] | None]],
        chunks: int) -> None:
    """Also when the rows are a slice of a larger table in several chunks, as they are
    when the sink takes a stream's rows out of a micro-batch's."""
    every = skipped + keys
    whole = pa.table({"_seq": pa.array([s for s, _ in every], pa.int64()),
                      "_order": pa.array([o for _, o in every], pa.list_(pa.int32()))})
    cut = len(every) // chunks
    pieces = [whole.slice(i * cut, cut if i < chunks - 1 else None) for i in range(chunks)]
    rows = pa.concat_tables(pieces).slice(len(skipped))
    want = sorted(range(len(keys)), key=lambda i: (keys[i][0], keys[i][1] or []))
    assert group_order(rows).tolist() == want
