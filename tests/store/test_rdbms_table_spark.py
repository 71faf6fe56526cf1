"""``@store(type='rdbms')`` tables on real Spark: through ``eddy.replay``, and stopped or
crashed mid-input and restarted from the checkpoint.

The restart test runs a table case as a :class:`~eddy.engine.group_runner.GroupRunner` on
a SQLite bus, three ways side by side: uninterrupted; stopped after a cut and resumed; and
resumed with a runner that fails right after its first batch's outputs reached the bus —
after that batch's table writes were committed, before Spark recorded the batch — so that
a third runner re-runs the batch. Outputs and the table's final rows must equal the
uninterrupted run's (the batch marker of :mod:`eddy.store.table_batch` at work).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conformance import Case, compare_case, compare_events, load_cases
from sqlalchemy import MetaData, Table, inspect, select

sys.path.insert(0, str(Path(__file__).parent))
from test_rdbms_table import BACKENDS, stored  # noqa: E402

from eddy.bus import Bus, open_bus, sqlite_url  # noqa: E402
from eddy.engine.group_runner import GroupRunner, output_events  # noqa: E402
from eddy import SiddhiAppError, replay  # noqa: E402
from eddy.store.connect import connect, jdbc_to_sqlalchemy  # noqa: E402
from eddy.store.table_batch import MARKER_TABLE  # noqa: E402

CASES = {c.name: c for c in load_cases(["table"])}
WAIT_S = 90.0


@pytest.fixture
def dropped() -> Iterator[list[tuple[str, str]]]:
    """``(jdbc url, table)`` pairs a test creates; dropped afterwards."""
    created: list[tuple[str, str]] = []
    yield created
    for url, name in created:
        engine = connect(jdbc_to_sqlalchemy(url, "root"))
        if name in inspect(engine).get_table_names():
            Table(name, MetaData()).drop(engine)


@pytest.mark.parametrize("backend", ["sqlite"])  # no batch markers left in the servers' DBs
def test_replay_with_rdbms_table(backend: str, spark: Any, tmp_path: Path,
                                 dropped: list[tuple[str, str]]) -> None:
    """A table case with on-demand queries, its table in the database, through Spark."""
    case = CASES["table_primary_key_replace"]
    url = BACKENDS[backend] or f"jdbc:sqlite:{tmp_path}/tables.db"
    names: list[str] = []
    app = stored(case.app, url, names)
    dropped += [(url, n) for n in names]
    result = replay(app, case.inputs, batch_size=3, spark=spark)
    found = compare_case(case, result.streams, result.queries, result.store)
    assert not found, "\n".join(found)
    engine = connect(jdbc_to_sqlalchemy(url, "root"))
    with engine.connect() as connection:
        rows = connection.execute(select(Table(names[0], MetaData(),
                                               autoload_with=engine))).all()
    assert sorted(map(list, rows)) == sorted(case.expected_store[-1]["rows"])


# -- stop and restart ---------------------------------------------------------------------------

OnOutput = Callable[[int, Mapping[str, pa.Table]], None]


def _append(bus: Bus, runner: GroupRunner, inputs: list[dict[str, Any]]) -> None:
    for stream, run in groupby(inputs, key=lambda item: item["stream"]):
        events = list(run)
        names = [a.name for a in runner.analyzed.streams[stream].attributes]
        columns: dict[str, list[Any]] = {"_ts": [e["timestamp"] for e in events]}
        for i, name in enumerate(names):
            columns[name] = [e["data"][i] for e in events]
        bus.append(runner.input_topic(stream), pa.table(columns))


def _run(app: str, spark: Any, bus_url: str, checkpoint: Path, inputs: list[dict[str, Any]],
         on_output: OnOutput | None = None) -> None:
    # The events' timestamps are event time: the wall-clock heartbeat stays out.
    runner = GroupRunner(app, bus_url, checkpoint, spark=spark, on_output=on_output,
                         group=checkpoint.parent.name, max_rows_per_batch=2, heartbeat=False)
    runner.start()
    try:
        with open_bus(bus_url) as bus:
            _append(bus, runner, inputs)
        assert runner.await_idle(WAIT_S)
    finally:
        runner.stop()


def _crash_once() -> OnOutput:
    calls: list[int] = []

    def crash(batch_id: int, tables: Mapping[str, pa.Table]) -> None:
        calls.append(batch_id)
        if len(calls) == 1:
            raise RuntimeError("simulated crash after the outputs were appended")

    return crash


def _run_case(case: Case, spark: Any, work: Path, cut: int | None, crash: bool
              ) -> tuple[dict[str, list[dict[str, Any]]], list[list[Any]], int]:
    """The case's outputs, its table's final rows and how many batch markers were stored."""
    work.mkdir()
    jdbc = f"jdbc:sqlite:{work}/tables.db"
    names: list[str] = []
    app = stored(case.app, jdbc, names)
    bus_url = sqlite_url(work / "bus.db")
    checkpoint = work / "checkpoint"
    inputs = [item for item in case.inputs if "stream" in item]
    if cut is None:
        _run(app, spark, bus_url, checkpoint, inputs)
    else:
        _run(app, spark, bus_url, checkpoint, inputs[:cut])
        rest = inputs[cut:]
        if crash:
            with pytest.raises(RuntimeError, match="simulated crash"):
                _run(app, spark, bus_url, checkpoint, rest, on_output=_crash_once())
            rest = []
        _run(app, spark, bus_url, checkpoint, rest)
    assert case.expected is not None
    with open_bus(bus_url) as bus:
        outputs = {stream: output_events(bus, stream) for stream in case.expected}
    engine = connect(jdbc_to_sqlalchemy(jdbc))
    with engine.connect() as connection:
        rows = connection.execute(select(Table(names[0], MetaData(),
                                               autoload_with=engine))).all()
        markers = connection.execute(select(Table(MARKER_TABLE, MetaData(),
                                                  autoload_with=engine))).all()
    return outputs, sorted(map(list, rows)), len(markers)


@pytest.mark.parametrize("name", ["table_upsert_counter"])
def test_stop_and_restart_keeps_table_and_outputs(name: str, spark: Any,
                                                  tmp_path: Path) -> None:
    """Cuts inside the writes: the crashed batch (two events a batch) holds two upserts, so
    re-applying them would count those hits twice."""
    case = CASES[name]
    runs = {"whole": (None, False), "clean": (3, False), "crash": (1, True)}
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {label: pool.submit(_run_case, case, spark, tmp_path / label, cut, crash)
                   for label, (cut, crash) in runs.items()}
        results = {label: future.result() for label, future in futures.items()}
    outputs, rows, markers = results.pop("whole")
    assert case.expected is not None
    problems = [f"{s}: {d}" for s, events in case.expected.items()
                if (d := compare_events(events, outputs[s], case.schemas.get(s), case.ordered))]
    assert not problems, problems
    assert rows and markers >= 1  # batches that wrote the table left their marker
    for label, (resumed, resumed_rows, _) in results.items():
        assert resumed == outputs, f"{label} stop after input {runs[label][0]}"
        assert resumed_rows == rows, f"{label}: table rows"


def test_replay_refuses_an_unknown_store_type_before_spark_runs(spark: Any) -> None:
    app = ("define stream S (k string);\n"
           "@store(type='cassandra', keyspace='x')\ndefine table T (k string);\n"
           "from S insert into T;\n")
    with pytest.raises(SiddhiAppError) as raised:
        replay(app, [{"stream": "S", "timestamp": 1, "data": ["a"]}], spark=spark)
    assert (raised.value.line, raised.value.column) == (2, 0)
    assert "'cassandra' is not supported" in str(raised.value)
