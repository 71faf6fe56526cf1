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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.spark.row_layout import OUTPUT_SCHEMA

KEY = "_key"
"""The column of a part's input rows that holds its state key."""
STATE_SCHEMA = "state binary"

StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]
Writer = Callable[[Callable[[str], Column]], Sequence[Column]]
"""The writer's columns (in :data:`OUTPUT_SCHEMA` order) of one output, given how to read
the output's columns by name."""


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


def writer_frame(frame: DataFrame, columns: Sequence[Column]) -> DataFrame:
    """``columns`` (in :data:`OUTPUT_SCHEMA` order) as the writer's rows."""
    return frame.select(*(column.cast(field.dataType).alias(field.name)
                          for column, field in zip(columns, OUTPUT_SCHEMA.fields)))


def output_columns(col: Callable[[str], Column]) -> list[Column]:
    """The writer of a part whose outputs are the writer's rows already (the runtime)."""
    return [col(field.name) for field in OUTPUT_SCHEMA.fields]


OUTPUT_COLUMNS = tuple((field.name, field.dataType.simpleString())
                       for field in OUTPUT_SCHEMA.fields)
"""The schema of a part whose outputs are the writer's rows already."""
