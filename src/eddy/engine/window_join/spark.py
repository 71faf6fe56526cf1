"""The Spark side of the length-window join: its rows and the ``applyInPandasWithState``
function around :func:`.matching.process`.

The windows are global (as in the reference), so the operator keeps one state key; the
rows it reads are narrowed to the two streams, the columns it uses and the events that pass
the filters before each window (evaluated in the JVM).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.columnar_operator import (
    attribute_column,
    batch_frame,
    filter_condition,
    filters_compile,
    output_schema,
    writer_rows,
)
from eddy.engine.layout import SEQ, STREAM, TS, InputLayout
from eddy.engine.window_join.matching import SIDE, Windows, process
from eddy.engine.window_join.plan import WindowJoinPlan, WindowJoinSpec
from eddy.gcpause import gc_paused
from eddy.lang.semantic import AnalyzedApp

StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]


def compile_window_join(analyzed: AnalyzedApp, plan: WindowJoinPlan, source: DataFrame,
                        layout: InputLayout) -> DataFrame:
    """The join's outputs in the writer's schema."""
    spec = plan.spec
    left, right = plan.streams
    passes = [filter_condition(analyzed, plan.info, side, stream, plan.filters[side], layout)
              for side, stream in enumerate(plan.streams)]
    columns = [attribute_column(layout, stream, name).alias(column)
               for column, (stream, name) in plan.attributes.items()]
    rows = (source.where(((F.col(STREAM) == left) & passes[0])
                         | ((F.col(STREAM) == right) & passes[1]))
            .select(SEQ, TS, (F.col(STREAM) == right).cast("int").alias(SIDE), *columns))
    computed = (rows.withColumn("_key", F.lit(0)).groupBy("_key")
                .applyInPandasWithState(make_step(spec),
                                        output_schema([o.type for o in spec.selected]),
                                        "state binary", "append", GroupStateTimeout.NoTimeout))
    return writer_rows(computed, plan.info, [o.name for o in spec.selected], spec.order_prefix)


def join_compiles_in_spark(analyzed: AnalyzedApp, plan: WindowJoinPlan) -> bool:
    """Whether the filters before the windows compile to Spark SQL."""
    return filters_compile(analyzed, (*plan.filters[0], *plan.filters[1]))


def make_step(spec: WindowJoinSpec) -> StepFunction:
    """The ``applyInPandasWithState`` function: one call per micro-batch."""

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        windows = pickle.loads(state.get[0]) if state.exists else Windows()
        frame = batch_frame(frames)
        if frame is None:
            return
        with gc_paused():
            outputs, windows = process(spec, windows, frame)
            state.update((pickle.dumps(windows, protocol=pickle.HIGHEST_PROTOCOL),))
        yield outputs

    return step
