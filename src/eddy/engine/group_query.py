"""Compiling one execution group to one Spark streaming DataFrame.

The group's wide input rows (:mod:`eddy.engine.layout`) go through the stateful operator
that hosts the runtime (:mod:`eddy.engine.operator`), keyed by one state key for now: an
unpartitioned Siddhi query is one sequential thread in the reference too. The result is
the group's tagged output rows, ready for one writer that routes them by target.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eddy.engine.layout import OUTPUT_SCHEMA, InputLayout
from eddy.engine.operator import make_step

STATE_SCHEMA = "state binary"


def compile_group(app_text: str, source: DataFrame, layout: InputLayout,
                  query_ids: Sequence[str] | None = None) -> DataFrame:
    """The streaming DataFrame of a group's outputs (schema :data:`OUTPUT_SCHEMA`)."""
    step = make_step(app_text, query_ids, layout)
    keyed = source.withColumn("_key", F.lit(0))
    return keyed.groupBy("_key").applyInPandasWithState(
        step, outputStructType=OUTPUT_SCHEMA, stateStructType=STATE_SCHEMA,
        outputMode="append", timeoutConf="NoTimeout")
