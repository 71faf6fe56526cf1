"""WSO2 SP's status dashboard against a real ``eddy worker``: the requests it makes to add a
worker and to draw an app, replayed over HTTPS, and every field it reads checked.

What the dashboard sends and reads comes from carbon-analytics 2.1.22 (the version SP 4.4
ships): ``WorkerServiceStub`` (the requests, each with ``Content-Type: application/json``
and basic auth), ``MonitoringApiServiceImpl`` and its beans ``ServerDetails``,
``ServerHADetails``, ``WorkerGeneralDetails`` and ``SiddhiAppStatus`` (the fields it parses),
and the React views ``AddWorker``, ``WorkerThumbnail``, ``WorkerGeneralCard`` and
``AppEventFlow`` (the fields they show, several read without a null check).
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from worker_process import WorkerProcess

FLOW = """@App:name('DashboardFlow')
@source(type='http', receiver.url='http://127.0.0.1:0/trades', @map(type='json'))
define stream Trades (symbol string, price double, volume long);
@sink(type='log', prefix='HIGH')
define stream High (symbol string, price double);
define table Last (symbol string, price double);
define aggregation TradeTotals
from Trades
select symbol, sum(price) as total
group by symbol
aggregate every sec ... min;
@info(name='high')
from Trades[price > 10.0]
select symbol, price
insert into High;
@info(name='last')
from Trades
select symbol, price
update or insert into Last on Last.symbol == symbol;
partition with (symbol of Trades)
begin
    @info(name='perSymbol')
    from Trades#window.length(2)
    select symbol, max(price) as price
    insert into #Peaks;
    @info(name='peaks')
    from #Peaks[price > 100.0]
    select symbol, price
    insert into High;
end;
"""
DASHBOARD_HEADERS = {"Content-Type": "application/json"}  # the stub's @Headers
WSO2_TIME = re.compile(r"^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d [A-Z]+$")
ELEMENT_TYPES = {"Stream", "Table", "Window", "Trigger", "Aggregation", "Source", "Sink"}
LEVELS = {"OFF", "BASIC", "DETAIL"}
DEPLOY_S = 300  # a second app on a running Spark; generous for a loaded 2-core machine


def _get(client: httpx.Client, path: str) -> httpx.Response:
    response = client.get(path, headers=DASHBOARD_HEADERS)
    assert response.status_code == 200, (path, response.text)
    return response


def _check_server_details(body: dict[str, Any]) -> None:
    """``ServerDetails`` and what ``WorkerThumbnail`` / ``WorkerGeneralCard`` read."""
    assert body["clusterID"] == "Single Node Deployments"  # not null: a reachable worker
    assert "haStatus" not in body  # a single node is no HA member
    assert body["runningStatus"] == "Reachable"
    assert isinstance(body["isStatsEnabled"], bool)
    metrics = body["workerMetrics"]
    for field in ("processCPU", "systemCPU", "loadAverage", "memoryUsage"):
        assert isinstance(metrics[field], float | int), field
        assert metrics[field] >= 0
    assert body["osName"] in {"windows", "other"}
    assert body["lastSyncTime"] == "n/a"
    assert body["lastSnapshotTime"] == "n/a" or WSO2_TIME.match(body["lastSnapshotTime"])
    assert isinstance(body["message"], str) and isinstance(body["isInSync"], bool)


def _check_general_details(body: dict[str, Any]) -> None:
    """``WorkerGeneralDetails``: the 14 fields the dashboard stores in ``WORKERS_DETAILS``."""
    fields = ["carbonId", "javaRuntimeName", "javaVMVersion", "javaVMVendor", "javaHome",
              "javaVersion", "osName", "osVersion", "userHome", "userTimezone", "userName",
              "userCountry", "repoLocation", "serverStartTime"]
    for field in fields:
        assert isinstance(body[field], str), field
    assert body["carbonId"] == "test-worker"
    # Spark runs, so the java… fields describe its JVM
    assert re.match(r"^\d+(\.\d+)*", body["javaVersion"]), body["javaVersion"]
    assert body["javaHome"].startswith("/") and "Runtime" in body["javaRuntimeName"]
    assert body["osName"] == "Linux" and body["osVersion"] and body["userName"]
    assert WSO2_TIME.match(body["serverStartTime"]), body["serverStartTime"]
    assert body["repoLocation"].endswith("/data/deployment")


def _check_app_statistics(body: list[dict[str, Any]]) -> None:
    """``SiddhiAppStatus``: ``siddhiStatEnabledLevel`` is dereferenced for active apps."""
    flow = next(app for app in body if app["appName"] == "DashboardFlow")
    assert flow["status"] == "active" and isinstance(flow["age"], int)
    for app in body:
        assert app["isStatEnabled"] in LEVELS and app["siddhiStatEnabledLevel"] in LEVELS


def _check_elements(body: list[dict[str, Any]]) -> None:
    """What ``AppEventFlow`` draws, with the fields it reads on every entry."""
    for entry in body:
        for field in ("inputStreamId", "inputStreamSiddhiApp", "inputStreamType",
                      "outputStreamId", "outputStreamSiddhiApp", "outputStreamType"):
            assert isinstance(entry[field], str), (field, entry)
        assert {entry["inputStreamType"], entry["outputStreamType"]} <= ELEMENT_TYPES
        if "partitionType" in entry:
            assert entry["partitionType"] in {"Value Partition", "Range Partition"}
            assert isinstance(entry["partitionQuery"], str)
            assert entry["partitionTypeQuery"] == "symbol of Trades"
            assert entry["query"].startswith("partition with (symbol of Trades)")
        if "source" in entry:
            assert isinstance(entry["sourceSiddhiApp"], str) and entry["sourceStream"]
        if "sink" in entry:
            assert isinstance(entry["sinkSiddhiApp"], str) and entry["sinkStream"]
    edges = {(e["inputStreamId"], e["inputStreamType"], e["outputStreamId"],
              e["outputStreamType"], e.get("queryName")) for e in body}
    assert edges == {
        ("http", "Source", "Trades", "Stream", None),
        ("Trades", "Stream", "High", "Stream", "high"),
        ("Trades", "Stream", "Last", "Table", "last"),
        ("Trades", "Stream", "#Peaks", "Stream", "perSymbol"),
        ("#Peaks", "Stream", "High", "Stream", "peaks"),
        ("Trades", "Stream", "TradeTotals", "Aggregation", None),
        ("High", "Stream", "log", "Sink", None)}
    by_query = {e.get("queryName"): e for e in body}
    assert by_query["high"]["query"].startswith("@info(name='high')\nfrom Trades[price > 10.0]")
    assert by_query["perSymbol"]["partitionQuery"].startswith("@info(name='perSymbol')")
    source = next(e for e in body if e["inputStreamType"] == "Source")
    assert source["inputStreamSiddhiApp"].startswith("@source(type='http'")
    assert source["outputStreamSiddhiApp"].endswith("define stream Trades (symbol string, "
                                                    "price double, volume long)")
    sink = next(e for e in body if e["outputStreamType"] == "Sink")
    assert sink["outputStreamSiddhiApp"] == "@sink(type='log', prefix='HIGH')"
    aggregation = next(e for e in body if e["outputStreamType"] == "Aggregation")
    assert aggregation["outputStreamSiddhiApp"].startswith("define aggregation TradeTotals")


def test_the_dashboard_adds_the_worker_and_draws_an_app(deployed: WorkerProcess) -> None:
    worker = deployed  # Spark runs, so the java… fields describe its JVM
    with worker.client() as client:
        assert client.post("/siddhi-apps", content=FLOW,
                           headers={"Content-Type": "text/plain"}).status_code == 201
    worker.wait_status("DashboardFlow", "active", timeout=DEPLOY_S)
    with worker.client() as client:
        # "Add worker": the node kind first, kept only if it is exactly "worker"
        assert _get(client, "/nodeDetails/runTime").text == "worker"
        # the overview, every polling interval
        _check_server_details(_get(client, "/statistics").json())
        active = _get(client, "/siddhi-apps?isActive=true").json()
        inactive = _get(client, "/siddhi-apps?isActive=false").json()
        assert "DashboardFlow" in active and "DashboardFlow" not in inactive
        # the worker page: general details (stored once) and HA details
        _check_general_details(_get(client, "/system-details").json())
        _check_server_details(_get(client, "/statistics").json())  # as ServerHADetails
        # the app list, then the app's event flow graph
        _check_app_statistics(_get(client, "/siddhi-apps/statistics").json())
        _check_elements(_get(client, "/siddhi-apps/DashboardFlow/elements").json())
        assert client.delete("/siddhi-apps/DashboardFlow").status_code == 200
