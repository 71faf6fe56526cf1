"""An execution group in Spark's real-time mode (:mod:`.real_time`): whether it may run so,
and starting and stopping it.

Only a group whose queries all compile to Spark SQL and keep no state runs in real time —
no timers (a heartbeat topic), no stores to query, no share of a topic to select (a parallel
child app's selection runs in the Python source) — on a session started with eddy's JVM
classes. Its long-running task holds one of the session's task slots for as long as it
runs, so a group that would take the last one, which the session's micro-batch queries
need, is refused too. A refused group says why in the log and runs in micro-batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from eddy.bus import Bus
from eddy.engine.compile.group_query import stateless_group
from eddy.engine.run.bus_sink import BusSink
from eddy.engine.run.group_checkpoint import REAL_TIME_CHECKPOINT
from eddy.engine.run.group_topics import GroupTopics
from eddy.engine.run.real_time import (
    TASK_SLOTS,
    Bridge,
    bridge_source,
    real_time_refusal,
    start_real_time,
)
from eddy.engine.spark.bus_source import GroupInput, initial_positions
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import AnalyzedApp

log = logging.getLogger("eddy.engine.run.group_real_time")
MIN_BATCH_MS = "spark.sql.streaming.realTimeMode.minBatchDuration"
SPARK_MIN_BATCH_MS = 5000


def group_refusal(analyzed: AnalyzedApp, layout: InputLayout, topics: GroupTopics, *,
                  ticking: bool, spark: SparkSession) -> str | None:
    """Why the group cannot run in real-time mode, or None when it can (``ticking``: it has
    a heartbeat topic)."""
    if topics.selects:
        return "it reads a share of a topic (a parallel child app)"
    if ticking or topics.store is not None or not stateless_group(analyzed, layout):
        return "it has stateful queries (windows, patterns, joins, tables, aggregations)"
    return real_time_refusal(spark)


def start_group(spark: SparkSession, refusal: str | None, *, name: str, bus: Bus,
                bus_url: str, inputs: GroupInput, sink: BusSink,
                compile_outputs: Callable[[DataFrame], DataFrame], checkpoint_dir: Path,
                batch_ms: int) -> tuple[StreamingQuery, Bridge] | None:
    """Starts group ``name`` in real-time mode, checkpointing every ``batch_ms``, its plan
    ``compile_outputs`` of the rows its bridge reads; or says in the log why it runs in
    micro-batches instead (``refusal``, or no task slot to spare) and returns None."""
    if refusal is None and not TASK_SLOTS.reserve(spark):
        refusal = ("its long-running task would take the session's last task slot, "
                   "which its other queries need (raise the slots with spark.master "
                   "local[N])")
    if refusal is not None:
        log.info("group %s runs in micro-batches, not in real time: %s", name, refusal)
        return None
    if batch_ms < SPARK_MIN_BATCH_MS:  # Spark's lower bound guards production, no more
        spark.conf.set(MIN_BATCH_MS, f"{batch_ms}ms")
    bridge = Bridge(bus_url, inputs, sink, name, initial_positions(bus, inputs, name))
    try:
        bridge.start()
        outputs = compile_outputs(bridge_source(spark, bridge))
        query = start_real_time(outputs, bridge,
                                checkpoint=str(checkpoint_dir / REAL_TIME_CHECKPOINT),
                                name=f"eddy:{name}", batch_duration=f"{batch_ms} milliseconds")
    except BaseException:
        stop_group(bridge)
        raise
    log.info("group %s runs in real-time mode, checkpointing every %.1f s", name,
             batch_ms / 1000)
    return query, bridge


def stop_group(bridge: Bridge) -> None:
    """Stops a real-time group's ``bridge`` (its query is stopped first) and gives back its
    task slot."""
    bridge.stop()
    TASK_SLOTS.release()
