"""Stateful CEP survives a restart: pattern, join, table and partition cases stopped
mid-input.

Each case runs as a :class:`~eddy.engine.run.group_runner.GroupRunner` on a real SQLite bus with
a real Spark streaming query (the session's SparkSession). One run goes through the whole
input without interruption; the others stop at a cut point picked at random (seeded by the
case's name), then a new runner on the same checkpoint finishes the input. In the "crash"
variant the second runner fails right after its first batch's outputs reached the bus (the
batch is not committed) and a third runner replays that batch. Every run's output topics
must hold the case's expected output, and the same events as the uninterrupted run.

The cases' inputs have strictly increasing timestamps, so the bus reader's order (by each
topic partition's high-water timestamp) is the input order whatever batches Spark cuts.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conformance import Case, compare_events, load_cases
from group_runs import crash_once, run_inputs

from eddy.bus import open_bus, sqlite_url
from eddy.engine.operators.runtime_operator import run_batch
from eddy.engine.run.group_topics import output_events
from eddy.lang import check
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, sort_outputs

# One case per stateful feature: a counting pattern with `within` over two streams, a left
# outer window join, a table updated and read through a join by three streams, and a value
# partition (its runtime split over Spark state keys by partition value); and the seed's
# pattern, which runs in the followed-by operator (eddy's Java one where a JDK built it; its
# pending matches are state); a heartbeat's absent pattern and a keyed session window, in
# eddy's Java operators where a JDK built them (their timers and sessions are state).
CASE_NAMES = ("pattern_count_2_to_5_within", "join_left_outer", "table_update_expression",
              "partition_value_length_window", "pattern_seed_query2_temp_rise",
              "pattern_absent_heartbeat", "window_session_keyed_sum")
CASES = {c.name: c for c in load_cases(["pattern", "join", "table", "partition", "window"])
         if c.name in CASE_NAMES}

# Stateful queries reading a stateful query's outputs in the same micro-batch, inside a value
# partition (with a JDK, three Java operators chained in one streaming query, each with its
# own state, the last links carrying the rows before them); no reference case has this
# shape, so eddy's per-event runtime gives the expected outputs.
CHAIN_APP = """@app:playback
define stream TempStream (deviceID long, roomNo int, temp double);
partition with (roomNo of TempStream) begin
@info(name = 'avg') from TempStream#window.length(3)
select roomNo, avg(temp) as avgTemp insert into #Avg;
@info(name = 'jump')
from every e1=#Avg -> e2=#Avg[avgTemp > e1.avgTemp + 2.0] within 3 sec
select e1.roomNo, e1.avgTemp as before, e2.avgTemp as after insert into Jumps;
@info(name = 'peak') from #Avg#window.length(2) select roomNo, max(avgTemp) as peak
insert into Peaks;
end;
"""


def _runtime_case(name: str, app: str, inputs: list[dict[str, Any]]) -> Case:
    """A case whose expected outputs are the per-event runtime's, in its order."""
    analyzed = check(app)
    events = [InputEvent(seq, item["timestamp"], item["stream"], tuple(item["data"]))
              for seq, item in enumerate(inputs)]
    inner = {q.id for q in analyzed.queries if q.target_kind == "inner"}
    streams = {q.output_stream for q in analyzed.queries
               if q.output_stream and q.id not in inner}
    expected: dict[str, list[dict[str, Any]]] = {stream: [] for stream in streams}
    for output in sort_outputs(run_batch(build_runtime(analyzed), events)):
        if output.query not in inner:  # a partition's inner streams are not the app's
            assert output.target is not None
            expected[output.target].append({"timestamp": output.ts,
                                            "data": list(output.data), "expired": False})
    schemas = {stream: [[a.name, a.type.name] for a in analyzed.streams[stream].attributes]
               for stream in streams}
    return Case(name, "chain", app, inputs, expected, {}, [], schemas, True, None, Path(name))


_TEMPS = (22.0, 31.0, 35.0, 29.0, 41.0, 38.0, 44.0)
CASES["chain_in_a_partition"] = _runtime_case("chain_in_a_partition", CHAIN_APP, [
    {"stream": "TempStream", "timestamp": 1_000 + 350 * i,
     "data": [i, i % 3, _TEMPS[(i * 5) % len(_TEMPS)]]} for i in range(45)])
CASE_NAMES += ("chain_in_a_partition",)

def run_with_restart(case: Case, spark: Any, work: Path, cut: int | None,
                     crash: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Runs ``case`` on a fresh bus: uninterrupted (``cut`` None), or stopped after
    ``inputs[:cut]`` and resumed from the checkpoint; returns each output topic's events."""
    url = sqlite_url(work / "bus.db")
    checkpoint = work / "checkpoint"
    inputs = [item for item in case.inputs if "stream" in item]
    if cut is None:
        run_inputs(case.app, spark, url, checkpoint, inputs)
    else:
        run_inputs(case.app, spark, url, checkpoint, inputs[:cut])
        rest = inputs[cut:]
        if crash:
            with pytest.raises(RuntimeError, match="simulated crash"):
                run_inputs(case.app, spark, url, checkpoint, rest, on_output=crash_once())
            rest = []  # already on the bus: the next runner replays the failed batch
        run_inputs(case.app, spark, url, checkpoint, rest)
    assert case.expected is not None
    with open_bus(url) as bus:
        return {stream: output_events(bus, stream) for stream in case.expected}


def _problems(case: Case, streams: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    assert case.expected is not None
    return [f"{stream}: {diff}" for stream, events in case.expected.items()
            if (diff := compare_events(events, streams[stream], case.schemas.get(stream),
                                       case.ordered))]


def _cuts(case: Case) -> list[int]:
    """Two distinct cut points strictly inside the input, the same on every run."""
    size = len([item for item in case.inputs if "stream" in item])
    return sorted(random.Random(case.name).sample(range(1, size), 2))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_stop_and_restart_from_checkpoint_equals_uninterrupted_run(
        name: str, spark: Any, tmp_path: Path) -> None:
    """The three runs are independent streaming queries, run side by side: a micro-batch
    of a few events is mostly waiting, not computing."""
    case = CASES[name]
    assert case.inputs and not any("store_query" in item for item in case.inputs)
    clean_cut, crash_cut = _cuts(case)
    runs = {"whole": (None, False), "clean": (clean_cut, False), "crash": (crash_cut, True)}
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {label: pool.submit(run_with_restart, case, spark, tmp_path / label, cut,
                                      crash)
                   for label, (cut, crash) in runs.items()}
        outputs = {label: future.result() for label, future in futures.items()}
    uninterrupted = outputs.pop("whole")
    assert not _problems(case, uninterrupted), _problems(case, uninterrupted)
    assert any(uninterrupted.values()), "a case without output would show nothing"
    for label, resumed in outputs.items():
        cut, _ = runs[label]
        assert resumed == uninterrupted, f"{label} stop after input {cut}"
