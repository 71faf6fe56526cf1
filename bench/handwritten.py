"""A hand-written PySpark job beside eddy's plan: ``filtered-window`` as a Spark user would
write it without eddy.

``TempStream[temp > 20]#window.time(1 min) select roomNo, avg(temp) group by roomNo``
emits, for every event that passes the filter, the average temperature of its room over the
events of the last minute (those with ``_ts > t - 60 s``, the event itself included). Spark
has no per-event sliding window (its windows are tumbling or hopping by event time), so the
job keeps each room's last minute in ``applyInPandasWithState`` and computes every event's
average with NumPy (a cumulative sum and a binary search) — the vectorised shape a careful
PySpark developer writes by hand. It reads the same bus topic through the same source
(``eddy-bus``) and appends its outputs to a bus topic, as the worker's plan does, so the two
differ only in what runs between reading and writing. The same job written in Java
(``jvm/HandwrittenSlidingAverage.java``, ``flatMapGroupsWithState``) runs beside it, to show
what the crossing into Python costs.

Used by ``bench/app_throughput.py --handwritten``; not a test.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.types import (BinaryType, DoubleType, IntegerType, LongType, StructField,
                               StructType)

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.engine.spark.bus_source import GroupInput, read_group_input
from eddy.engine.spark.row_layout import InputLayout
from eddy.engine.spark.session import get_spark
from eddy.lang.ast import Attribute, AttrType

WINDOW_MS = 60_000
JAVA_SOURCE = Path(__file__).parent / "jvm" / "HandwrittenSlidingAverage.java"
TEMP_ATTRIBUTES = (Attribute("deviceID", AttrType.LONG), Attribute("roomNo", AttrType.INT),
                   Attribute("temp", AttrType.DOUBLE))
OUTPUT_ATTRIBUTES = (Attribute("roomNo", AttrType.INT), Attribute("avgTemp", AttrType.DOUBLE))
OUTPUT = StructType([StructField("_ts", LongType()), StructField("roomNo", IntegerType()),
                     StructField("avgTemp", DoubleType())])
STATE = StructType([StructField("ts", BinaryType()), StructField("temp", BinaryType())])
"""A room's last minute as raw NumPy buffers (the cheapest state pandas UDFs can keep)."""


def sliding_average(room: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                    state: GroupState) -> Iterator[pd.DataFrame]:
    """Every new event's average over its room's last minute; keeps that minute as state."""
    new = pd.concat(list(frames)).sort_values("_seq", kind="stable")
    old_ts, old_temp = (np.frombuffer(state.get[0], np.int64),
                        np.frombuffer(state.get[1], np.float64)) \
        if state.exists else (np.empty(0, np.int64), np.empty(0))
    ts = np.concatenate([old_ts, new["_ts"].to_numpy(np.int64)])
    temp = np.concatenate([old_temp, new["s0_2"].to_numpy(np.float64)])
    sums = np.concatenate([[0.0], np.cumsum(temp)])
    ends = np.arange(len(old_ts), len(ts)) + 1
    starts = np.searchsorted(ts, ts[ends - 1] - WINDOW_MS, side="right")
    yield pd.DataFrame({"_ts": ts[ends - 1], "roomNo": np.full(len(ends), room[0], np.int32),
                        "avgTemp": (sums[ends] - sums[starts]) / (ends - starts)})
    keep = ts > ts[-1] - WINDOW_MS
    state.update((ts[keep].tobytes(), temp[keep].tobytes()))


def filtered_window_job(source: DataFrame) -> DataFrame:
    """The job in Python: filter in the JVM, then the per-room sliding average in pandas."""
    return (source.where("s0_2 > 20").select("_seq", "_ts", "s0_1", "s0_2")
            .groupBy("s0_1").applyInPandasWithState(sliding_average, OUTPUT, STATE,
                                                    "append", "NoTimeout"))


def filtered_window_job_jvm(source: DataFrame) -> DataFrame:
    """The same job in Java (``bench/jvm/HandwrittenSlidingAverage.java``): no Python
    crossing at all, what a Spark user who writes Scala or Java would run."""
    spark = source.sparkSession
    events = source.where("s0_2 > 20").select("_seq", "_ts", "s0_1", "s0_2")
    jvm = spark._jvm  # type: ignore[attr-defined]
    return DataFrame(jvm.HandwrittenSlidingAverage.apply(events._jdf, WINDOW_MS), spark)


def io_floor_job(source: DataFrame) -> DataFrame:
    """Only the filter, each passing event written out with its own temperature: what
    reading from and writing to the bus cost, the floor under any job here."""
    return source.where("s0_2 > 20").selectExpr("_ts", "s0_1 AS roomNo", "s0_2 AS avgTemp")


JOBS = {"PySpark": filtered_window_job, "Java": filtered_window_job_jvm,
        "bus in/out only": io_floor_job}


def jvm_job_conf() -> dict[str, str]:
    """Spark settings that put the Java job on the class path (compiled here with javac
    against pyspark's jars); give them to the process's first ``get_spark``."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    out = Path(tempfile.mkdtemp(prefix="eddy-bench-jvm-"))
    subprocess.run(["javac", "-nowarn", "--release", "17", "-cp", f"{jars}/*", "-d", str(out),
                    str(JAVA_SOURCE)], check=True, capture_output=True, text=True)
    jar = out / "handwritten.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(out), "."], check=True)
    return {"spark.driver.extraClassPath": str(jar), "spark.jars": str(jar)}


def run_handwritten(bus_url: str, work: Path, batch_rows: int,
                    append_events: Callable[[Bus, str], None],
                    job: Callable[[DataFrame], DataFrame] = filtered_window_job
                    ) -> tuple[list[Any], float, str]:
    """Runs ``job`` over the events ``append_events(bus, topic)`` puts on a fresh topic;
    returns its micro-batches' progress, its wall time and its output topic."""
    spark = get_spark()
    spark.sparkContext.addPyFile(__file__)  # the job's function is pickled by reference
    name = f"handwritten-{uuid.uuid4().hex[:6]}"
    source_topic, output_topic = f"{name}.TempStream", f"{name}.HotAvgStream"
    inputs = GroupInput(InputLayout((("TempStream", TEMP_ATTRIBUTES),)),
                        (("TempStream", source_topic),))
    with open_bus(bus_url) as bus:
        bus.create_topic(TopicSpec(source_topic, TEMP_ATTRIBUTES))
        bus.create_topic(TopicSpec(output_topic, OUTPUT_ATTRIBUTES))
        append_events(bus, source_topic)

        def write(batch: DataFrame, _batch_id: int) -> None:
            table = batch.toArrow()
            if table.num_rows:
                bus.append(output_topic, table)

        source = read_group_input(spark, bus_url, inputs, name, max_rows_per_batch=batch_rows)
        started = time.perf_counter()
        query = (job(source).writeStream.queryName(name).foreachBatch(write)
                 .option("checkpointLocation", str(work / name)).start())
        try:
            query.processAllAvailable()
            wall = time.perf_counter() - started
            progress = [p for p in query.recentProgress if p.numInputRows > 0]
        finally:
            query.stop()
    return progress, wall, output_topic
