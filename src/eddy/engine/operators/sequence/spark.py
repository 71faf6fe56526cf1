"""The Spark side of the sequence operator: the rows it reads, its state keys and the
``applyInPandasWithState`` function around :func:`.matching.process`.

The operator reads only the sequence's streams, narrowed to the columns it uses, with each
state's conditions on its own event already evaluated in the JVM (one boolean column per
state). An unpartitioned sequence is one instance — every event resets every state — so it
keeps one state key, as the reference keeps one thread; a partitioned one is split into the
planner's hash buckets of the partition key (a key's instance lives in one bucket).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eddy.engine.operators.columnar_operator import (
    attribute_column,
    columnar_part,
    filter_condition,
    partition_key,
    partition_value,
)
from eddy.engine.operators.operator_part import KEY as OPERATOR_KEY
from eddy.engine.operators.operator_part import OperatorPart
from eddy.engine.operators.sequence.matching import PARTITION, Recent, process
from eddy.engine.operators.sequence.plan import SequencePlan, SequenceSpec, arrives, passes
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout
from eddy.lang.semantic import AnalyzedApp


def sequence_part(analyzed: AnalyzedApp, plan: SequencePlan, source: DataFrame,
                  layout: InputLayout, *, buckets: int) -> OperatorPart:
    """The sequence operator over ``source``, to run alone or fused; a partitioned
    sequence's state is keyed by ``buckets`` hash buckets of the partition value (the
    planner's choice, :mod:`eddy.plan.physical.rules.sequence`)."""
    return chain_part(analyzed, plan, source, layout, buckets=buckets, kernel=process)


Kernel = Callable[[SequenceSpec, Any, pd.DataFrame], tuple[pd.DataFrame, Any]]


def chain_part(analyzed: AnalyzedApp, plan: SequencePlan, source: DataFrame,
               layout: InputLayout, *, buckets: int, kernel: Kernel,
               fresh: Callable[[], Any] = Recent, arrivals: bool = False) -> OperatorPart:
    """An operator over a chain of plain states (the sequence's, the cycle's, the logical
    pattern's) running ``kernel`` from ``fresh`` state. Its rows: the chain's streams, each
    state's conditions on its own event evaluated here in the JVM (one
    :func:`~.plan.passes` column per state; ``arrivals``: and one :func:`~.plan.arrives`
    column saying the row is of its stream), the attribute columns and, partitioned, the
    partition value (rows without one go nowhere)."""
    spec, info = plan.spec, plan.info
    streams = sorted(set(plan.streams))
    flags = [((F.col(STREAM) == stream)
              & filter_condition(analyzed, info, k, stream, plan.filters[k], layout))
             .alias(passes(k)) for k, stream in enumerate(plan.streams)]
    if arrivals:
        flags += [(F.col(STREAM) == stream).alias(arrives(k))
                  for k, stream in enumerate(plan.streams)]
    columns = [attribute_column(layout, stream, name).alias(column)
               for column, (stream, name) in plan.attributes.items()]
    rows = source.where(F.col(STREAM).isin(*streams))
    if spec.partitioned:
        rows = rows.withColumn(PARTITION, partition_value(layout, plan.partition_attributes)) \
            .where(F.col(PARTITION).isNotNull())
        columns.append(F.col(PARTITION))
    rows = rows.select(SEQ, TS, *flags, *columns) \
        .withColumn(OPERATOR_KEY, partition_key(spec.partitioned, PARTITION, source, buckets))
    return columnar_part(rows, kernel, spec, fresh, info,
                         [(o.name, o.type) for o in spec.selected], spec.order_prefix)
