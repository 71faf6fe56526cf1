"""The Spark side of the logical operator: the sequence operator's rows and state key
(:func:`~eddy.engine.operators.sequence.spark.chain_part`, with each row's stream) around
:func:`.matching.process`."""

from __future__ import annotations

from pyspark.sql import DataFrame

from eddy.engine.operators.logical.matching import Waiting, process
from eddy.engine.operators.operator_part import OperatorPart
from eddy.engine.operators.sequence.plan import SequencePlan
from eddy.engine.operators.sequence.spark import chain_part
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang.semantic import AnalyzedApp


def logical_part(analyzed: AnalyzedApp, plan: SequencePlan, source: DataFrame,
                 layout: InputLayout, *, buckets: int) -> OperatorPart:
    """The logical operator over ``source``, to run alone or fused; a partitioned pattern's
    state is keyed by ``buckets`` hash buckets of the partition value (the planner's
    choice, :mod:`eddy.plan.physical.rules.logical`)."""
    return chain_part(analyzed, plan, source, layout, buckets=buckets, kernel=process,
                      fresh=Waiting, arrivals=True)
