"""One Python operator of a group, before Spark runs it: its input rows and state key, the
``applyInPandasWithState`` function, the columns of its outputs, and how those become the
writer's rows (:data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`).

A part runs alone (:func:`run_alone`: its own stateful operator, the plan a group with one
Python operator always had) or with the group's other parts in one fused operator
(:mod:`eddy.engine.operators.fused_operator`): Spark runs at most one ``applyInPandasWithState``
per streaming query, so several stateful queries of a group share one, each keeping its own
state keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.compile.scalar_functions import object_from_json
from eddy.engine.spark.row_layout import DATA, OUTPUT_HEAD, OUTPUT_SCHEMA, output_field, value_slots
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.semantic import QueryInfo

KEY = "_key"
"""The column of a part's input rows that holds its state key."""
STATE_SCHEMA = "state binary"

StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]
WriterColumns = Mapping[str, Column]
"""One output's columns in the writer's frame, by name: :data:`OUTPUT_HEAD`'s and its values'
(:func:`value_columns`)."""
Writer = Callable[[Callable[[str], Column]], WriterColumns]
"""The writer's columns of one output, given how to read the output's columns by name."""


@dataclass(frozen=True)
class OperatorPart:
    """A Python operator of a group. ``schema``: the ``(name, Spark SQL type)`` of each
    column of an output; with ``arrays`` the step yields rows of arrays of them
    (:func:`eddy.engine.operators.columnar_operator.array_rows`), else one row per output."""

    rows: DataFrame
    step: StepFunction
    schema: tuple[tuple[str, str], ...]
    arrays: bool
    writer: Writer

    @property
    def inputs(self) -> list[str]:
        """The input columns the step reads (all but the state key)."""
        return [c for c in self.rows.columns if c != KEY]


def run_alone(part: OperatorPart) -> DataFrame:
    """The part's outputs in the writer's schema, from a stateful operator of its own."""
    types = [f"array<{t}>" if part.arrays else t for _, t in part.schema]
    computed = part.rows.groupBy(KEY).applyInPandasWithState(
        part.step, ", ".join(f"{n} {t}" for (n, _), t in zip(part.schema, types)),
        STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)
    if part.arrays:
        computed = explode(computed, [F.col(n) for n, _ in part.schema])
    return writer_frame(computed, part.writer(F.col))


def explode(frame: DataFrame, arrays: Sequence[Column], *keep: str) -> DataFrame:
    """One row per element of the (named) ``arrays``, zipped; ``keep`` columns copied."""
    return frame.select(*keep, F.explode(F.arrays_zip(*arrays)).alias("_out")) \
        .select(*keep, "_out.*")


def order_prefix(info: QueryInfo, place: int, entry: Sequence[int] = (1,)) -> tuple[int, ...]:
    """The ``_order`` the runtime gives ``info``'s outputs, up to the position in their
    emission: the path at which an input's event reaches the query (``entry``: ``(1,)``
    from the group's input, longer through a head: :mod:`eddy.plan.physical.heads`), its
    place on that stream's junction (its index in the app; inside a partition the
    partition's, then the event's one key ``0`` and the query's ``place`` in the partition,
    or that place alone on an inner stream's junction, which is the partition's own), and
    ``(emission 0, 0)``."""
    if any(name.startswith("#") for name in info.inputs):
        return (*entry, place, 0, 0)
    if info.partition is None:
        return (*entry, info.index, 0, 0)
    return (*entry, info.index, 0, place, 0, 0)


def head_columns(seq: Column, order: Column, ts: Column, query: str, target: str | None,
                 expired: Column) -> dict[str, Column]:
    """An output's :data:`OUTPUT_HEAD` columns: its cause, time, query, target, expired flag."""
    return dict(zip(OUTPUT_HEAD.fieldNames(),
                    (seq, order, ts, F.lit(query), F.lit(target), expired), strict=True))


def value_columns(values: Sequence[tuple[Column, Attribute]], *,
                  typed: bool = True) -> dict[str, Column]:
    """An output's values as the writer's columns: in their value slots
    (:func:`~eddy.engine.spark.row_layout.value_slots`), or as JSON text in ``_data`` when
    one is an ``object`` (JSON text in the operator's columns, embedded as JSON) or
    ``typed`` is False."""
    slots = value_slots([a for _, a in values]) if typed else None
    if slots is not None:
        return dict(zip(slots, (column for column, _ in values), strict=True))
    embedded = [(object_from_json(column) if a.type is AttrType.OBJECT else column).alias(a.name)
                for column, a in values]
    return {DATA: F.to_json(F.struct(*embedded), {"ignoreNullFields": "false"})}


CARRY = "_carry"
"""The last column of a chained Java operator's rows and outputs: a writer's row of the
operators before it in the chain, handed on (``Carrying.java``,
:mod:`eddy.engine.operators.chain`)."""


def writer_frame(frame: DataFrame, columns: WriterColumns) -> DataFrame:
    """``columns`` as the writer's rows, each cast to its output type; when ``frame`` is a
    chained operator's (it has :data:`CARRY`), a row that carries an earlier operator's
    output is that output instead."""
    if CARRY not in frame.columns:
        return frame.select(*(column.cast(output_field(name).dataType).alias(name)
                              for name, column in columns.items()))
    carry = F.col(CARRY)
    carried = frame.schema[CARRY].dataType.fieldNames()  # type: ignore[attr-defined]
    return frame.select(*(
        F.when(carry.isNotNull(), carry.getField(name) if name in carried else F.lit(None))
        .otherwise(columns.get(name, F.lit(None))).cast(output_field(name).dataType).alias(name)
        for name in dict.fromkeys([*carried, *columns])))


def output_columns(col: Callable[[str], Column]) -> dict[str, Column]:
    """The writer of a part whose outputs are the writer's rows already (the runtime)."""
    return {field.name: col(field.name) for field in OUTPUT_SCHEMA.fields}


OUTPUT_COLUMNS = tuple((field.name, field.dataType.simpleString())
                       for field in OUTPUT_SCHEMA.fields)
"""The schema of a part whose outputs are the writer's rows already."""
