"""How long a streaming query over eddy's bus source takes to start (issue 17).

Each run starts a fresh :class:`~eddy.engine.run.group_runner.GroupRunner` of a filter app
on a SQLite bus holding one event, with a new checkpoint, in one SparkSession, and times
from ``start()`` to the source initialised (Spark's Python stream reader process up and
connected, :meth:`GroupRunner.await_started`) and to the first micro-batch's outputs
written (:meth:`GroupRunner.await_idle`). A warm-up run first (the JVM's first query
loads classes) is not counted.

Usage: ``PYTHONPATH=src .venv/bin/python bench/runner_start.py [--runs 5] [--forks on|off]``;
``--forks`` sets ``EDDY_SPARK_eddy__runnerForks__enabled`` (the pre-imported fork server of
the stream reader, :mod:`eddy.engine.spark.runner_forks`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

APP = """
@app:name('StartBench')
define stream Temp (room string, temp double);
from Temp[temp > 25.0] select room, temp insert into Hot;
"""
WAIT_S = 120.0


def one_start(spark: object, root: Path, run: int) -> tuple[float, float]:
    """Seconds from ``start()`` to the source initialised and to the first batch written."""
    from eddy.bus import open_bus, sqlite_url
    from eddy.engine.run.group_runner import GroupRunner

    url = sqlite_url(root / f"bus{run}" / "bus.db")
    runner = GroupRunner(APP, url, root / f"checkpoint{run}", spark=spark)
    with open_bus(url) as bus:
        runner.create_topics(bus)
        bus.append(runner.input_topic("Temp"),
                   pa.table({"_ts": [1_000_000], "room": ["r1"], "temp": [30.0]}))
    began = time.monotonic()
    runner.start()
    try:
        runner.await_started(WAIT_S)
        initialised = time.monotonic() - began
        assert runner.await_idle(WAIT_S), "the first batch did not complete"
        first_batch = time.monotonic() - began
    finally:
        runner.stop()
    return initialised, first_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--forks", choices=("on", "off"), default="on")
    args = parser.parse_args()
    os.environ["EDDY_SPARK_eddy__runnerForks__enabled"] = \
        "true" if args.forks == "on" else "false"
    from eddy.engine.spark.session import get_spark, stop_spark

    spark = get_spark()
    try:
        with tempfile.TemporaryDirectory(prefix="eddy-start-bench-") as tmp:
            one_start(spark, Path(tmp), -1)  # warm-up
            figures = [one_start(spark, Path(tmp), run) for run in range(args.runs)]
    finally:
        stop_spark()
    for run, (initialised, first_batch) in enumerate(figures, 1):
        print(f"run {run}: source initialised {initialised:.2f} s, "
              f"first batch written {first_batch:.2f} s")
    print(f"forks {args.forks}: median initialised "
          f"{statistics.median(f[0] for f in figures):.2f} s, median first batch "
          f"{statistics.median(f[1] for f in figures):.2f} s")


if __name__ == "__main__":
    main()
