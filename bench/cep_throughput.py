"""Stateful CEP through Spark: eddy's compiled plan against a hand-written PySpark job.

Four apps over the same kind of input, each run by eddy (``compile_group``, its real plan:
the per-event runtime in ``applyInPandasWithState``) and, where one can compute the same, by
the best hand-written PySpark equivalent, in the same SparkSession and on the same spool:

(a) ``pattern-part``: the seed's query-2 (``examples/temperature.siddhi``) inside
    ``partition with (roomNo of TempStream)``:
    ``every(e1=TempStream) -> e2=TempStream[e1.roomNo == roomNo and (e1.temp + 5) <= temp]
    within 10 min``. Hand-written: ``applyInPandasWithState`` keyed by 4 hash buckets of
    roomNo, the bucket's pending ``e1`` events (room, ts, temp) as three numpy blobs, a
    Python loop over the batch's events with a dict of each room's pending lists: expire
    what is older than 10 min, complete (in arrival order) every pending ``e1`` with
    ``temp + 5 <= temp'``, then the event waits itself.
(b) ``pattern``: the same query exactly as written (unpartitioned, one state key; its
    pending matches indexed by ``e1.roomNo``). Its output equals (a)'s for in-order
    timestamps; the hand-written job is (a)'s.
(c) ``join``: ``from L#window.length(1000) join R#window.length(1000) on L.k == R.k``.
    Hand-written: one state key (the windows are global, as in Siddhi), each side's last
    1,000 events as numpy blobs and a Python loop with a dict from key to the other side's
    window values, the same per-event semantics (an arriving event joins the other side's
    window contents at that moment).
(d) ``join-time``: (c) with ``#window.time(200000)`` on both sides (as many events as
    (c)'s windows hold); hand-written: (c)'s loop, each window losing its events older
    than 200 s before an event arrives.

Input: TempStream events 100 ms apart in event time, roomNo uniform over 1,000 rooms,
temp ~ N(30, 10); for (c) and (d) L and R alternate, k uniform over 1,000 keys; spool
chunks of 100,000 events, either ``--events`` of them written before the jobs start, or,
with ``--minutes``, written while the case's first job runs (kept 10 micro-batches ahead
of it) for that many minutes — the issue's 10-minute run; the case's other jobs then read
the same events. Every job reads the spool in micro-batches of ``--batch-rows``, writes to
Spark's ``noop`` sink and counts its output rows with ``observe()`` (both sides alike), so
the two sides' output counts are compared too.

The JVM speeds up over its first minute (class loading, JIT: a length join's micro-batches
go from ~110 k to ~260 k ev/s in their first 15 s), so a short run mostly measures the
warm-up: with ``--repeat`` the sides alternate and each side's best run counts; a timed
run leaves its first ``--warmup`` seconds out of the steady rate and also reports the
rate over the whole run, warm-up included.

Per job: events/s = input rows / wall time of the steady-state micro-batches, p50/p99 of
their ``triggerExecution``, and the bytes of operator state in the checkpoint (read back
with Spark's ``statestore`` reader: what a restart restores) after the first and the last
steady batch; in a run of more than a minute, also each minute's events/s and the state at
its end (every batch's state is kept readable: ``minBatchesToRetain``).

Run: .venv/bin/python bench/cep_throughput.py [--events 400000] [--batch-rows 100000]
     [--cases pattern-part,pattern,join,join-time] [--sides eddy,hand] [--repeat 1]
     .venv/bin/python bench/cep_throughput.py --minutes 10 --warmup 60 --batch-rows 200000
     .venv/bin/python bench/cep_throughput.py --in-process --events 100000  (no Spark)
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from engine_throughput import (  # bench/ is the script's directory
    Measured,
    batch_start,
    drain,
    measure,
    wall_seconds,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import BinaryType, DataType, StructType

from eddy.engine.compile.group_query import compile_group
from eddy.engine.operators.state_keys import spread
from eddy.engine.spark.row_layout import SEQ, STREAM, TS, InputLayout, input_layout
from eddy.engine.spark.session import get_spark
from eddy.engine.spark.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang import check

TEMP = "define stream TempStream (deviceID long, roomNo int, temp double);\n"
QUERY2 = ("from every( e1=TempStream ) -> e2=TempStream[e1.roomNo == roomNo and "
          "(e1.temp + 5) <= temp ] within 10 min "
          "select e1.roomNo, e1.temp as initialTemp, e2.temp as finalTemp "
          "insert into AlertStream;")
JOIN = ("define stream L (k int, v double);\ndefine stream R (k int, w double);\n"
        "from L#window.length(1000) join R#window.length(1000) on L.k == R.k "
        "select L.k, L.v, R.w insert into Joined;")
JOIN_TIME_MS = 200_000
"""As long as a length(1000) window holds with an event per side every 200 ms."""
JOIN_TIME = JOIN.replace("length(1000)", f"time({JOIN_TIME_MS})")
APPS = {
    "pattern-part": TEMP + "partition with (roomNo of TempStream) begin\n" + QUERY2 + "\nend;",
    "pattern": TEMP + QUERY2,
    "join": JOIN,
    "join-time": JOIN_TIME,
}
HEADER = "@app:name('CepBench')\n@app:playback\n"
START_TS = 1_700_000_000_000
STEP_MS = 100
ROOMS = 1_000
WITHIN_MS = 10 * 60_000
JOIN_LENGTH = 1_000
CHUNK_ROWS = 100_000
BUCKETS = 4


# -- input ------------------------------------------------------------------------------------
class Spool:
    """The input of one app as spool chunks of ``CHUNK_ROWS`` events, written on demand: all
    at once for a fixed number of events, or kept ahead of a running job for a timed run."""

    def __init__(self, directory: Path, layout: InputLayout, join: bool) -> None:
        self.directory, self.layout, self.join = directory, layout, join
        self.written = 0
        self._rng = np.random.default_rng(42)

    def fill(self, events: int) -> None:
        while self.written < events:
            self.append(min(CHUNK_ROWS, events - self.written))

    def append(self, n: int) -> None:
        layout, rng = self.layout, self._rng
        seq = np.arange(self.written, self.written + n, dtype=np.int64)
        data: dict[str, Any] = {SEQ: seq, TS: START_TS + STEP_MS * seq}
        if self.join:
            left = seq % 2 == 0
            data[STREAM] = pa.array(np.where(left, "L", "R").tolist())
            keys = rng.integers(0, ROOMS, n, dtype=np.int32)
            values = rng.normal(30.0, 10.0, n)
            for name, mask in (("L", left), ("R", ~left)):
                k_col, v_col = layout.columns(name)
                data[k_col] = pa.array(keys, mask=~mask)
                data[v_col] = pa.array(values, mask=~mask)
        else:
            data[STREAM] = pa.array(["TempStream"] * n)
            device, room, temp = layout.columns("TempStream")
            data[device] = seq
            data[room] = rng.integers(0, ROOMS, n, dtype=np.int32)
            data[temp] = rng.normal(30.0, 10.0, n)
        schema = layout.arrow_schema()
        for field in schema:
            if field.name not in data:
                data[field.name] = pa.nulls(n, field.type)
        append_chunk(self.directory, pa.table(data, schema=schema))
        self.written += n


# -- the hand-written jobs ----------------------------------------------------------------------
def _rising_temp(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                 state: GroupState) -> Iterator[pd.DataFrame]:
    """The events of one bucket of rooms in a micro-batch through query-2's state machine,
    each room's pending ``e1`` events in arrival order."""
    new = pd.concat(list(frames)).sort_values(SEQ, kind="stable")
    pending: dict[int, tuple[list[int], list[float]]] = {}
    if state.exists:
        blob_room, blob_ts, blob_temp = state.get
        for room, ts, temp in zip(np.frombuffer(blob_room, np.int32).tolist(),
                                  np.frombuffer(blob_ts, np.int64).tolist(),
                                  np.frombuffer(blob_temp, np.float64).tolist()):
            waiting = pending.setdefault(room, ([], []))
            waiting[0].append(ts)
            waiting[1].append(temp)
    out_room: list[int] = []
    out_ts: list[int] = []
    first: list[float] = []
    last: list[float] = []
    for room, ts, temp in zip(new["roomNo"].tolist(), new[TS].tolist(), new["temp"].tolist()):
        waiting = pending.get(room)
        if waiting is None:
            pending[room] = ([ts], [temp])
            continue
        pending_ts, pending_temp = waiting
        horizon = ts - WITHIN_MS
        drop = 0
        while drop < len(pending_ts) and pending_ts[drop] < horizon:
            drop += 1
        kept_ts, kept_temp = [], []
        for p_ts, p_temp in zip(pending_ts[drop:], pending_temp[drop:]):
            if p_temp + 5 <= temp:
                out_room.append(room)
                out_ts.append(ts)
                first.append(p_temp)
                last.append(temp)
            else:
                kept_ts.append(p_ts)
                kept_temp.append(p_temp)
        kept_ts.append(ts)
        kept_temp.append(temp)
        pending[room] = (kept_ts, kept_temp)
    rooms = [room for room, (times, _) in pending.items() for _ in times]
    state.update((np.asarray(rooms, np.int32).tobytes(),
                  np.asarray([t for times, _ in pending.values() for t in times],
                             np.int64).tobytes(),
                  np.asarray([v for _, values in pending.values() for v in values],
                             np.float64).tobytes()))
    yield pd.DataFrame({"roomNo": np.asarray(out_room, np.int32), "ts": out_ts,
                        "initialTemp": first, "finalTemp": last})


def hand_pattern(src: DataFrame, layout: InputLayout) -> DataFrame:
    """Keyed by a few buckets of roomNo (two per core), not by room: a Python stateful
    operator costs ~1 ms per key and micro-batch (DESIGN.md §4). The bucket numbers are
    mapped to keys that Spark's shuffle sends to different partitions (``spread``), as
    eddy does: keys 0-3 themselves hash 3 : 1 over two partitions."""
    _, room, temp = layout.columns("TempStream")
    return (src.select(SEQ, TS, F.col(room).alias("roomNo"), F.col(temp).alias("temp"))
            .withColumn("_bucket", spread(F.pmod(F.col("roomNo"), F.lit(BUCKETS)), BUCKETS,
                                          src.sparkSession))
            .groupBy("_bucket")
            .applyInPandasWithState(_rising_temp,
                                    "roomNo int, ts long, initialTemp double, finalTemp double",
                                    "room binary, ts binary, temp binary", "append",
                                    GroupStateTimeout.NoTimeout))


def _window_join(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                 state: GroupState, by_time: bool = False) -> Iterator[pd.DataFrame]:
    """All events of a micro-batch through two length(1000) windows (``by_time``: two
    time(200 s) windows, in time order) and the join."""
    new = pd.concat(list(frames)).sort_values(SEQ, kind="stable")
    windows: list[tuple[list[int], list[float], list[int]]] = [([], [], []), ([], [], [])]
    if state.exists:
        blobs = state.get
        for side in (0, 1):
            blob_k, blob_v, blob_t = blobs[3 * side:3 * side + 3]
            windows[side] = (np.frombuffer(blob_k, np.int32).tolist(),
                             np.frombuffer(blob_v, np.float64).tolist(),
                             np.frombuffer(blob_t, np.int64).tolist())
    index: list[dict[int, list[float]]] = [{}, {}]
    for side, (keys, values, _) in enumerate(windows):
        for k, v in zip(keys, values):
            index[side].setdefault(k, []).append(v)
    out_k: list[int] = []
    out_v: list[float] = []
    out_w: list[float] = []
    heads = [0, 0]
    for is_left, k, value, ts in zip((new["side"] == 0).tolist(), new["k"].tolist(),
                                     new["value"].tolist(), new[TS].tolist()):
        side = 0 if is_left else 1
        if by_time:  # both windows lose what is older than the time window
            for s in (0, 1):
                keys, values, times = windows[s]
                while heads[s] < len(times) and times[heads[s]] + JOIN_TIME_MS <= ts:
                    index[s][keys[heads[s]]].remove(values[heads[s]])
                    heads[s] += 1
        keys, values, times = windows[side]
        if not by_time and len(keys) == JOIN_LENGTH:  # the oldest expires first (no output)
            old_k, old_v = keys.pop(0), values.pop(0)
            times.pop(0)
            index[side][old_k].remove(old_v)
        keys.append(k)
        values.append(value)
        times.append(ts)
        index[side].setdefault(k, []).append(value)
        for other in index[1 - side].get(k, ()):
            out_k.append(k)
            out_v.append(value if is_left else other)
            out_w.append(other if is_left else value)
    blobs = []
    for side, (keys, values, times) in enumerate(windows):
        head = heads[side]
        blobs += [np.asarray(keys[head:], np.int32).tobytes(),
                  np.asarray(values[head:], np.float64).tobytes(),
                  np.asarray(times[head:], np.int64).tobytes()]
    state.update(tuple(blobs))
    yield pd.DataFrame({"k": np.asarray(out_k, np.int32), "v": out_v, "w": out_w})


def hand_join(src: DataFrame, layout: InputLayout, by_time: bool = False) -> DataFrame:
    (lk, lv), (rk, rw) = layout.columns("L"), layout.columns("R")
    left = F.col(STREAM) == "L"

    def step(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
             state: GroupState) -> Iterator[pd.DataFrame]:
        return _window_join(key, frames, state, by_time)

    return (src.select(SEQ, TS, F.when(left, 0).otherwise(1).alias("side"),
                       F.coalesce(lk, rk).alias("k"), F.coalesce(lv, rw).alias("value"))
            .withColumn("_key", F.lit(0)).groupBy("_key")
            .applyInPandasWithState(step, "k int, v double, w double",
                                    ", ".join(f"{s}{c} binary" for s in "lr" for c in "kvt"),
                                    "append", GroupStateTimeout.NoTimeout))


HAND: dict[str, Callable[[DataFrame, InputLayout], DataFrame]] = {
    "pattern-part": hand_pattern, "pattern": hand_pattern, "join": hand_join,
    "join-time": lambda src, layout: hand_join(src, layout, by_time=True)}


# -- running and measuring ------------------------------------------------------------------------
@dataclass
class Run:
    measured: Measured
    outputs: int
    state_first: int
    state_last: int
    minutes: list[tuple[float, int]]  # per minute of a longer run: ev/s, state B at its end


LEAD_BATCHES = 10
"""A timed run keeps this many micro-batches of input written ahead of its job."""


def run_job(name: str, frame: DataFrame, work: Path, spool: Spool, warmup: int,
            timed: tuple[float, int] | None) -> Run:
    """``timed``: (minutes, batch rows) to run the job that long on input written while it
    runs, else it reads what the spool holds. The steady batches are all but the first
    ``warmup`` (a timed run: all that start ``warmup`` seconds or more after the first)."""
    counted = frame.observe("outputs", F.count(F.lit(1)).alias("rows"))
    writer = counted.writeStream.format("noop")
    total, progress = _timed(writer, name, work, spool, *timed) if timed \
        else drain(writer, name, work)
    read = sum(p["numInputRows"] for p in progress)
    assert read == spool.written, f"{name}: read {read} of {spool.written} rows"
    batches = [p for p in progress if p["numInputRows"] > 0]
    if timed:
        first = batch_start(batches[0])
        warmup = sum(1 for p in batches if batch_start(p) - first < warmup)
    result = measure(progress, warmup)
    result.total_s = total
    steady = batches[warmup:] or batches[-1:]
    outputs = sum(p["observedMetrics"]["outputs"]["rows"] for p in progress
                  if "outputs" in p.get("observedMetrics", {}))

    @functools.cache
    def state(batch_id: int) -> int:
        return state_bytes(frame.sparkSession, work / f"ck-{name}", batch_id)

    by_minute = _by_minute(batches)
    minutes = [(sum(p["numInputRows"] for p in minute) / wall_seconds(minute),
                state(minute[-1]["batchId"])) for minute in by_minute] \
        if len(by_minute) > 1 else []
    return Run(result, outputs, state(steady[0]["batchId"]), state(steady[-1]["batchId"]),
               minutes)


def _timed(writer: DataStreamWriter, name: str, work: Path, spool: Spool, minutes: float,
           batch_rows: int) -> tuple[float, list[dict[str, Any]]]:
    """Runs a job for ``minutes``, appending chunks to its spool as it reads them, then
    lets it finish what was written: wall seconds and its progress."""
    lead = LEAD_BATCHES * batch_rows
    deadline = time.perf_counter() + 60 * minutes
    spool.fill(spool.written + lead)

    def feed(query: StreamingQuery) -> bool:
        last = query.lastProgress
        offset = last["sources"][0]["endOffset"] if last else None
        if isinstance(offset, str):
            offset = json.loads(offset)
        ahead = (offset or {}).get("offset", 0) + lead
        spool.fill(CHUNK_ROWS * math.ceil(ahead / CHUNK_ROWS))  # whole chunks only
        return time.perf_counter() < deadline

    return drain(writer, name, work, feed)


def _by_minute(batches: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The batches grouped by the minute of the run they start in."""
    minutes: dict[int, list[dict[str, Any]]] = {}
    first = batch_start(batches[0])
    for p in batches:
        minutes.setdefault(int((batch_start(p) - first) // 60), []).append(p)
    return [minutes[m] for m in sorted(minutes)]


def state_bytes(spark: SparkSession, checkpoint: Path, batch_id: int) -> int:
    """The bytes of operator state the checkpoint holds after ``batch_id`` (Spark's state
    store reader): what a restart restores, summed over every state key."""
    frame = spark.read.format("statestore").option("batchId", batch_id).load(str(checkpoint))
    blobs = [F.col(f"value.{path}") for path, kind in _leaves(frame.schema["value"].dataType)
             if isinstance(kind, BinaryType)]
    total = frame.select(sum((F.coalesce(F.length(b), F.lit(0)) for b in blobs),
                             F.lit(0)).alias("n")).agg(F.sum("n")).first()
    return int(total[0] or 0) if total is not None else 0


def _leaves(kind: DataType, prefix: str = "") -> Iterator[tuple[str, DataType]]:
    if isinstance(kind, StructType):
        for field in kind.fields:
            yield from _leaves(field.dataType, f"{prefix}{field.name}.")
    else:
        yield prefix.rstrip("."), kind


def in_process(case: str, events: int) -> float:
    """Events/s of the per-event runtime alone (``Runtime.process``, no Spark) on the
    case's kind of input: what the operator's Python work is bounded by."""
    from eddy.runtime.group import build_runtime
    from eddy.runtime.model import InputEvent

    rng = np.random.default_rng(42)
    keys = rng.integers(0, ROOMS, events).tolist()
    values = rng.normal(30.0, 10.0, events).tolist()
    ts = [START_TS + STEP_MS * i for i in range(events)]
    if case.startswith("join"):
        given = [InputEvent(i, ts[i], "L" if i % 2 == 0 else "R", (keys[i], values[i]))
                 for i in range(events)]
    else:
        given = [InputEvent(i, ts[i], "TempStream", (i, keys[i], values[i]))
                 for i in range(events)]
    runtime = build_runtime(check(HEADER + APPS[case]))
    started = time.perf_counter()
    runtime.process(given)
    return events / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--cases", default="pattern-part,pattern,join")
    parser.add_argument("--sides", default="eddy,hand")
    parser.add_argument("--warmup", type=int, default=1,
                        help="batches left out of the steady rate (with --minutes: seconds)")
    parser.add_argument("--minutes", type=float, default=0,
                        help="run each case's first job this long on input written while it "
                             "runs (--events is then ignored); the other jobs read the same")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per job, alternating the sides; the best run counts")
    parser.add_argument("--in-process", action="store_true",
                        help="time the per-event runtime alone, without Spark")
    args = parser.parse_args()
    if args.in_process:
        for case in args.cases.split(","):
            print(f"{case:12s} runtime alone {in_process(case, args.events):>10,.0f} ev/s",
                  flush=True)
        return

    spark: SparkSession = get_spark({
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
        # every batch's state stays readable, for the state size minute by minute
        "spark.sql.streaming.minBatchesToRetain": "100000"})
    register_sources(spark)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="eddy-cep-bench-") as tmp:
        work = Path(tmp)
        for case in args.cases.split(","):
            app = HEADER + APPS[case]
            layout = input_layout(check(app))
            directory = work / f"spool-{case}"
            directory.mkdir()
            spool = Spool(directory, layout, join=case.startswith("join"))
            if not args.minutes:
                spool.fill(args.events)

            def source(spool: Path = directory, layout: InputLayout = layout) -> DataFrame:
                return (spark.readStream.format(FORMAT).schema(layout.spark_schema(clock=True))
                        .option("path", str(spool))
                        .option("maxRowsPerBatch", str(args.batch_rows)).load())

            best: dict[str, Run] = {}
            for run_no in range(args.repeat):
                for side in args.sides.split(","):
                    frame = (compile_group(app, source(), layout) if side == "eddy"
                             else HAND[case](source(), layout))
                    timed = (args.minutes, args.batch_rows) \
                        if args.minutes and not spool.written else None
                    run = run_job(f"{case}-{side}-{run_no}", frame, work, spool, args.warmup,
                                  timed)
                    m = run.measured
                    print(f"{case:12s} {side:5s} {m.rate:>10,.0f} ev/s  p50 {m.p50:,.0f} ms  "
                          f"p99 {m.p99:,.0f} ms  {run.outputs:,} outputs  state "
                          f"{run.state_first:,} -> {run.state_last:,} B  "
                          f"({spool.written:,} events, {m.batches} steady batches, "
                          f"{m.total_s:.1f} s: {spool.written / m.total_s:,.0f} ev/s overall)",
                          flush=True)
                    for minute, (rate, state) in enumerate(run.minutes):
                        print(f"    minute {minute + 1:3d} {rate:>10,.0f} ev/s  state "
                              f"{state:,} B", flush=True)
                    if side not in best or m.rate > best[side].measured.rate:
                        best[side] = run
            eddy, hand = best.get("eddy"), best.get("hand")
            if eddy and hand and eddy.outputs != hand.outputs:
                print(f"!! {case}: eddy emitted {eddy.outputs:,}, hand-written "
                      f"{hand.outputs:,}", flush=True)
            rows.append([
                case,
                f"{eddy.measured.rate:,.0f}" if eddy else "-",
                f"{hand.measured.rate:,.0f}" if hand else "-",
                f"{eddy.measured.rate / hand.measured.rate:.2f}" if eddy and hand else "-",
                f"{eddy.outputs:,}" if eddy else "-", f"{hand.outputs:,}" if hand else "-",
                f"{eddy.state_first:,} -> {eddy.state_last:,}" if eddy else "-"])
            for used in [directory, *work.glob(f"ck-{case}-*")]:  # a timed run's spool takes GBs
                shutil.rmtree(used)
    header = ["case", "eddy ev/s", "hand ev/s", "ratio", "eddy out", "hand out",
              "eddy state B (first -> last)"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(c.rjust(w) if i else c.ljust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
