"""On-demand queries against a running group's live state, through its store-query topic:
finds, mutations and aggregation reads answer at their place in the input; a query that
fails while running fails alone; after a restart a query's side effects are not applied
twice; a restored checkpoint gets a new query identity."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from eddy.bus import Bus, open_bus
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.store_requests import StoreQueryFailed
from eddy.lang import SiddhiAppError

APP = """@App:name('Stock')
define stream Trades (symbol string, price double, ts long);
define table Last (symbol string, price double);
define aggregation Totals from Trades select symbol, sum(price) as total
    group by symbol aggregate by ts every sec ... min;
from Trades select symbol, price update or insert into Last on Last.symbol == symbol;
"""


@pytest.fixture()
def bus_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'bus.db'}"


def _send(bus: Bus, symbols: list[str], prices: list[float]) -> None:
    bus.append("Trades", pa.table({"symbol": symbols, "price": prices,
                                   "ts": [1_000 * (i + 1) for i in range(len(symbols))]}))


def test_store_queries_answer_from_the_live_state(spark: Any, bus_url: str,
                                                  tmp_path: Path) -> None:
    runner = GroupRunner(APP, bus_url, tmp_path / "checkpoint", spark=spark)
    runner.start()
    try:
        with open_bus(bus_url) as bus:
            _send(bus, ["IBM", "WSO2", "IBM"], [10.0, 20.0, 30.0])
            assert runner.await_idle(120)
            assert sorted(runner.store_query("from Last select symbol, price")) == [
                ["IBM", 30.0], ["WSO2", 20.0]]
            assert runner.store_query("from Last on price > 100.0 select symbol") == []
            assert runner.store_query("delete Last on Last.symbol == 'IBM'") == []
            assert runner.store_query("from Last select symbol") == [["WSO2"]]
            totals = runner.store_query("from Totals within 0L, 100000L per 'seconds' "
                                        "select symbol, total order by AGG_TIMESTAMP")
            assert totals == [["IBM", 10.0], ["WSO2", 20.0], ["IBM", 30.0]]
            with pytest.raises(SiddhiAppError) as faulty:
                runner.store_query("from Nope select x")
            assert (faulty.value.line, faulty.value.column) == (1, 5)
            with pytest.raises(StoreQueryFailed, match="within"):
                runner.store_query("from Totals within 'junk' per 'seconds' select total")
            _send(bus, ["ORCL"], [5.0])  # the app goes on after a failed query
            assert runner.await_idle(120)
            assert sorted(runner.store_query("from Last select symbol")) == [["ORCL"], ["WSO2"]]
        status = runner.status()
        assert status.query_events and sum(status.query_events.values()) >= 4
    finally:
        runner.stop()


def test_a_mutation_is_applied_once_across_a_restart(spark: Any, bus_url: str,
                                                     tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    runner = GroupRunner(APP, bus_url, checkpoint, spark=spark)
    runner.start()
    try:
        with open_bus(bus_url) as bus:
            _send(bus, ["IBM"], [10.0])
            assert runner.await_idle(120)
            runner.store_query("select 'X' as symbol, 1.0 as price insert into Last")
        _await_commit(checkpoint / "spark")
    finally:
        runner.stop()
    # Forget the last batch's commit: Spark replays it (the insert runs on the state
    # before it) when the runner starts again.
    commits = checkpoint / "spark" / "commits"
    last = max((p for p in commits.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    last.unlink()
    (commits / f".{last.name}.crc").unlink(missing_ok=True)
    runner = GroupRunner(APP, bus_url, checkpoint, spark=spark)
    runner.start()
    try:
        assert sorted(runner.store_query("from Last select symbol")) == [["IBM"], ["X"]]
    finally:
        runner.stop()


def _await_commit(spark_checkpoint: Path, timeout: float = 60) -> None:
    """Waits until the latest planned micro-batch is committed."""
    def last(folder: str) -> int:
        names = [p.name for p in (spark_checkpoint / folder).iterdir() if p.name.isdigit()]
        return max(map(int, names), default=-1)

    deadline = time.monotonic() + timeout
    while last("commits") < last("offsets"):
        assert time.monotonic() < deadline, "the last micro-batch was never committed"
        time.sleep(0.05)


def test_a_restored_checkpoint_gets_a_new_query_id(tmp_path: Path) -> None:
    metadata = tmp_path / "spark" / "metadata"
    metadata.parent.mkdir()
    metadata.write_text(json.dumps({"id": "old"}))
    GroupRunner.prepare_restore(tmp_path)
    assert json.loads(metadata.read_text())["id"] not in ("old", "")
    GroupRunner.prepare_restore(tmp_path / "none")  # nothing to adjust: no error
