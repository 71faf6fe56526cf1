"""A worker killed with SIGKILL comes back with every app, resumes each from its checkpoint,
and its outputs equal those of an uninterrupted run; periodic revisions are taken meanwhile,
and the metrics reach the ``METRIC_*`` tables of a MariaDB ``WSO2_METRICS_DB``."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy

from worker_process import WorkerProcess, wait_for

WORKER_CONFIG = """state.persistence:
  enabled: true
  intervalInMin: 0.08
  revisionsToKeep: 2
wso2.datasources:
  dataSources:
    - name: WSO2_METRICS_DB
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: jdbc:mysql://127.0.0.1:3306/test
          username: root
"""
WORKER_EDDY_CONFIG = "  metricsIntervalS: 1\n"
MARIADB = "mysql+pymysql://root@127.0.0.1:3306/test"
STARTED_MS = int(time.time() * 1000)
FILTER = """@App:name('Filter')
define stream Trades (symbol string, price double);
from Trades[price > 10.0]
select symbol, price
insert into Expensive;
"""
WINDOW = """@App:name('Window')
define stream Trades (symbol string, price double);
from Trades#window.length(3)
select symbol, sum(price) as total
insert into Totals;
"""


def _trades(start: int, count: int) -> dict[str, list[Any]]:
    return {"symbol": [f"S{i}" for i in range(start, start + count)],
            "price": [float(i % 20) for i in range(start, start + count)]}


def _expected(batches: list[dict[str, list[Any]]]) -> tuple[list[list[Any]], list[list[Any]]]:
    """What an uninterrupted run emits: the filter's passes and the length-3 window's sums."""
    symbols = [s for b in batches for s in b["symbol"]]
    prices = [p for b in batches for p in b["price"]]
    passed = [[s, p] for s, p in zip(symbols, prices, strict=True) if p > 10.0]
    totals = [[s, sum(prices[max(0, i - 2):i + 1])] for i, s in enumerate(symbols)]
    return passed, totals


def _revisions(worker: WorkerProcess, app: str) -> list[str]:
    with worker.client() as client:
        names: list[str] = client.get(f"/siddhi-apps/{app}/revisions").json()
        return names


def test_sigkill_and_restart_resume_every_app_exactly(worker: WorkerProcess) -> None:
    with worker.client() as client:
        for text in (FILTER, WINDOW):
            assert client.post("/siddhi-apps", content=text).status_code == 201
    worker.wait_status("Filter", "active")
    worker.wait_status("Window", "active")
    batches = [_trades(0, 12)]
    worker.append("Filter.Trades", batches[0])
    worker.append("Window.Trades", batches[0])
    passed, totals = _expected(batches)
    assert worker.wait_outputs("Filter.Expensive", len(passed)) == passed
    assert worker.wait_outputs("Window.Totals", len(totals)) == totals

    # Periodic persistence: revisions appear on their own (revisionsToKeep is checked with
    # the API's backups).
    first = wait_for(lambda: _revisions(worker, "Window"), 120, "a periodic revision")
    wait_for(lambda: set(_revisions(worker, "Window")) - set(first), 120,
             "a newer periodic revision")

    worker.append("Window.Trades", _trades(12, 3))  # in flight when the worker dies
    worker.append("Filter.Trades", _trades(12, 3))
    worker.kill()
    batches.append(_trades(12, 3))
    batches.append(_trades(15, 6))  # sent while the worker is down
    worker.append("Filter.Trades", batches[-1])
    worker.append("Window.Trades", batches[-1])

    worker.start()
    for app in ("Filter", "Window"):
        assert worker.wait_status(app, "active")["message"] == "resumed from its checkpoint"
    batches.append(_trades(21, 4))
    worker.append("Filter.Trades", batches[-1])
    worker.append("Window.Trades", batches[-1])
    passed, totals = _expected(batches)
    assert worker.wait_outputs("Filter.Expensive", len(passed)) == passed
    assert worker.wait_outputs("Window.Totals", len(totals)) == totals


def test_metrics_reach_the_mariadb_metric_tables(worker: WorkerProcess) -> None:
    """Runs after the restart: the reporter of the restarted worker writes too."""
    engine = sqlalchemy.create_engine(MARIADB)
    name = "org.wso2.siddhi.SiddhiApps.Window.Siddhi.Queries.{}.throughput"

    def written() -> Any:
        with engine.connect() as connection:
            return connection.execute(sqlalchemy.text(
                "SELECT NAME, COUNT, M1_RATE, RATE_UNIT FROM METRIC_METER WHERE SOURCE = "
                "'test-worker' AND TIMESTAMP >= :t AND NAME LIKE :n AND NAME NOT LIKE "
                "'%.output.throughput' AND COUNT >= 25 ORDER BY ID DESC LIMIT 1"),
                {"t": STARTED_MS, "n": name.format("%")}).fetchone()

    try:  # 25 events reached the Window app's query, over both of the worker's lives
        row = wait_for(written, 60, "a meter row in MariaDB")
        assert row.COUNT == 25 and row.M1_RATE >= 0 and row.RATE_UNIT == "second"
        with engine.connect() as connection:
            gauges = connection.execute(sqlalchemy.text(
                "SELECT COUNT(*) FROM METRIC_GAUGE WHERE SOURCE = 'test-worker' AND "
                "TIMESTAMP >= :t AND NAME = 'jvm.os.cpu.load.process'"),
                {"t": STARTED_MS}).scalar_one()
        assert gauges >= 1
    finally:
        engine.dispose()
