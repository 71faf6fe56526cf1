"""What the columnar operators (:mod:`eddy.engine.operators.followed_by`,
:mod:`eddy.engine.operators.window_join`) share on the Spark side: reading an attribute's column,
filters on one event compiled to Spark SQL, the batch handed to the operator in ``_seq``
order, and the operator's typed outputs turned into the writer's rows.

An operator call returns its outputs as a few *rows of arrays* (:data:`ARRAY_ROWS` outputs
per row, an array per column), which the JVM explodes. ``applyInPandasWithState`` sends a
call's outputs and its state in one Arrow batch, padding the state columns with empty rows
up to the number of outputs; for a join or pattern that emits about one row per event, building and
converting that padding (a pandas frame of object NaNs, per output row) cost ~210 ms of
Python time per 140,000 outputs. A few rows of arrays per call pad next to nothing.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar


import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eddy.engine.compile.expressions import UnsupportedInSpark
from eddy.engine.compile.native_queries import spark_compiler
from eddy.engine.operators.columnar_expressions import EXPIRED, POSITION
from eddy.engine.operators.operator_part import (
    OperatorPart,
    StepFunction,
    Writer,
    WriterColumns,
    head_columns,
    value_columns,
)
from eddy.engine.operators.state_keys import hash_bucket
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout, spark_type
from eddy.gcpause import gc_paused
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import Scope
from eddy.lang.semantic import AnalyzedApp, QueryInfo

def attribute_column(layout: InputLayout, stream: str, name: str) -> Column:
    """The group row's column of ``stream``'s attribute ``name``."""
    names = [a.name for a in layout.attributes(stream)]
    return F.col(layout.columns(stream)[names.index(name)])


def filters_compile(analyzed: AnalyzedApp, filters: Sequence[ast.Expression]) -> bool:
    """Whether ``filters`` compile to Spark SQL (else the per-event runtime runs the query)."""
    compiler = spark_compiler(analyzed, lambda var: F.col(f"`{var.attribute}`"))
    try:
        for expr in filters:
            compiler.compile_condition(expr)
    except UnsupportedInSpark:
        return False
    return True


def filter_condition(analyzed: AnalyzedApp, info: QueryInfo, source: int, stream: str,
                     filters: Sequence[ast.Expression], layout: InputLayout) -> Column:
    """``filters`` on an event of input ``source`` of the query (a pattern state, a join
    side), as one never-null Spark condition."""
    return scoped_condition(analyzed, info.scope.with_current(info.scope.sources[source]),
                            stream, filters, layout)


def scoped_condition(analyzed: AnalyzedApp, current: Scope, stream: str,
                     filters: Sequence[ast.Expression], layout: InputLayout) -> Column:
    """``filters`` on an event of ``stream`` as ``current`` resolves their attributes (an
    absent state's, which is no source of its query), as one Spark condition."""
    def column(var: ast.Variable) -> Column:
        return attribute_column(layout, stream, current.resolve(var).attribute.name)

    compiler = spark_compiler(analyzed, column)
    condition: Column = F.lit(True)
    for expr in filters:
        condition = condition & compiler.compile_condition(expr)
    return condition


def partition_value(layout: InputLayout, attributes: Mapping[str, str]) -> Column:
    """A value partition's key of a row of any of ``attributes``' streams (stream →
    attribute): Siddhi's key is the value's ``toString``, which for integral values the
    number says as well."""
    kinds = {a.type for stream, name in attributes.items()
             for a in layout.attributes(stream) if a.name == name}
    cast = "long" if kinds <= {AttrType.INT, AttrType.LONG} else "string"
    return F.coalesce(*(F.when(F.col(STREAM) == stream,
                               attribute_column(layout, stream, name).cast(cast))
                        for stream, name in attributes.items()))


def partition_key(partitioned: bool, column: str, source: DataFrame, buckets: int) -> Column:
    """The state key of a columnar operator's rows: ``buckets`` hash buckets of the
    partition value in ``column`` (a key's instance lives in one bucket), or one key for an
    unpartitioned query."""
    if partitioned:
        return hash_bucket([F.col(column)], buckets, source.sparkSession)
    return F.lit(0)


def output_schema(types: Sequence[AttrType], *,
                  expired: bool = False) -> tuple[tuple[str, str], ...]:
    """The columns of an operator's output: ``_seq``, ``_ts``, ``_i``, (``_x``,) then
    ``o<i>`` per value (the step sends arrays of them, one element per output: see the
    module docstring)."""
    return ((SEQ, "bigint"), (TS, "bigint"), (POSITION, "int"),
            *([(EXPIRED, "boolean")] if expired else []),
            *((f"o{i}", spark_type(t).simpleString()) for i, t in enumerate(types)))


def writer(info: QueryInfo, outputs: Sequence[tuple[str, AttrType]],
           order_prefix: Sequence[int], *, expired: bool = False) -> Writer:
    """The writer's columns of one of the operator's outputs (``(name, type)`` each), with
    the ``_order`` the per-event runtime gives them."""

    def columns(col: Callable[[str], Column]) -> WriterColumns:
        order = F.array(*(F.lit(i) for i in order_prefix), col(POSITION))
        kind = col(EXPIRED) if expired else F.lit(False)
        return {**head_columns(col(SEQ), order, col(TS), info.id, info.target, kind),
                **value_columns([(col(f"o{i}"), ast.Attribute(name, kind))
                                for i, (name, kind) in enumerate(outputs)])}

    return columns


def columnar_part(rows: DataFrame, process: Callable[[Spec, State, pd.DataFrame],
                                                     tuple[pd.DataFrame, State]],
                  spec: Spec, fresh: Callable[[], State], info: QueryInfo,
                  selected: Sequence[tuple[str, AttrType]],
                  order_prefix: Sequence[int], *, expired: bool = False) -> OperatorPart:
    """A columnar operator over ``rows`` (with their state key), to run alone or fused;
    ``expired``: its outputs say in :data:`EXPIRED` whether they are expired events."""
    return OperatorPart(rows, make_step(process, spec, fresh),
                        output_schema([t for _, t in selected], expired=expired), True,
                        writer(info, selected, order_prefix, expired=expired))


ARRAY_ROWS = 8192
"""Outputs per array row: a few rows per call pad little, and no array has to hold a whole
batch's outputs (8,192, 32,768 and unbounded measured alike)."""

State = TypeVar("State")
Spec = TypeVar("Spec")


def make_step(process: Callable[[Spec, State, pd.DataFrame], tuple[pd.DataFrame, State]],
              spec: Spec, fresh: Callable[[], State]) -> StepFunction:
    """The ``applyInPandasWithState`` function of an operator: per state key and
    micro-batch, its state unpickled (``fresh()`` the first time), the batch run through
    ``process`` and the state pickled back."""

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        held = pickle.loads(state.get[0]) if state.exists else fresh()
        frame = batch_frame(frames)
        if frame is None:
            return
        with gc_paused():
            outputs, held = process(spec, held, frame)
            state.update((pickle.dumps(held, protocol=pickle.HIGHEST_PROTOCOL),))
        yield array_rows(outputs)

    return step


def _array(column: pd.Series) -> np.ndarray:
    """A column's values for an Arrow list: a nullable int or bool column with nulls as
    objects (its plain ``to_numpy`` is float64, inexact beyond 2**53)."""
    if isinstance(column.dtype, pd.api.extensions.ExtensionDtype) and column.hasnans:
        return np.asarray(column.to_numpy(dtype=object, na_value=None))
    return np.asarray(column.to_numpy())


def array_rows(outputs: pd.DataFrame) -> pd.DataFrame:
    """``outputs`` as rows of arrays of up to :data:`ARRAY_ROWS` outputs each.

    Each array is a Python list, not a numpy array: PySpark turns every array cell into a
    list (``list(cell)``) before Arrow converts it, and a numpy array's ``list()`` is a
    list of numpy scalars, which Arrow converts one by one; ``tolist()`` makes plain Python
    values in C, and Arrow's conversion of those is ~4x faster (per 200,000 doubles:
    ~19 ms against ~49 ms, six columns per output)."""
    columns = {name: _array(column) for name, column in outputs.items()}
    cuts = range(0, len(outputs), ARRAY_ROWS)
    return pd.DataFrame({name: [values[i:i + ARRAY_ROWS].tolist() for i in cuts]
                         for name, values in columns.items()})


def batch_frame(frames: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """A state key's rows of one micro-batch in ``_seq`` order (None: there are none)."""
    parts = [frame for frame in frames if not frame.empty]
    if not parts:
        return None
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    seq = frame[SEQ].to_numpy()
    if len(seq) > 1 and not (seq[1:] > seq[:-1]).all():
        frame = frame.iloc[np.argsort(seq, kind="stable")].reset_index(drop=True)
    return frame


__all__ = ["ARRAY_ROWS", "POSITION", "array_rows", "attribute_column", "batch_frame",
           "columnar_part", "filter_condition", "filters_compile", "make_step", "output_schema",
           "partition_key", "partition_value", "writer"]
