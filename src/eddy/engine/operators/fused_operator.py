"""Several Python operators of one group in one ``applyInPandasWithState`` (Spark runs at
most one per streaming query).

Each part's input rows are tagged with the part's number (``_op``) and keep their own
column names behind a ``p<k>_`` prefix; the operator is grouped by ``(_op, state key)``, so
each query keeps its own state, per bucket, and a micro-batch writes the state of the keys
that received rows only. The fused function hands a key's rows to its part's function
unchanged and turns that part's outputs into rows of arrays of its own ``p<k>_`` columns;
the JVM explodes them and builds each part's writer rows by ``_op``. The outputs keep the
``_seq`` and ``_order`` each part gives them, so the writer merges them in the reference
order exactly as when each part ran alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.operators.columnar_operator import array_rows
from eddy.engine.operators.operator_part import (
    KEY,
    STATE_SCHEMA,
    OperatorPart,
    StepFunction,
    explode,
    writer_frame,
)
from eddy.engine.spark.row_layout import output_field

OP = "_op"


def _prefix(k: int) -> str:
    return f"p{k}_"


def run_fused(parts: Sequence[OperatorPart]) -> DataFrame:
    """The parts' outputs in the writer's schema, from one stateful operator."""
    tagged = [part.rows.select(F.lit(k).alias(OP), F.col(KEY).cast("long").alias(KEY),
                               *(F.col(c).alias(_prefix(k) + c) for c in part.inputs))
              for k, part in enumerate(parts)]
    rows = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), tagged)
    outputs = [(_prefix(k) + name, kind) for k, part in enumerate(parts)
               for name, kind in part.schema]
    schema = ", ".join([f"{OP} int"] + [f"{name} array<{kind}>" for name, kind in outputs])
    step = fused_step([(p.step, p.inputs, [n for n, _ in p.schema], p.arrays) for p in parts],
                      [name for name, _ in outputs])
    computed = rows.groupBy(OP, KEY).applyInPandasWithState(
        step, schema, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout)
    arrays = [F.coalesce(F.col(name), F.array().cast(f"array<{kind}>")).alias(name)
              for name, kind in outputs]
    exploded = explode(computed, arrays, OP)
    writers = [part.writer(_reader(_prefix(k))) for k, part in enumerate(parts)]
    columns: dict[str, Column] = {}
    for name in dict.fromkeys(n for writer in writers for n in writer):
        kind = output_field(name).dataType
        choices = [(k, writer[name]) for k, writer in enumerate(writers) if name in writer]
        choice = F.when(F.col(OP) == choices[0][0], choices[0][1].cast(kind))
        for k, column in choices[1:]:
            choice = choice.when(F.col(OP) == k, column.cast(kind))
        columns[name] = choice
    return writer_frame(exploded, columns)


def _reader(prefix: str) -> Callable[[str], Column]:
    """Reads a part's output column by its own name."""
    return lambda name: F.col(prefix + name)


Part = tuple[StepFunction, list[str], list[str], bool]


def fused_step(parts: Sequence[Part], outputs: Sequence[str]) -> StepFunction:
    """The fused ``applyInPandasWithState`` function: a key ``(k, key)`` is part ``k``'s."""

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        op = int(key[0])
        inner, inputs, names, arrays = parts[op]
        prefix = _prefix(op)
        columns = [prefix + c for c in inputs]
        own = (pdf[columns].set_axis(inputs, axis=1) for pdf in frames)
        for out in inner(tuple(key[1:]), own, state):
            if out.empty:
                continue
            if not arrays:
                out = array_rows(out)
            frame = pd.DataFrame({OP: np.full(len(out), op, np.int32)})
            for name in outputs:
                frame[name] = None
            for name in names:
                frame[prefix + name] = out[name].to_numpy()
            yield frame

    return step


__all__ = ["OP", "fused_step", "run_fused"]
