"""The deployment folder: dropping, editing and deleting ``.siddhi`` files deploys, redeploys
and undeploys apps within 2 s while events flow; a faulty file never blocks the others.

These run on the API tests' worker (one Spark start less for the suite), beside its apps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from worker_process import WorkerProcess, wait_for

NOTICE_S = 2.0
FILTER = """@App:name('Filter')
define stream Trades (symbol string, price double);
from Trades[price > {threshold}]
select symbol, price
insert into Expensive;
"""


def _noticed(worker: WorkerProcess, app: str, changed: Callable[[dict[str, Any]], bool]) -> None:
    """Waits (at most 2 s) until the worker's view of ``app`` satisfies ``changed``."""
    with worker.client() as client:
        wait_for(lambda: changed(worker.status(app, client)), NOTICE_S,
                 f"the worker to notice {app}", interval=0.05)


def test_drop_edit_and_delete_a_file_while_events_flow(worker: WorkerProcess) -> None:
    path = worker.siddhi_files / "Filter.siddhi"
    path.write_text(FILTER.format(threshold=10.0))
    _noticed(worker, "Filter", lambda s: s["status"] != "absent")
    worker.wait_status("Filter", "active")
    worker.append("Filter.Trades", {"symbol": ["A", "B"], "price": [5.0, 20.0]})
    assert worker.wait_outputs("Filter.Expensive", 1) == [["B", 20.0]]

    path.write_text(FILTER.format(threshold=50.0))
    _noticed(worker, "Filter", lambda s: s["status"] != "active" or "reset" in s.get("message", ""))
    status = worker.wait_status("Filter", "active")
    assert status["message"].startswith("state was reset because the app changed; the previous "
                                        "state is kept as revision ")
    worker.append("Filter.Trades", {"symbol": ["C", "D"], "price": [40.0, 60.0]})
    assert worker.wait_outputs("Filter.Expensive", 2)[1:] == [["D", 60.0]]

    path.unlink()
    _noticed(worker, "Filter", lambda s: s["status"] == "absent")
    with worker.client() as client:
        assert "Filter" not in client.get("/siddhi-apps").json()
    assert "deployment folder: Filter.siddhi deleted" in worker.log.read_text()
    # Logged once the app's query has stopped, which may take longer than noticing.
    wait_for(lambda: "undeployed app Filter" in worker.log.read_text(), 30,
             "the undeployment to finish")


def test_a_faulty_file_is_faulty_with_its_error_and_blocks_nothing(
        worker: WorkerProcess) -> None:
    (worker.siddhi_files / "Broken.siddhi").write_text(
        "@App:name('Broken')\ndefine stream S (a int);\nfrom S[b > 1] select a insert into T;\n")
    (worker.siddhi_files / "Misnamed.siddhi").write_text(
        "@App:name('OtherName')\ndefine stream S (a int);\nfrom S select a insert into T;\n")
    (worker.siddhi_files / "Stock.siddhi").write_text(
        "@App:name('Stock')\ndefine stream Trades (symbol string, price double);\n"
        "define table Last (symbol string, price double);\n"
        "from Trades select symbol, price insert into Last;\n")
    broken = worker.wait_status("Broken", "faulty", timeout=30)
    assert broken["error"]["line"] == 3 and broken["error"]["column"] == 7
    assert broken["message"] == "attribute 'b' does not exist in 'S' (a int)"
    misnamed = worker.wait_status("Misnamed", "faulty", timeout=30)
    assert "named 'OtherName'" in misnamed["message"]
    worker.wait_status("Stock", "active")
    assert "Broken.siddhi:3:7: error: attribute 'b' does not exist" in worker.log.read_text()
    with worker.client() as client:
        assert client.get("/siddhi-apps/Broken").json()["content"].startswith("@App:name")
        active = client.get("/siddhi-apps", params={"isActive": "true"}).json()
        assert "Stock" in active and not {"Broken", "Misnamed"} & set(active)
    with worker.store_client() as store:
        query = store.post("/stores/query", json={"appName": "Stock",
                                                  "query": "from Last select symbol, price"})
        assert query.status_code == 200 and query.json() == {"records": []}
        assert store.post("/stores/query", json={"appName": "Broken",
                                                 "query": "from T select *"}).status_code == 404
    with worker.client() as client:
        # A fixed file takes the app out of faulty.
        (worker.siddhi_files / "Broken.siddhi").write_text(
            "@App:name('Broken')\ndefine stream S (a int);\nfrom S select a insert into T;\n")
        worker.wait_status("Broken", "active")
