"""``@store(type='rdbms')`` tables on real Spark: through ``eddy.replay``, and stopped or
crashed mid-input and restarted from the checkpoint.

The restart test runs a table case as a :class:`~eddy.engine.run.group_runner.GroupRunner` on
a SQLite bus, three ways side by side: uninterrupted; stopped after a cut and resumed; and
resumed with a runner that fails right after its first batch's outputs reached the bus —
after that batch's table writes were committed, before Spark recorded the batch — so that
a third runner re-runs the batch. Outputs and the table's final rows must equal the
uninterrupted run's (the batch marker of :mod:`eddy.runtime.stored_batch` at work).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conformance import Case, compare_case, compare_events, load_cases
from group_runs import crash_once, run_inputs
from sqlalchemy import MetaData, Table, inspect, select

sys.path.insert(0, str(Path(__file__).parent))
from test_rdbms_table import BACKENDS, stored  # noqa: E402

from eddy import SiddhiAppError, replay  # noqa: E402
from eddy.bus import open_bus, sqlite_url  # noqa: E402
from eddy.engine.run.group_topics import output_events  # noqa: E402
from eddy.runtime.stored_batch import MARKER_TABLE  # noqa: E402
from eddy.store.connect import connect, jdbc_to_sqlalchemy  # noqa: E402

CASES = {c.name: c for c in load_cases(["table"])}


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
        run_inputs(app, spark, bus_url, checkpoint, inputs, max_rows_per_batch=2)
    else:
        run_inputs(app, spark, bus_url, checkpoint, inputs[:cut], max_rows_per_batch=2)
        rest = inputs[cut:]
        if crash:
            with pytest.raises(RuntimeError, match="simulated crash"):
                run_inputs(app, spark, bus_url, checkpoint, rest, on_output=crash_once(),
                           max_rows_per_batch=2)
            rest = []
        run_inputs(app, spark, bus_url, checkpoint, rest, max_rows_per_batch=2)
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
