"""On-demand queries and metrics of a running app, over real HTTPS against a real worker.

``POST /stores/query`` answers from the app's live state with WSO2's bodies (digest §5.2):
finds, mutations and aggregation reads; a faulty query is a 400 with its line and column.
Once events flow, ``/metrics`` has per-query series, and the worker writes the figures
into the ``METRIC_*`` tables of its ``WSO2_METRICS_DB`` datasource (an SQLite file here).
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import httpx
import pytest
from worker_process import WorkerProcess, wait_for

APP = """@App:name('StoreApp')
define stream Trades (symbol string, price double, ts long);
define table Last (symbol string, price double);
define aggregation Totals from Trades select symbol, sum(price) as total
    group by symbol aggregate by ts every sec ... min;
define aggregation ByPrice from Trades select symbol, price, count() as trades
    group by symbol, price aggregate by ts every sec ... min;
@info(name = 'latest')
from Trades select symbol, price update or insert into Last on Last.symbol == symbol;
@info(name = 'expensive')
from Trades[price > 15.0] select symbol, price insert into Expensive;
"""
TRADES = {"symbol": ["IBM", "WSO2", "IBM", "ORCL"], "price": [10.0, 20.0, 30.0, 5.0],
          "ts": [1_000, 2_000, 3_000, 4_000]}


@pytest.fixture(scope="module")
def store_app(worker: WorkerProcess) -> WorkerProcess:
    """The worker with StoreApp deployed and TRADES processed."""
    with worker.client() as client:
        response = client.post("/siddhi-apps", content=APP)
        assert response.status_code == 201, response.text
    worker.wait_status("StoreApp", "active")
    worker.append("StoreApp.Trades", TRADES)
    assert worker.wait_outputs("StoreApp.Expensive", 2) == [["WSO2", 20.0], ["IBM", 30.0]]
    return worker


def _query(worker: WorkerProcess, query: str, **extra: Any) -> httpx.Response:
    with worker.store_client() as client:
        return client.post("/stores/query", json={"appName": "StoreApp", "query": query,
                                                  **extra})


def test_finds_and_aggregation_reads_answer_from_the_live_state(
        store_app: WorkerProcess) -> None:
    found = _query(store_app, "from Last select symbol, price order by symbol", details=True)
    assert found.status_code == 200, found.text
    assert found.json() == {"records": [["IBM", 30.0], ["ORCL", 5.0], ["WSO2", 20.0]],
                            "details": [{"name": "symbol", "dataType": "STRING"},
                                        {"name": "price", "dataType": "DOUBLE"}]}
    totals = _query(store_app, "from Totals within 0L, 100000L per 'seconds' "
                               "select symbol, total order by AGG_TIMESTAMP")
    assert totals.json() == {"records": [["IBM", 10.0], ["WSO2", 20.0], ["IBM", 30.0],
                                         ["ORCL", 5.0]]}
    assert _query(store_app, "from Last on price > 100.0 select symbol").json() == {
        "records": []}


def test_an_aggregation_grouped_by_two_attributes_answers(store_app: WorkerProcess) -> None:
    """Issue 18 saw no rows at all from an aggregation with two ``group by`` attributes:
    through the worker's plan (the live runtime, store queries allowed) every retrieval
    granularity has one row per (bucket, symbol, price)."""
    seconds = _query(store_app, "from ByPrice within 0L, 100000L per 'seconds' "
                                "select AGG_TIMESTAMP, symbol, price, trades "
                                "order by AGG_TIMESTAMP")
    assert seconds.status_code == 200, seconds.text
    assert seconds.json() == {"records": [[1_000, "IBM", 10.0, 1], [2_000, "WSO2", 20.0, 1],
                                          [3_000, "IBM", 30.0, 1], [4_000, "ORCL", 5.0, 1]]}
    minutes = _query(store_app, "from ByPrice on symbol == 'IBM' within 0L, 100000L "
                                "per 'minutes' select symbol, price, trades order by price")
    assert minutes.json() == {"records": [["IBM", 10.0, 1], ["IBM", 30.0, 1]]}


def test_mutations_change_the_live_state(store_app: WorkerProcess) -> None:
    inserted = _query(store_app, "select 'MSFT' as symbol, 1.0 as price insert into Last")
    assert inserted.status_code == 200 and inserted.json() == {"records": []}
    assert _query(store_app, "delete Last on Last.symbol == 'ORCL'").json() == {"records": []}
    assert _query(store_app, "update Last set Last.price = 99.0 on Last.symbol == 'IBM'"
                  ).status_code == 200
    assert _query(store_app, "from Last select symbol, price order by symbol").json() == {
        "records": [["IBM", 99.0], ["MSFT", 1.0], ["WSO2", 20.0]]}
    # The app's own queries go on from that state.
    store_app.append("StoreApp.Trades", {"symbol": ["MSFT"], "price": [2.0], "ts": [5_000]})
    wait_for(lambda: _query(store_app, "from Last on symbol == 'MSFT' select price").json()
             == {"records": [[2.0]]}, 60, "the app to update MSFT")


def test_a_faulty_query_is_400_with_line_and_column(store_app: WorkerProcess) -> None:
    unknown = _query(store_app, "from Last\nselect symbl")
    assert unknown.status_code == 400
    body = unknown.json()
    assert (body["code"], body["type"], body["line"], body["column"]) == (1, "error", 2, 7)
    assert body["message"].startswith("Cannot query: ") and "symbl" in body["message"]
    syntax = _query(store_app, "from Last selec symbol")
    assert syntax.status_code == 400 and syntax.json()["line"] == 1
    failing = _query(store_app, "from Totals within 'junk' per 'seconds' select total")
    assert failing.status_code == 400  # found only when it runs; the app is unharmed
    assert "within" in failing.json()["message"]
    assert store_app.status("StoreApp")["status"] == "active"
    assert _query(store_app, "from Last on symbol == 'WSO2' select price").json() == {
        "records": [[20.0]]}


def _series(text: str, name: str, **labels: str) -> float | None:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    match = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def test_metrics_have_per_query_series(store_app: WorkerProcess) -> None:
    def scrape() -> str:
        with store_app.client() as client:
            return client.get("/metrics").text

    sent = float(len(TRADES["symbol"]) + 1)  # and the one of the mutations' test

    def counted() -> str | None:
        text = scrape()
        seen = _series(text, "eddy_query_events_in_total", app="StoreApp", query="expensive")
        return text if seen == sent else None

    text = wait_for(counted, 30, "per-query counts")
    assert _series(text, "eddy_query_events_out_total", app="StoreApp",
                   query="expensive") == 2.0
    assert _series(text, "eddy_query_events_out_total", app="StoreApp",
                   query="latest") == sent
    assert _series(text, "eddy_query_events_in_per_second", app="StoreApp",
                   query="latest") is not None
    assert _series(text, "eddy_query_events_out_per_second", app="StoreApp",
                   query="expensive") is not None
    assert (_series(text, "eddy_app_batch_latency_p99_ms", app="StoreApp") or 0) > 0
    assert (_series(text, "eddy_app_batch_latency_p50_ms", app="StoreApp") or 0) > 0
    assert _series(text, "eddy_app_state_rows", app="StoreApp") is not None
    assert _series(text, "eddy_app_errors_total", app="StoreApp") is not None
    assert (_series(text, "eddy_node_process_cpu_ratio") or 0) >= 0


def test_metrics_are_written_to_the_metric_tables(store_app: WorkerProcess) -> None:
    database = store_app.home / "metrics.db"
    prefix = "org.wso2.siddhi.SiddhiApps.StoreApp.Siddhi.Queries.expensive"

    def meter() -> tuple[Any, ...] | None:
        if not database.exists():
            return None
        with sqlite3.connect(database) as connection:
            row = connection.execute(
                "SELECT SOURCE, COUNT, RATE_UNIT, TIMESTAMP FROM METRIC_METER WHERE NAME = ? "
                "ORDER BY ID DESC LIMIT 1", (f"{prefix}.output.throughput",)).fetchone()
        return tuple(row) if row is not None and row[1] >= 2 else None

    source, count, unit, timestamp = wait_for(meter, 30, "a meter row of query 'expensive'")
    assert (source, count, unit) == ("test-worker", 2, "second")
    assert timestamp > 1_600_000_000_000  # epoch milliseconds
    with sqlite3.connect(database) as connection:
        timer = connection.execute(
            "SELECT COUNT, P50, P99, DURATION_UNIT FROM METRIC_TIMER WHERE NAME = ? "
            "ORDER BY ID DESC LIMIT 1", (f"{prefix}.latency",)).fetchone()
        gauges = {name for (name,) in connection.execute("SELECT DISTINCT NAME FROM METRIC_GAUGE")}
    assert timer is not None and timer[0] >= 1 and 0 < timer[1] <= timer[2]
    assert timer[3] == "milliseconds"
    assert {"jvm.os.cpu.load.process", "jvm.memory.total.used"} <= gauges
