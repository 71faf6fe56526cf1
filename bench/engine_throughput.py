"""Execution core: eddy's compiled plan against a hand-written PySpark job, same run, same input.

Three Siddhi queries over ``TempStream (deviceID long, roomNo int, temp double)``:

(a) ``filter``: the seed's range filter; eddy compiles it to Spark SQL (JVM), the
    hand-written job is a ``where``/``select``.
(b) ``time window``: ``#window.time(1 min)``, ``avg(temp) group by roomNo``: one output per
    event, the room's mean over the last minute. Spark has no per-event sliding window; the
    hand-written job is what a skilled PySpark user writes: ``applyInPandasWithState`` keyed
    by roomNo, state = the room's last minute of (ts, temp) as two numpy blobs, the mean per
    event from a cumulative sum and ``searchsorted`` on the time bound.
(c) ``timeBatch``: ``#window.timeBatch(1 sec)``, ``count() group by roomNo``: one row per
    room per second. The hand-written job is Spark's ``window()`` tumbling aggregation with
    a 0 s watermark (it emits a window when the watermark passes it, i.e. one micro-batch
    later; Siddhi emits when the first event of the next second arrives). The windows are
    the same here because the first event's timestamp is on a second boundary and time
    never goes back; in general they are not (Siddhi's batches start at the first event and
    take late events into the open batch; Spark's align to the epoch and drop late rows).

The input is generated once and written as spool chunks (the format ``eddy run`` appends):
``--events`` events, event time advancing 1 ms per event from a second boundary, roomNo
uniform over 100 rooms (60..159, so 10 rooms fall in the filter's range), temp ~ N(30, 10).
Every job reads the whole spool through eddy's spool source in micro-batches of
``--batch-rows`` events and writes to the ``noop`` sink, so the sink does not dominate.

Per job: events/s = input rows / wall time of the steady-state micro-batches (all but the
first ``--warmup`` ones; wall time from the first one's start to the last one's end, from
``query.recentProgress``), and p50/p99 of the steady-state batches' ``triggerExecution``.

Run: .venv/bin/python bench/engine_throughput.py [--events 5000000] [--batch-rows 500000]
     [--cases filter,window,batch] [--warmup 2] [--repeat 3]
Other work on the machine (and a cold JIT in the first job) makes single runs noisy: every job
runs ``--repeat`` times, alternating eddy and the hand-written job, and the best run counts.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from eddy.engine.compile.group_query import compile_group
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout, input_layout
from eddy.engine.spark.session import get_spark
from eddy.engine.spark.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang import check

HEADER = """@app:name('Bench')
@app:playback
define stream TempStream (deviceID long, roomNo int, temp double);
"""
APPS = {
    "filter": "from TempStream[(roomNo >= 100 and roomNo < 110) and temp > 40] "
              "select roomNo, temp insert into HighTempStream;",
    "window": "from TempStream#window.time(1 min) select roomNo, avg(temp) as avgTemp "
              "group by roomNo insert into AvgStream;",
    "batch": "from TempStream#window.timeBatch(1 sec) select roomNo, count() as n "
             "group by roomNo insert into Counts;",
}
START_TS = 1_700_000_000_000  # on a second boundary: Spark's windows align with timeBatch's
CHUNK_ROWS = 100_000
WINDOW_MS = 60_000


def write_spool(directory: Path, layout: InputLayout, events: int) -> None:
    """The benchmark's input, as spool chunks of ``CHUNK_ROWS`` events."""
    rng = np.random.default_rng(42)
    schema = layout.arrow_schema()
    columns = layout.columns("TempStream")
    for start in range(0, events, CHUNK_ROWS):
        n = min(CHUNK_ROWS, events - start)
        seq = np.arange(start, start + n, dtype=np.int64)
        data: dict[str, Any] = {
            SEQ: seq, TS: seq + START_TS, STREAM: pa.array(["TempStream"] * n),
            columns[0]: seq,
            columns[1]: rng.integers(60, 160, n, dtype=np.int32),
            columns[2]: rng.normal(30.0, 10.0, n),
        }
        for field in schema:
            if field.name not in data:
                data[field.name] = pa.nulls(n, field.type)
        append_chunk(directory, pa.table(data, schema=schema))


# -- the hand-written jobs ---------------------------------------------------------------------
def hand_filter(src: DataFrame, cols: list[str]) -> DataFrame:
    room, temp = F.col(cols[1]), F.col(cols[2])
    return (src.where((room >= 100) & (room < 110) & (temp > 40))
            .select(room.alias("roomNo"), temp.alias("temp")))


def _sliding_avg(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                 state: GroupState) -> Iterator[pd.DataFrame]:
    """One room's events of a micro-batch: the mean temp over (ts - 1 min, ts] per event."""
    new = pd.concat(list(frames))
    order = np.argsort(new[SEQ].to_numpy(), kind="stable")
    nts = new[TS].to_numpy()[order]
    ntemp = new["temp"].to_numpy()[order]
    if state.exists:
        old_ts, old_temp = state.get
        ts = np.concatenate([np.frombuffer(old_ts, np.int64), nts])
        temp = np.concatenate([np.frombuffer(old_temp, np.float64), ntemp])
    else:
        ts, temp = nts, ntemp
    sums = np.concatenate([[0.0], np.cumsum(temp)])
    idx = np.arange(len(ts) - len(nts), len(ts))
    lo = np.searchsorted(ts, ts[idx] - WINDOW_MS, side="right")
    avg = (sums[idx + 1] - sums[lo]) / (idx + 1 - lo)
    keep = ts > ts[-1] - WINDOW_MS
    state.update((ts[keep].tobytes(), temp[keep].tobytes()))
    yield pd.DataFrame({"roomNo": np.full(len(nts), key[0], np.int32), "ts": nts,
                        "avgTemp": avg})


def hand_window(src: DataFrame, cols: list[str]) -> DataFrame:
    return (src.select(SEQ, TS, F.col(cols[1]).alias("roomNo"), F.col(cols[2]).alias("temp"))
            .groupBy("roomNo")
            .applyInPandasWithState(_sliding_avg, "roomNo int, ts long, avgTemp double",
                                    "ts binary, temp binary", "append",
                                    GroupStateTimeout.NoTimeout))


def hand_batch(src: DataFrame, cols: list[str]) -> DataFrame:
    return (src.select(F.timestamp_millis(TS).alias("t"), F.col(cols[1]).alias("roomNo"))
            .withWatermark("t", "0 seconds")
            .groupBy(F.window("t", "1 second"), "roomNo").agg(F.count("*").alias("n")))


HAND: dict[str, Callable[[DataFrame, list[str]], DataFrame]] = {
    "filter": hand_filter, "window": hand_window, "batch": hand_batch}


# -- running and measuring ---------------------------------------------------------------------
@dataclass
class Measured:
    rate: float
    p50: float
    p99: float
    batches: int
    rows: int
    total_s: float


def batch_start(progress: dict[str, Any]) -> float:
    return datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


def wall_seconds(batches: list[dict[str, Any]]) -> float:
    """From the start of the first of ``batches`` to the end of the last."""
    last = batches[-1]
    return batch_start(last) + last["durationMs"]["triggerExecution"] / 1000 \
        - batch_start(batches[0])


def measure(progress: list[dict[str, Any]], warmup: int) -> Measured:
    batches = [p for p in progress if p["numInputRows"] > 0]
    steady = batches[warmup:] if len(batches) > warmup else batches[-1:]
    rows = sum(p["numInputRows"] for p in steady)
    wall = wall_seconds(steady)
    durations = [p["durationMs"]["triggerExecution"] for p in steady]
    return Measured(rows / wall, float(np.percentile(durations, 50)),
                    float(np.percentile(durations, 99)), len(steady), rows, 0.0)


def drain(writer: DataStreamWriter, name: str, work: Path,
          feed: Callable[[StreamingQuery], bool] | None = None
          ) -> tuple[float, list[dict[str, Any]]]:
    """Runs a streaming job until its input is used up: wall seconds and its progress.
    ``feed``, called twice a second with the running job, may add input while it runs; once
    it returns False, the job ends after what is there."""
    started = time.perf_counter()
    query = writer.queryName(name).option("checkpointLocation", str(work / f"ck-{name}")).start()
    try:
        while feed is not None and query.isActive and feed(query):
            time.sleep(0.5)
        query.processAllAvailable()
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"{name} failed: {query.exception()}")
    return time.perf_counter() - started, [dict(p) for p in query.recentProgress]


def run_job(spark: SparkSession, name: str, frame: DataFrame, work: Path,
            warmup: int, expected_rows: int) -> Measured:
    total, progress = drain(frame.writeStream.format("noop"), name, work)
    read = sum(p["numInputRows"] for p in progress)
    assert read == expected_rows, f"{name}: read {read} of {expected_rows} rows " \
                                  "(raise spark.sql.streaming.numRecentProgressUpdates?)"
    result = measure(progress, warmup)
    result.total_s = total
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--batch-rows", type=int, default=500_000)
    parser.add_argument("--cases", default="filter,window,batch")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--sides", default="eddy,hand",
                        help="eddy, hand, and eddy-1 (eddy without the spool's running "
                             "clock: its window operator on one state key, as before)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per job, alternating the sides; the best run counts")
    args = parser.parse_args()

    spark = get_spark({"spark.sql.streaming.numRecentProgressUpdates": "1000"})
    register_sources(spark)
    results: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        work = Path(tmp)
        spool = work / "spool"
        spool.mkdir()
        layout = input_layout(check(HEADER + APPS["filter"]))
        t0 = time.perf_counter()
        write_spool(spool, layout, args.events)
        print(f"wrote {args.events:,} events in {time.perf_counter() - t0:.1f} s "
              f"(batches of {args.batch_rows:,})", flush=True)
        cols = layout.columns("TempStream")

        def source(clock: bool = True) -> DataFrame:
            return (spark.readStream.format(FORMAT).schema(layout.spark_schema(clock=clock))
                    .option("path", str(spool))
                    .option("maxRowsPerBatch", str(args.batch_rows)).load())

        for case in args.cases.split(","):
            app = HEADER + APPS[case]
            assert input_layout(check(app)) == layout
            measured: dict[str, Measured] = {}
            for run_no in range(args.repeat):
                for side in args.sides.split(","):
                    frame = compile_group(app, source(side == "eddy"), layout) \
                        if side.startswith("eddy") else HAND[case](source(), cols)
                    m = run_job(spark, f"{case}-{side}-{run_no}", frame, work, args.warmup,
                                args.events)
                    print(f"{case:7s} {side:5s} {m.rate:>12,.0f} ev/s  p50 {m.p50:,.0f} ms  "
                          f"p99 {m.p99:,.0f} ms  ({m.batches} steady batches, "
                          f"{m.total_s:.1f} s in all)", flush=True)
                    if side not in measured or m.rate > measured[side].rate:
                        measured[side] = m
            eddy, hand = measured.get("eddy"), measured.get("hand")
            results.append([
                case, f"{eddy.rate:,.0f}" if eddy else "-", f"{hand.rate:,.0f}" if hand else "-",
                f"{eddy.rate / hand.rate:.2f}" if eddy and hand else "-",
                f"{eddy.p50:,.0f} / {eddy.p99:,.0f}" if eddy else "-",
                f"{hand.p50:,.0f} / {hand.p99:,.0f}" if hand else "-"])
    header = ["case", "eddy ev/s", "hand-written ev/s", "ratio", "eddy p50/p99 ms",
              "hand p50/p99 ms"]
    widths = [max(len(r[i]) for r in [header, *results]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *results]:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                        enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
