"""The Spark side of the counting operator: the rows it reads (a followed-by's:
:func:`~eddy.engine.operators.followed_by.spark.pattern_rows`, ``f`` and the conditions on
``e2`` alone evaluated in the JVM), its state keys and the ``applyInPandasWithState``
function around :func:`.matching.process`.

An unpartitioned pattern is one instance, so it keeps one state key; a partitioned one is
split into the planner's hash buckets of the partition key (a key's instance lives in one
bucket).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from eddy.engine.operators.columnar_operator import columnar_part, partition_key
from eddy.engine.operators.counting.matching import kernel
from eddy.engine.operators.counting.plan import CountingPlan
from eddy.engine.operators.followed_by.matching import PARTITION
from eddy.engine.operators.followed_by.spark import pattern_rows
from eddy.engine.operators.operator_part import KEY as OPERATOR_KEY
from eddy.engine.operators.operator_part import OperatorPart
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang.semantic import AnalyzedApp


def counting_part(analyzed: AnalyzedApp, plan: CountingPlan, source: DataFrame,
                  layout: InputLayout, *, buckets: int) -> OperatorPart:
    """The counting operator over ``source``, to run alone or fused; a partitioned
    pattern's state is keyed by ``buckets`` hash buckets of the partition value (the
    planner's choice, :mod:`eddy.plan.physical.rules.counting`)."""
    spec = plan.spec
    rows = pattern_rows(analyzed, plan, source, layout).withColumn(
        OPERATOR_KEY, partition_key(spec.partitioned, PARTITION, source, buckets))
    process, fresh = kernel(spec)
    return columnar_part(rows, process, spec, fresh, plan.info,
                         [(p.name, p.type) for p in spec.selected], spec.order_prefix)
