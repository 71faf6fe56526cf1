"""The Spark side of the followed-by operator: the rows it reads, its state keys and the
``applyInPandasWithState`` function around :func:`.matching.process`.

The operator reads only the pattern's streams, narrowed to the columns it uses, with
``e1``'s filter and the conditions on ``e2`` alone already evaluated in the JVM. An
unpartitioned pattern is one instance — its expiry order couples every key — so it keeps
one state key, as the reference keeps one thread; a partitioned one is split into
the planner's hash buckets of the partition key (a key's instance lives in one bucket),
so both cores work (:mod:`eddy.engine.operators.state_keys` spreads them evenly).
"""

from __future__ import annotations

from typing import Protocol

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eddy.engine.operators.chain import carried, or_carried
from eddy.engine.operators.columnar_operator import (
    attribute_column,
    columnar_part,
    filter_condition,
    filters_compile,
    partition_key,
    partition_value,
)
from eddy.engine.operators.followed_by.matching import (
    FIRST_EVENT,
    PARTITION,
    SIDE_FLAGS,
    Pending,
    process,
)
from eddy.engine.operators.followed_by.plan import FollowedByPlan
from eddy.engine.operators.operator_part import KEY as OPERATOR_KEY
from eddy.engine.operators.operator_part import OperatorPart, run_alone
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo


def compile_followed_by(analyzed: AnalyzedApp, plan: FollowedByPlan, source: DataFrame,
                        layout: InputLayout, *, buckets: int) -> DataFrame:
    """The query's outputs in the writer's schema
    (:data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`); a partitioned pattern's state is keyed
    by ``buckets`` hash buckets of the partition value (the planner's choice,
    :mod:`eddy.plan.physical.rules.followed_by`)."""
    return run_alone(followed_by_part(analyzed, plan, source, layout, buckets=buckets))


def followed_by_part(analyzed: AnalyzedApp, plan: FollowedByPlan, source: DataFrame,
                     layout: InputLayout, *, buckets: int) -> OperatorPart:
    """The operator of :func:`compile_followed_by`, to run alone or fused."""
    spec, info = plan.spec, plan.info
    rows = pattern_rows(analyzed, plan, source, layout)
    return columnar_part(rows.withColumn(OPERATOR_KEY, partition_key(
        plan.spec.partitioned, PARTITION, source, buckets)),
                         process, spec, Pending, info,
                         [(o.name, o.type) for o in spec.selected], spec.order_prefix)


class PatternStates(Protocol):
    """What :func:`pattern_rows` reads of a pattern operator's plan (a followed-by's, a
    counting pattern's)."""

    @property
    def info(self) -> QueryInfo: ...
    @property
    def first(self) -> str: ...
    @property
    def second(self) -> str: ...
    @property
    def right(self) -> str | None: ...
    @property
    def first_filters(self) -> tuple[ast.Expression, ...]: ...
    @property
    def second_filters(self) -> tuple[ast.Expression, ...]: ...
    @property
    def right_filters(self) -> tuple[ast.Expression, ...]: ...
    @property
    def attributes(self) -> dict[str, tuple[str, str]]: ...
    @property
    def partition_attributes(self) -> dict[str, str]: ...


def pattern_rows(analyzed: AnalyzedApp, plan: PatternStates, source: DataFrame,
                 layout: InputLayout) -> DataFrame:
    """The rows a followed-by operator reads: the pattern's streams, with ``e1``'s filter
    and the conditions on ``e2`` (and ``e3`` of ``(e2 or e3)``) alone evaluated here in the
    JVM, the attribute columns and, partitioned, the partition value (rows without one go
    nowhere); a link of a chain's carried rows last (:mod:`eddy.engine.operators.chain`)."""
    first = filter_condition(analyzed, plan.info, 0, plan.first, plan.first_filters, layout)
    flags = [(F.col(STREAM) == plan.first) & first]
    completing = [(plan.second, plan.second_filters)]
    if plan.right is not None:
        completing.append((plan.right, plan.right_filters))
    for side, (stream, filters) in enumerate(completing):
        of_stream = F.col(STREAM) == stream
        flags += [of_stream, of_stream & filter_condition(analyzed, plan.info, 1 + side,
                                                          stream, filters, layout)]
    columns = [attribute_column(layout, stream, name).alias(column)
               for column, (stream, name) in plan.attributes.items()]
    rows = source.where(F.col(STREAM).isin(plan.first, *(s for s, _ in completing)))
    if plan.partition_attributes:
        rows = rows.withColumn(PARTITION, partition_value(layout, plan.partition_attributes)) \
            .where(or_carried(F.col(PARTITION).isNotNull(), source))
        columns.append(F.col(PARTITION))
    names = [FIRST_EVENT, *(c for side in SIDE_FLAGS[:len(completing)] for c in side)]
    return rows.select(SEQ, TS, *(flag.alias(name) for flag, name in zip(flags, names)),
                       *columns, *carried(source))


def compiles_in_spark(analyzed: AnalyzedApp, plan: FollowedByPlan) -> bool:
    """Whether the filters that run in the JVM compile there (else the runtime runs it)."""
    return filters_compile(analyzed, plan.spark_filters())
