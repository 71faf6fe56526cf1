"""Running recorded inputs through a real GroupRunner, for tests that stop, crash and
restart a group on its checkpoint and compare with an uninterrupted run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import groupby
from pathlib import Path
from typing import Any

import pyarrow as pa

from eddy.bus import Bus, open_bus
from eddy.engine.run.group_runner import GroupRunner

WAIT_S = 90.0
OnOutput = Callable[[int, Mapping[str, pa.Table]], None]


def append_inputs(bus: Bus, runner: GroupRunner, inputs: list[dict[str, Any]]) -> None:
    """Appends events in input order, one append per run of events of the same stream."""
    for stream, run in groupby(inputs, key=lambda item: item["stream"]):
        events = list(run)
        names = [a.name for a in runner.analyzed.streams[stream].attributes]
        columns: dict[str, list[Any]] = {"_ts": [e["timestamp"] for e in events]}
        for i, name in enumerate(names):
            columns[name] = [e["data"][i] for e in events]
        bus.append(runner.input_topic(stream), pa.table(columns))


def run_inputs(app: str, spark: Any, url: str, checkpoint: Path, inputs: list[dict[str, Any]],
               on_output: OnOutput | None = None, max_rows_per_batch: int = 0) -> None:
    """One runner: starts on ``checkpoint``, takes ``inputs``, stops once they are done."""
    # Recorded timestamps are event time: the wall-clock heartbeat stays out.
    runner = GroupRunner(app, url, checkpoint, spark=spark, on_output=on_output,
                         group=checkpoint.parent.name, max_rows_per_batch=max_rows_per_batch,
                         heartbeat=False)
    runner.start()
    try:
        with open_bus(url) as bus:
            append_inputs(bus, runner, inputs)
        assert runner.await_idle(WAIT_S)
    finally:
        runner.stop()


def crash_once() -> OnOutput:
    """A callback that fails the query after its first batch's outputs are on the bus."""
    calls: list[int] = []

    def crash(batch_id: int, tables: Mapping[str, pa.Table]) -> None:
        calls.append(batch_id)
        if len(calls) == 1:
            raise RuntimeError("simulated crash after the outputs were appended")

    return crash
