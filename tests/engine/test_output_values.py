"""How output values leave the group: typed value slots, JSON for the rest, and a stream
that receives both (the writer's frame, :mod:`eddy.engine.spark.row_layout`)."""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import SparkSession

from eddy.engine.compile.group_query import compile_group
from eddy.engine.spark.row_layout import DATA, TS, input_layout, row_values, value_slots
from eddy.lang import check
from eddy.lang.ast import Attribute, AttrType


def _attributes(*types: AttrType) -> list[Attribute]:
    return [Attribute(f"a{i}", t) for i, t in enumerate(types)]


def test_each_type_counts_its_own_slots() -> None:
    attributes = _attributes(AttrType.DOUBLE, AttrType.STRING, AttrType.DOUBLE, AttrType.INT,
                             AttrType.BOOL, AttrType.FLOAT, AttrType.LONG)
    assert value_slots(attributes) == ["_vdouble0", "_vstring0", "_vdouble1", "_vint0",
                                       "_vbool0", "_vfloat0", "_vlong0"]


def test_an_object_attribute_sends_the_whole_output_as_json() -> None:
    assert value_slots(_attributes(AttrType.INT, AttrType.OBJECT)) is None


def test_a_row_reads_its_slots_or_its_json_as_the_attributes_types() -> None:
    attributes = _attributes(AttrType.STRING, AttrType.DOUBLE)
    slotted: dict[str, Any] = {DATA: None, "_vstring0": "x", "_vdouble0": 1.5}
    assert row_values(slotted, attributes) == ["x", 1.5]
    written = row_values({DATA: '["y", "-Infinity"]'}, attributes)
    assert written[0] == "y" and written[1] == -math.inf
    assert row_values({DATA: '["NaN", "NaN"]'}, attributes)[0] == "NaN"  # a string stays


def test_the_plan_fills_slots_for_spark_sql_and_json_for_objects(spark: SparkSession) -> None:
    app = """
define stream S (k string, v double, o object);
@info(name='typed') from S[v > 0] select k, v * 2 as w insert into T;
@info(name='object') from S select k, o insert into U;
"""
    analyzed = check(app)
    layout = input_layout(analyzed)
    source = spark.createDataFrame(layout.to_arrow([(0, 10, "S", ["a", 2.0, {"n": 1}]),
                                                    (1, 20, "S", ["b", -1.0, "text"])])
                                   .to_pandas(), layout.spark_schema())
    outputs = {info.id: info.outputs for info in analyzed.queries}
    for typed in (True, False):
        frame = compile_group(app, source, layout, on_demand=False, typed=typed)
        assert any(c.startswith("_v") for c in frame.columns) == typed
        rows = sorted(frame.collect(), key=lambda r: (r["_seq"], r["_query"]))
        assert [(r["_seq"], r["_query"], r[TS], r[DATA] is None) for r in rows] == [
            (0, "object", 10, False), (0, "typed", 10, typed), (1, "object", 20, False)]
        assert [row_values(r.asDict(), outputs[r["_query"]]) for r in rows] == [
            ["a", {"n": 1}], ["a", 4.0], ["b", "text"]]
