"""The worker API of WSO2 SP over real HTTPS, against one real ``eddy worker`` process.

The seed's curl command deploys TestSiddhiApp, the app runs on Spark, and every endpoint
answers with WSO2's codes and bodies: 401 without or with wrong credentials, 400 with the
fault's line and column for a faulty app, 409 for a duplicate, 404 for an unknown app.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from worker_process import WorkerProcess

SeedCurl = Callable[[Path], tuple[int, str]]
FAULTY = ("@App:name('Faulty')\n"
          "define stream S (a int);\n"
          "from S[b > 1] select a insert into T;\n")


def test_the_seed_curl_command_deploys_an_app_that_runs(
        deployed: WorkerProcess, seed_curl: SeedCurl, app_text: str, tmp_path: Path) -> None:
    worker = deployed
    assert worker.status("TestSiddhiApp")["status"] == "active"
    worker.append("TestSiddhiApp.InputStream", {"symbol": ["IBM", "WSO2", "ORCL"],
                                                "price": [75.5, 9.5, 12.0],
                                                "volume": [100, 200, 300]})
    assert worker.wait_outputs("TestSiddhiApp.OutputStream", 2) == [
        ["IBM", 75.5, 100], ["ORCL", 12.0, 300]]
    code, body = seed_curl(tmp_path)  # the same command again: the name is taken
    assert code == 409 and httpx.Response(code, content=body).json()["type"] == "conflict"
    with worker.client() as client:
        assert client.get("/siddhi-apps").json() == ["TestSiddhiApp"]
        assert client.get("/siddhi-apps", params={"isActive": "false"}).json() == []
        assert client.get("/siddhi-apps/TestSiddhiApp").json() == {
            "content": app_text.replace("\n", "")}  # curl -d @file drops the newlines
    assert (worker.siddhi_files / "TestSiddhiApp.siddhi").is_file()


def _operations(worker: WorkerProcess) -> list[tuple[str, str]]:
    """Every operation that documents basic auth; all but ``GET /health`` do."""
    with worker.client() as client:
        spec = client.get("/openapi.json").json()
    operations = [(method.upper(), path.replace("{app}", "TestSiddhiApp"), "security" in op)
                  for path, item in spec["paths"].items() for method, op in item.items()]
    assert [(m, p) for m, p, secured in operations if not secured] == [("GET", "/health")]
    return [(m, p) for m, p, secured in operations if secured] + [
        ("GET", "/openapi.json"), ("GET", "/docs")]


def test_every_endpoint_refuses_missing_or_wrong_credentials(worker: WorkerProcess) -> None:
    operations = _operations(worker)
    assert len(operations) >= 22
    for auth in (None, ("admin", "wrong"), ("nobody", "admin")):
        with worker.client(auth=auth) as client, worker.store_client(auth=auth) as store:
            for base, method, path in [(client, m, p) for m, p in operations] + [
                    (store, "POST", "/stores/query")]:
                response = base.request(method, path, content=b"")
                assert response.status_code == 401, (method, path, auth, response.text)
                assert response.headers["content-type"].startswith("text/plain")
                assert response.headers["www-authenticate"] == 'Basic realm="eddy"'


def test_a_faulty_app_is_400_with_line_and_column(worker: WorkerProcess) -> None:
    with worker.client() as client:
        for method in ("POST", "PUT"):
            response = client.request(method, "/siddhi-apps", content=FAULTY,
                                      headers={"Content-Type": "text/plain"})
            assert response.status_code == 400
            body = response.json()
            assert body["code"] == 800101 and body["type"] == "validation error"
            assert (body["line"], body["column"]) == (3, 7)
            assert body["message"] == "attribute 'b' does not exist in 'S' (a int)"
        unnamed = client.post("/siddhi-apps", content="define stream S (a int);")
        assert unnamed.status_code == 400
        assert "@App:name" in unnamed.json()["message"]
        syntax = client.post("/siddhi-apps", content="@App:name('X')\ndefine stream S (a in);")
        assert syntax.status_code == 400
        assert syntax.json()["line"] == 2 and syntax.json()["kind"] == "syntax"
        binary = client.post("/siddhi-apps", content=b"\xff\xfe")
        assert binary.status_code == 400
        # Valid SiddhiQL that no eddy operator runs yet: refused at deploy, not in Spark.
        nested = client.post("/siddhi-apps", content="@App:name('Nested')\n"
                             "define stream S (a int);\n"
                             "from (from S select a return) select a insert into O;\n")
        assert nested.status_code == 400
        assert (nested.json()["line"], nested.json()["column"]) == (3, 5)
        assert "cannot run in eddy" in nested.json()["message"]
    assert not (worker.siddhi_files / "Faulty.siddhi").exists()
    assert not (worker.siddhi_files / "Nested.siddhi").exists()


def test_a_duplicate_is_409_and_put_replaces(worker: WorkerProcess) -> None:
    app = "@App:name('Dup')\ndefine stream S (a int);\nfrom S select a insert into T;\n"
    with worker.client() as client:
        first = client.post("/siddhi-apps", content=app)
        assert first.status_code == 201 and first.headers["location"] == "siddhi-apps/Dup"
        assert client.post("/siddhi-apps", content=app).status_code == 409
        assert client.post("/siddhi-apps", content=app).json() == {
            "type": "conflict", "message": "There is a Siddhi App already exists with same name"}
        assert client.put("/siddhi-apps", content=app.replace("a int", "a long")).status_code \
            == 200
        assert client.get("/siddhi-apps/Dup").json()["content"].count("a long") == 1
        created = client.put("/siddhi-apps", content=app.replace("'Dup'", "'Dup2'"))
        assert created.status_code == 201
        assert client.delete("/siddhi-apps/Dup").status_code == 200
        assert client.delete("/siddhi-apps/Dup2").status_code == 200
        assert client.get("/siddhi-apps/Dup").status_code == 404
    assert not (worker.siddhi_files / "Dup.siddhi").exists()


def test_an_unknown_app_is_404_everywhere(worker: WorkerProcess) -> None:
    calls = [("GET", "/siddhi-apps/Nope"), ("DELETE", "/siddhi-apps/Nope"),
             ("GET", "/siddhi-apps/Nope/status"), ("GET", "/siddhi-apps/Nope/elements"),
             ("POST", "/siddhi-apps/Nope/backup"), ("POST", "/siddhi-apps/Nope/restore"),
             ("GET", "/siddhi-apps/Nope/revisions"), ("DELETE", "/siddhi-apps/Nope/revisions")]
    with worker.client() as client:
        for method, path in calls:
            response = client.request(method, path)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json() == {
                "type": "not-found",
                "message": "There is no Siddhi App exist with provided name : Nope"}
        stats = client.put("/siddhi-apps/Nope/statistics", json={"statsEnable": True})
        assert stats.status_code == 404


def test_a_body_over_the_limit_is_413(worker: WorkerProcess) -> None:
    with worker.client() as client:
        response = client.post("/siddhi-apps", content="x" * 70_000)
        assert response.status_code == 413
        assert "eddy.maxRequestBytes" in response.json()["message"]

        def chunks() -> Iterator[bytes]:
            for _ in range(20):
                yield b"y" * 8192

        assert client.post("/siddhi-apps", content=chunks()).status_code == 413


def test_backup_restore_and_revisions(deployed: WorkerProcess) -> None:
    worker = deployed
    with worker.client() as client:
        created = [client.post("/siddhi-apps/TestSiddhiApp/backup") for _ in range(3)]
        assert [r.status_code for r in created] == [201, 201, 201]
        revisions = [r.json()["revision"] for r in created]
        assert all(re.fullmatch(r"\d{13}__TestSiddhiApp", r) for r in revisions)
        assert revisions == sorted(revisions, key=lambda r: int(r.split("__")[0]))
        # revisionsToKeep: 2
        assert client.get("/siddhi-apps/TestSiddhiApp/revisions").json() == revisions[1:]
        kept = worker.data / "siddhi-app-persistence" / "TestSiddhiApp"
        assert sorted(p.name for p in kept.iterdir() if "__" in p.name) == revisions[1:]
        restored = client.post("/siddhi-apps/TestSiddhiApp/restore",
                               params={"revision": revisions[1]})
        assert restored.status_code == 200
        assert restored.json() == {"type": "success",
                                   "message": f"State restored to revision {revisions[1]}"}
        latest = client.post("/siddhi-apps/TestSiddhiApp/restore")
        assert latest.json()["message"].endswith(revisions[2])
        gone = client.post("/siddhi-apps/TestSiddhiApp/restore", params={"revision": revisions[0]})
        assert gone.status_code == 404
        assert worker.status("TestSiddhiApp")["status"] == "active"
        cleared = client.delete("/siddhi-apps/TestSiddhiApp/revisions",
                                params={"enabledRedeployment": "false"})
        assert cleared.status_code == 200
        assert client.get("/siddhi-apps/TestSiddhiApp/revisions").json() == []


def test_restore_rewinds_state_and_input_to_the_revision(deployed: WorkerProcess) -> None:
    """Revisions are consistent cuts of state and bus offsets: after a restore the app
    processes again what came after the revision, and emits those outputs again."""
    worker = deployed
    before = worker.wait_outputs("TestSiddhiApp.OutputStream", 2)
    with worker.client() as client:
        revision = client.post("/siddhi-apps/TestSiddhiApp/backup").json()["revision"]
        worker.append("TestSiddhiApp.InputStream", {"symbol": ["A", "B"], "price": [50.0, 60.0],
                                                    "volume": [1, 2]})
        after = worker.wait_outputs("TestSiddhiApp.OutputStream", len(before) + 2)
        assert after[len(before):] == [["A", 50.0, 1], ["B", 60.0, 2]]
        restored = client.post("/siddhi-apps/TestSiddhiApp/restore",
                               params={"revision": revision})
        assert restored.status_code == 200, restored.text
    worker.wait_status("TestSiddhiApp", "active")
    again = worker.wait_outputs("TestSiddhiApp.OutputStream", len(after) + 2)
    assert again[len(after):] == [["A", 50.0, 1], ["B", 60.0, 2]]
    worker.append("TestSiddhiApp.InputStream", {"symbol": ["C"], "price": [70.0],
                                                "volume": [3]})
    assert worker.wait_outputs("TestSiddhiApp.OutputStream", len(again) + 1)[-1] == [
        "C", 70.0, 3]


def test_app_elements_and_statistics(deployed: WorkerProcess) -> None:
    with deployed.client() as client:
        [element] = client.get("/siddhi-apps/TestSiddhiApp/elements").json()
        assert element["inputStreamId"] == "InputStream"
        assert element["inputStreamType"] == "Stream"
        assert element["inputStreamSiddhiApp"].startswith("define stream InputStream (")
        assert (element["outputStreamId"], element["queryName"]) == ("OutputStream", "query1")
        assert element["query"].startswith("@info(name = 'query1')from InputStream[price > 10.0]")
        assert client.put("/siddhi-apps/TestSiddhiApp/statistics",
                          json={"enabledStatLevel": "DETAIL"}).status_code == 200
        [stats] = client.get("/siddhi-apps/statistics").json()
        assert stats["appName"] == "TestSiddhiApp" and stats["status"] == "active"
        assert stats["isStatEnabled"] == "DETAIL" and stats["age"] >= 0
        node = client.get("/statistics").json()
        assert set(node["workerMetrics"]) == {"processCPU", "systemCPU", "loadAverage",
                                              "memoryUsage"}
        assert node["uptime"] > 0 and node["memory"]["rss"] > 0
        spark = node["spark"]  # the app runs, so Spark does, with its query
        assert spark["running"] is True and spark["version"].count(".") == 2
        assert spark["master"].startswith("local[") and spark["activeQueries"] >= 1
        assert client.put("/statistics", json={"statsEnable": True}).status_code == 200
        assert client.get("/statistics").json()["isStatsEnabled"] is True
        metrics = client.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        text = metrics.text
        assert 'eddy_app_status{app="TestSiddhiApp",status="active"} 1.0' in text
        assert "eddy_node_uptime_seconds" in text and "eddy_node_memory_rss_bytes" in text
        assert "# TYPE eddy_app_events_out_total counter" in text
        assert 'eddy_app_events_out_total{app="TestSiddhiApp"}' in text
        assert 'eddy_app_failures_total{app="TestSiddhiApp"} 0.0' in text
        assert client.get("/system-details").json()["carbonId"] == "test-worker"


def test_store_queries(deployed: WorkerProcess) -> None:
    with deployed.store_client() as client:
        def query(body: dict[str, Any]) -> httpx.Response:
            return client.post("/stores/query", json=body)

        assert query({"appName": "", "query": "from T select *"}).status_code == 400
        missing = query({"appName": "Nope", "query": "from T select *"})
        assert missing.status_code == 404 and missing.json()["code"] == 1
        faulty = query({"appName": "TestSiddhiApp", "query": "from OutputStream select *"})
        assert faulty.status_code == 400
        assert faulty.json()["message"].startswith("Cannot query: ")
        assert faulty.json()["line"] == 1


def test_openapi_docs_and_the_plain_http_listener(worker: WorkerProcess) -> None:
    with worker.client() as client:
        spec = client.get("/openapi.json").json()
        assert spec["components"]["securitySchemes"]["HTTPBasic"]["scheme"] == "basic"
        assert "/siddhi-apps/{app}/backup" in spec["paths"]
        assert "swagger" in client.get("/docs").text.lower()
    plain = httpx.get(f"http://127.0.0.1:{worker.http_port}/siddhi-apps", auth=("admin", "admin"))
    assert plain.status_code == 200
