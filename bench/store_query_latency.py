"""Round trip of an on-demand query on a running group (``GroupRunner.store_query``).

A query travels as an event on the group's store-query topic and is answered by the next
micro-batch, so its latency is about one micro-batch; queries sent concurrently share
micro-batches. The app keeps a table of ``--rows`` rows (one per symbol, updated by a
stream); the bench times ``--queries`` sequential finds, then the same number sent from
``--threads`` threads at once, and prints the median and p90 round trip and queries/s.

Run: .venv/bin/python bench/store_query_latency.py [--rows 10000] [--queries 40] [--threads 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from eddy.bus import open_bus
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.spark.session import get_spark

APP = """@App:name('Bench')
define stream Trades (symbol string, price double);
define table Last (symbol string, price double);
from Trades select symbol, price update or insert into Last on Last.symbol == symbol;
"""
QUERY = "from Last on price > 990.0 select symbol, price"


def timed(runner: GroupRunner) -> float:
    started = time.perf_counter()
    rows = runner.store_query(QUERY)
    assert rows, "the table should have rows above 990"
    return time.perf_counter() - started


def summary(label: str, seconds: list[float], wall: float) -> None:
    ms = sorted(s * 1000 for s in seconds)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{label}: median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, "
          f"{len(ms) / wall:.1f} queries/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    spark = get_spark({"spark.sql.shuffle.partitions": "1"})
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as work:
        url = f"sqlite:///{Path(work) / 'bus.db'}"
        runner = GroupRunner(APP, url, Path(work) / "checkpoint", spark=spark)
        runner.start()
        try:
            with open_bus(url) as bus:
                bus.append("Trades", pa.table({
                    "symbol": [f"S{i}" for i in range(args.rows)],
                    "price": [float(i % 1000) for i in range(args.rows)]}))
            assert runner.await_idle(600)
            timed(runner)  # warm-up: the runtime compiles the query once per process
            started = time.perf_counter()
            sequential = [timed(runner) for _ in range(args.queries)]
            summary("sequential", sequential, time.perf_counter() - started)
            started = time.perf_counter()
            with ThreadPoolExecutor(args.threads) as pool:
                concurrent = list(pool.map(lambda _: timed(runner), range(args.queries)))
            summary(f"{args.threads} threads", concurrent, time.perf_counter() - started)
        finally:
            runner.stop()


if __name__ == "__main__":
    main()
