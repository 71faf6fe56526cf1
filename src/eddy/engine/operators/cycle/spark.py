"""The Spark side of the cycle operator: the sequence operator's rows
(:func:`~eddy.engine.operators.sequence.spark.chain_rows`: each state's conditions evaluated
in the JVM, one key or hash buckets of the partition value) and the
``applyInPandasWithState`` function around :func:`.matching.process`."""

from __future__ import annotations

from pyspark.sql import DataFrame

from eddy.engine.operators.columnar_operator import columnar_part
from eddy.engine.operators.cycle.matching import process
from eddy.engine.operators.operator_part import OperatorPart
from eddy.engine.operators.sequence.matching import Recent
from eddy.engine.operators.sequence.plan import SequencePlan
from eddy.engine.operators.sequence.spark import chain_rows
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang.semantic import AnalyzedApp


def cycle_part(analyzed: AnalyzedApp, plan: SequencePlan, source: DataFrame,
               layout: InputLayout, *, buckets: int) -> OperatorPart:
    """The cycle operator over ``source``, to run alone or fused; a partitioned pattern's
    state is keyed by ``buckets`` hash buckets of the partition value (the planner's
    choice, :mod:`eddy.plan.physical.rules.cycle`)."""
    spec = plan.spec
    return columnar_part(chain_rows(analyzed, plan, source, layout, buckets=buckets),
                         process, spec, Recent, plan.info,
                         [(o.name, o.type) for o in spec.selected], spec.order_prefix)
