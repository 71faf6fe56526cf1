"""The Spark side of the followed-by operator: the rows it reads, its state keys and the
``applyInPandasWithState`` function around :func:`.matching.process`.

The operator reads only the pattern's streams, narrowed to the columns it uses, with
``e1``'s filter and the conditions on ``e2`` alone already evaluated in the JVM. An
unpartitioned pattern is one instance — its expiry order couples every key — so it keeps
one state key, as the reference keeps one thread; a partitioned one is split into
:data:`BUCKETS` hash buckets of the partition key (a key's instance lives in one bucket),
so both cores work (:mod:`eddy.engine.state_keys` spreads them evenly).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.columnar_operator import (
    attribute_column,
    filter_condition,
    filters_compile,
    make_step,
    output_schema,
    writer_rows,
)
from eddy.engine.followed_by.matching import (
    FIRST_EVENT,
    KEY,
    PARTITION,
    SECOND_EVENT,
    SECOND_PASSES,
    Pending,
    process,
)
from eddy.engine.followed_by.plan import FollowedByPlan
from eddy.engine.layout import SEQ, STREAM, TS, InputLayout
from eddy.engine.state_keys import hash_bucket
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp

BUCKETS = 4
"""State keys of a partitioned pattern: a couple per core (fewer keys, less per-key work per
micro-batch: 4 measured ~10 % faster than 16); fixed, since a checkpoint's state is keyed
by them."""

def compile_followed_by(analyzed: AnalyzedApp, plan: FollowedByPlan, source: DataFrame,
                        layout: InputLayout) -> DataFrame:
    """The query's outputs in the writer's schema (:data:`~eddy.engine.layout.OUTPUT_SCHEMA`)."""
    spec, info = plan.spec, plan.info
    first = filter_condition(analyzed, info, 0, plan.first, plan.first_filters, layout)
    second = filter_condition(analyzed, info, 1, plan.second, plan.second_filters, layout)
    is_first = F.col(STREAM) == plan.first
    is_second = F.col(STREAM) == plan.second
    columns = [attribute_column(layout, stream, name).alias(column)
               for column, (stream, name) in plan.attributes.items()]
    rows = source.where(F.col(STREAM).isin(plan.first, plan.second))
    if spec.partitioned:
        # Siddhi's key is the value's toString: for integral values, the number says the same
        kinds = {a.type for stream, name in plan.partition_attributes.items()
                 for a in layout.attributes(stream) if a.name == name}
        cast = "long" if kinds <= {AttrType.INT, AttrType.LONG} else "string"
        key = F.coalesce(*(F.when(F.col(STREAM) == stream,
                                  attribute_column(layout, stream, name).cast(cast))
                           for stream, name in plan.partition_attributes.items()))
        rows = rows.withColumn(PARTITION, key).where(F.col(PARTITION).isNotNull())
        columns.append(F.col(PARTITION))
    rows = rows.select(SEQ, TS, (is_first & first).alias(FIRST_EVENT),
                       is_second.alias(SECOND_EVENT), (is_second & second).alias(SECOND_PASSES),
                       *columns)
    state_key = hash_bucket([F.col(PARTITION)], BUCKETS, source.sparkSession) \
        if spec.partitioned else F.lit(0)
    computed = (rows.withColumn(KEY, state_key).groupBy(KEY)
                .applyInPandasWithState(make_step(process, spec, Pending),
                                        output_schema([o.type for o in spec.selected]),
                                        "state binary", "append", GroupStateTimeout.NoTimeout))
    return writer_rows(computed, info, [o.name for o in spec.selected], spec.order_prefix)


def compiles_in_spark(analyzed: AnalyzedApp, plan: FollowedByPlan) -> bool:
    """Whether the filters that run in the JVM compile there (else the runtime runs it)."""
    return filters_compile(analyzed, (*plan.first_filters, *plan.second_filters))
