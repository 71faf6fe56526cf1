"""Compiling one execution group to one Spark streaming DataFrame.

Stateless queries become Spark SQL over the group's input rows (:mod:`eddy.engine.native`);
the rest run in the per-event runtime hosted by a stateful operator
(:mod:`eddy.engine.operator`), keyed by one state key for now: an unpartitioned Siddhi
query is one sequential thread in the reference too. A group whose one stateful query is a
``#window.time``/``#window.timeBatch`` aggregation runs it vectorised instead
(:mod:`eddy.engine.window_aggregates`), with the same outputs, and so does one whose query
is an ``every e1 -> e2[c] within t`` pattern (:mod:`eddy.engine.followed_by`) or an inner
join of two length windows (:mod:`eddy.engine.window_join`). The result is the group's
tagged output rows, ready for one writer that routes them by target.

Why not one state key per hash bucket of the ``group by`` key (DESIGN.md §4)? A bucket only
sees its own rows, so its clock — the largest timestamp *it* saw — falls behind the group's
whenever timestamps go back, expiring a time window too late; a batch window's flush would
be attributed to the bucket's next event instead of the group's, and the position of a
group in a flushed batch (part of ``_order``) depends on the other buckets' groups. The
vectorised operator gets the throughput without giving up either; a ``#window.time``
aggregation with ``group by`` and no filter is even split into hash buckets when the source
brings each row's stream clock (:data:`~eddy.engine.layout.CLOCK`, from the spool), which
makes the bucket's clock the group's (:mod:`eddy.engine.window_aggregates.sliding_time`).

Live mode's heartbeat rows (:data:`~eddy.engine.layout.TICK_STREAM`) reach the runtime and
the batch-window operator, so timers fire on the wall clock without new events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eddy.engine.followed_by import compile_followed_by, compiles_in_spark, plan_followed_by
from eddy.engine.layout import OUTPUT_SCHEMA, SEQ, STORE_STREAM, STREAM, TICK_STREAM, TS, \
    InputLayout
from eddy.engine.native import compile_native, plan_native
from eddy.engine.operator import make_step
from eddy.engine.runtime.partition_buckets import BUCKETS, partition_attributes
from eddy.engine.runtime.table import build_tables
from eddy.engine.runtime.aggregation.batch_step import (
    aggregation_split,
    aggregations_only,
    make_aggregation_step,
)
from eddy.engine.state_keys import hash_bucket
from eddy.engine.window_aggregates import compile_window_aggregate, plan_window_aggregate
from eddy.engine.window_join import compile_window_join, join_compiles_in_spark, plan_window_join
from eddy.lang import check
from eddy.store.aggregation_settings import worker_environment

if TYPE_CHECKING:
    from eddy.lang.semantic import AnalyzedApp, QueryInfo

STATE_SCHEMA = "state binary"


def compile_group(app_text: str, source: DataFrame, layout: InputLayout,
                  *, on_demand: bool = True) -> DataFrame:
    """The streaming DataFrame of a group's outputs (schema :data:`OUTPUT_SCHEMA`).

    ``on_demand`` keeps the runtime in the plan to answer on-demand queries even when every
    streaming query runs natively; False also promises that no on-demand query comes, which
    lets an aggregation-only group run split by group (``aggregation_split``).
    """
    analyzed = check(app_text)
    build_tables(analyzed)  # a bad @store is an app error here, not in a Spark task
    # Shard id and datasources reach the Python workers that run aggregations (checked here,
    # in the driver, so a missing shardId fails the deployment, not a micro-batch).
    worker_environment(analyzed, source.sparkSession.sparkContext.environment)
    native = plan_native(analyzed, layout)
    rest = [q for q in analyzed.queries if q.id not in native.ids]
    outputs = compile_native(analyzed, native, source, layout)
    window = plan_window_aggregate(analyzed, rest, layout)
    pattern = plan_followed_by(analyzed, rest, layout)
    if pattern is not None and not compiles_in_spark(analyzed, pattern):
        pattern = None
    join = plan_window_join(analyzed, rest, layout)
    if join is not None and not join_compiles_in_spark(analyzed, join):
        join = None
    if window is not None:
        stateful = compile_window_aggregate(analyzed, window, source, layout)
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    elif pattern is not None:
        stateful = compile_followed_by(analyzed, pattern, source, layout)
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    elif join is not None:
        stateful = compile_window_join(analyzed, join, source, layout)
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    elif rest or _aggregation_inputs(analyzed) or (on_demand and _has_state(analyzed)) \
            or outputs is None:  # an aggregation is fed by the runtime, queried or not
        streams = {n for q in rest for n in q.inputs} | _aggregation_inputs(analyzed) | \
            {STORE_STREAM, TICK_STREAM}
        step = (make_aggregation_step(app_text, layout) if aggregations_only(analyzed, rest)
                else make_step(app_text, [q.id for q in rest], layout))
        split = aggregation_split(analyzed, rest, source, layout, on_demand)
        if split is not None:  # by group over the cores (runtime/aggregation/batch_step.py)
            source, streams = split.source, split.streams
        key = split.key if split is not None else \
            _state_key(analyzed, rest, layout, source.sparkSession)
        stateful = (_runtime_input(source, layout, streams)
                    .withColumn("_key", key).groupBy("_key")
                    .applyInPandasWithState(step, outputStructType=OUTPUT_SCHEMA,
                                            stateStructType=STATE_SCHEMA,
                                            outputMode="append", timeoutConf="NoTimeout"))
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    return outputs


def stateless_group(analyzed: AnalyzedApp, layout: InputLayout) -> bool:
    """Whether every query of the group compiles to Spark SQL (:mod:`eddy.engine.native`)
    and the group keeps no state: what Spark's real-time mode can run."""
    native = plan_native(analyzed, layout)
    return (len(native.ids) == len(analyzed.queries) and not _has_state(analyzed)
            and not _aggregation_inputs(analyzed))


def _state_key(analyzed: AnalyzedApp, rest: list[QueryInfo], layout: InputLayout,
               spark: SparkSession) -> Column:
    """The runtime's state key: one, or a bucket of the partition value when the runtime's
    queries may run split by it (:mod:`eddy.engine.runtime.partition_buckets`), so that
    the work spreads over the cores."""
    attributes = partition_attributes(analyzed, [q.id for q in rest],
                                      [name for name, _ in layout.streams])
    if attributes is None:
        return F.lit(0)
    values = []
    for stream, attribute in attributes.items():
        names = [a.name for a in layout.attributes(stream)]
        values.append(F.col(layout.columns(stream)[names.index(attribute)]).cast("string"))
    return hash_bucket([F.coalesce(*values)], BUCKETS, spark)


def _runtime_input(source: DataFrame, layout: InputLayout, streams: set[str]) -> DataFrame:
    """The rows the runtime needs, narrowed to what it reads: every column crosses into
    Python, and a string ``_stream`` costs a Python string per row, so the stream travels
    as its position in the layout (what :func:`~eddy.engine.operator.to_events` expects)."""
    names = [name for name, _ in layout.streams]
    code = F.array_position(F.array(*(F.lit(n) for n in names)), F.col(STREAM)) - 1
    columns = [c for name in names if name in streams for c in layout.columns(name)]
    return (source.where(F.col(STREAM).isin(sorted(streams)))
            .select(SEQ, TS, code.cast("int").alias(STREAM), *columns))


def _aggregation_inputs(analyzed: object) -> set[str]:
    """The streams that ``define aggregation … from S`` reads: the runtime aggregates them
    even when no query reads them."""
    from eddy.lang import ast
    from eddy.lang.semantic import AnalyzedApp

    assert isinstance(analyzed, AnalyzedApp)
    return {info.definition.input.stream for info in analyzed.streams.values()
            if isinstance(info.definition, ast.AggregationDefinition)
            and info.definition.input is not None}


def _has_state(analyzed: object) -> bool:
    from eddy.lang.semantic import AnalyzedApp

    assert isinstance(analyzed, AnalyzedApp)
    return any(s.kind in ("table", "window", "aggregation") for s in analyzed.streams.values())
