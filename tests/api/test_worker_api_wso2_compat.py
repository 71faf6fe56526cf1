"""The worker API where WSO2's tools depend on its details, over real HTTPS on loopback
against a worker in this process (no Spark: nothing here deploys an app), so a test can
set the node's role with ``Worker.set_role`` as the HA role keeper does.

``/health`` needs no credentials and follows the role; ``/statistics`` says SP 4.4's values
for a single node and for HA members; the store query API lives on its own listener, serves
nothing else and closes while the node is passive; every error is ``{code, type, message}``;
an app that arrived on one line gets the ``--data-binary`` hint.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from polling import free_port

from eddy.api.elements import app_elements
from eddy.api.server import worker_servers
from eddy.config import ConfigError, load_config, parse_config
from eddy.lang import check
from eddy.node.role import NodeRole
from eddy.node.worker import Worker

ADMIN = ("admin", "admin")
HA_ACTIVE = NodeRole(mode="ha", status="active", cluster_id="sp-group", node_id="node-1",
                     holder="node-1", in_sync=True, last_sync_ms=1_764_000_000_000)
HA_PASSIVE = NodeRole(mode="ha", status="passive", cluster_id="sp-group", node_id="node-2",
                      holder="node-1", in_sync=False, last_sync_ms=1_764_000_000_000,
                      reason="the lease is held by node-1")


@dataclass
class Node:
    worker: Worker
    api: httpx.Client
    store: httpx.Client
    anonymous: httpx.Client


def _config(https_port: int, store_port: int) -> str:
    return (f"wso2.carbon:\n  id: compat-node\n"
            f"wso2.transport.http:\n  listenerConfigurations:\n"
            f"    - {{id: msf4j-https, host: 127.0.0.1, port: {https_port}, scheme: https}}\n"
            f"siddhi.stores.query.api:\n  listenerConfigurations:\n"
            f"    - {{id: default, host: 127.0.0.1, port: {store_port}}}\n"
            f"eddy:\n  dataDir: data\n")


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    """A worker's APIs served from this process: HTTPS worker API, HTTP store query API."""
    https_port, store_port = free_port(), free_port()
    text = _config(https_port, store_port)
    (tmp_path / "deployment.yaml").write_text(text)
    worker = Worker(parse_config(text, tmp_path / "deployment.yaml"), start_spark=False)
    servers = worker_servers(worker)
    thread = servers.serve_in_thread()
    trust = ssl.create_default_context(
        cafile=str(tmp_path / "data" / "security" / "eddy-worker.crt"))
    base = f"https://localhost:{https_port}"
    clients = (httpx.Client(base_url=base, auth=ADMIN, verify=trust, timeout=30),
               httpx.Client(base_url=f"http://127.0.0.1:{store_port}", auth=ADMIN, timeout=30),
               httpx.Client(base_url=base, verify=trust, timeout=30))
    try:
        yield Node(worker, *clients)
    finally:
        for client in clients:
            client.close()
        servers.stop()
        thread.join(30)
        assert not thread.is_alive()


def test_health_needs_no_credentials_and_follows_the_role(node: Node) -> None:
    health = node.anonymous.get("/health")
    assert (health.status_code, health.json()) == (200, {"status": "active"})
    assert node.anonymous.get("/health", auth=("admin", "wrong")).status_code == 200
    node.worker.set_role(HA_ACTIVE)
    assert node.anonymous.get("/health").json() == {"status": "active"}
    node.worker.set_role(HA_PASSIVE)
    passive = node.anonymous.get("/health")
    assert passive.status_code == 503
    assert passive.json() == {
        "status": "passive", "message": "this node is passive in HA group sp-group; the "
                                        "active node is node-1 (the lease is held by node-1)"}
    node.worker.set_role(NodeRole(mode="ha", status="starting", cluster_id="sp-group"))
    starting = node.anonymous.get("/health")
    assert (starting.status_code, starting.json()["status"]) == (503, "starting")
    node.worker.set_role(HA_ACTIVE)
    assert node.anonymous.get("/health").status_code == 200


def test_statistics_say_sp_4_4_values_for_single_and_ha_nodes(node: Node) -> None:
    single = node.api.get("/statistics").json()
    assert single["clusterID"] == "Single Node Deployments" and "haStatus" not in single
    assert (single["lastSyncTime"], single["lastSnapshotTime"]) == ("n/a", "n/a")
    assert single["isInSync"] is False and single["runningStatus"] == "Reachable"
    node.worker.last_persisted = 1_764_158_400.0  # 2025-11-26 12:00:00 UTC
    assert node.api.get("/statistics").json()["lastSnapshotTime"] == (
        "Wed, 26 Nov 2025 12:00:00 UTC")
    node.worker.set_role(HA_ACTIVE)
    active = node.api.get("/statistics").json()
    assert (active["haStatus"], active["clusterID"], active["isInSync"]) == (
        "Active", "sp-group", True)
    assert active["lastSnapshotTime"] == "Wed, 26 Nov 2025 12:00:00 UTC"
    assert "lastSyncTime" not in active
    node.worker.set_role(HA_PASSIVE)
    passive = node.api.get("/statistics").json()
    assert (passive["haStatus"], passive["clusterID"], passive["isInSync"]) == (
        "Passive", "sp-group", False)
    assert passive["lastSyncTime"] == "Mon, 24 Nov 2025 16:00:00 UTC"
    assert "lastSnapshotTime" not in passive


def test_the_store_query_api_is_alone_on_its_listener_and_closed_while_passive(
        node: Node) -> None:
    query = {"appName": "Nope", "query": "from T select *"}
    missing = node.store.post("/stores/query", json=query)
    assert (missing.status_code, missing.json()["code"]) == (404, 1)
    for path in ("/siddhi-apps", "/statistics", "/health", "/openapi.json"):
        other = node.store.get(path)
        assert other.status_code == 404, path
        assert other.json() == {"code": 1, "type": "error", "message": "Not Found"}
    # WSO2 SP serves the store query API only on its own listeners
    not_here = node.api.post("/stores/query", json=query)
    assert not_here.status_code == 404
    assert not_here.json() == {"code": 404, "type": "error", "message": "Not Found"}
    refused = httpx.post(str(node.store.base_url.join("/stores/query")), json=query)
    assert refused.status_code == 401 and "www-authenticate" in refused.headers
    node.worker.set_role(HA_PASSIVE)
    closed = node.store.post("/stores/query", json=query)
    assert closed.status_code == 503
    assert closed.json() == {"code": 1, "type": "error", "message": (
        "this node is passive: the store query API is served by the active node only")}
    node.worker.set_role(HA_ACTIVE)
    assert node.store.post("/stores/query", json=query).status_code == 404
    invalid = node.store.post("/stores/query", json={"appName": 7, "query": "q"})
    assert invalid.status_code == 400
    assert invalid.json() == {"code": 1, "type": "error", "message": (
        "invalid request: body appName: Input should be a valid string")}


def test_node_details_say_worker_in_plain_text(node: Node) -> None:
    runtime = node.api.get("/nodeDetails/runTime")
    assert runtime.text == "worker"
    assert runtime.headers["content-type"].startswith("text/plain")
    details = node.api.get("/system-details").json()
    assert details["carbonId"] == "compat-node"
    assert details["javaVersion"] == "n/a"  # no Spark has started in this process's worker
    store_port = int(str(node.store.base_url).rsplit(":", 1)[1].rstrip("/"))
    assert details["storeQueryListeners"] == [
        {"scheme": "http", "host": "127.0.0.1", "port": store_port}]


def test_every_error_is_an_api_response_message(node: Node) -> None:
    unknown = node.api.get("/nope")
    assert (unknown.status_code, unknown.json()) == (
        404, {"code": 404, "type": "error", "message": "Not Found"})
    wrong_method = node.api.patch("/statistics")
    assert wrong_method.status_code == 405
    assert set(wrong_method.json()) == {"code", "type", "message"}
    cases = [
        (node.api.put("/statistics", json={"statsEnable": "perhaps"}),
         "invalid request: body statsEnable: Input should be a valid boolean, unable to "
         "interpret input"),
        (node.api.put("/statistics", content=b"{not json",
                      headers={"Content-Type": "application/json"}),
         "invalid request: the body is not valid JSON"),
        (node.api.get("/siddhi-apps", params={"isActive": "maybe"}),
         "invalid request: query isActive: Input should be a valid boolean, unable to "
         "interpret input"),
        (node.api.put("/siddhi-apps/statistics", json={"enabledStatLevel": "ALL"}),
         "invalid request: body enabledStatLevel: Input should be 'OFF', 'BASIC' or "
         "'DETAIL'")]
    for response, message in cases:
        assert response.status_code == 400, response.text
        assert response.json() == {"code": 800101, "type": "validation error",
                                   "message": message}
    spec = node.api.get("/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            assert "422" not in operation["responses"], (method, path)


def test_an_app_that_arrived_on_one_line_gets_the_data_binary_hint(node: Node) -> None:
    app = ("@App:name('OneLine')\n"
           "define stream InputStream (symbol string, price double, volume long);\n"
           "from InputStream[price > 10.0]\n"
           "select symbol, price, volume\n"
           "insert into OutputStream;\n")
    joined = node.api.post("/siddhi-apps", content=app.replace("\n", ""))  # as curl -d does
    assert joined.status_code == 400
    message = joined.json()["message"]
    assert "'into'" in message
    assert message.endswith("(hint: the app arrived as a single line; if it was written on "
                            "several, the client joined them, as curl -d @file does: send "
                            "it with curl --data-binary @file, which keeps its line breaks)")
    commented = node.api.post("/siddhi-apps", content=b"-- my app @App:name('X') "
                                                      b"define stream S (a int);")
    assert commented.status_code == 400 and "--data-binary" in commented.json()["message"]
    several = node.api.post("/siddhi-apps", content=app.replace("price > 10", "prize > 10"))
    assert several.status_code == 400 and "--data-binary" not in several.json()["message"]


def test_the_store_query_listeners_come_from_their_own_block(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.chdir(tmp_path)
    embedded = load_config(None)
    assert [(x.scheme, x.port) for x in embedded.store_query_listeners()] == [
        ("http", 7070), ("https", 7443)]
    assert [x.port for x in embedded.listeners()] == [9443]
    without = parse_config("eddy:\n  dataDir: data\n", tmp_path / "deployment.yaml")
    assert without.store_query_listeners() == []
    offset = parse_config(_config(9443, 7070).replace("id: compat-node\n",
                                                      "id: compat-node\n  ports: {offset: 2}\n"),
                          tmp_path / "deployment.yaml")
    assert [x.port for x in offset.store_query_listeners()] == [7072]
    assert [x.port for x in offset.listeners()] == [9445]
    exposed = parse_config(_config(9443, 7070).replace(
        "{id: default, host: 127.0.0.1", "{id: default, host: 0.0.0.0"),
        tmp_path / "deployment.yaml")
    with pytest.raises(ConfigError, match="refusing to listen on 0.0.0.0:7070"):
        exposed.check_exposure()


def test_elements_name_the_user_defined_function_a_query_calls() -> None:
    analyzed = check("@App:name('Fn')\n"
                     "define function twice[javascript] return double {\n"
                     "    return data[0] * 2;\n"
                     "};\n"
                     "define stream S (v double);\n"
                     "@info(name='doubled')\n"
                     "from S select twice(v) as w insert into T;\n")
    [entry] = app_elements(analyzed)
    assert entry["function"] == "twice"
    assert entry["functionQuery"] == ("define function twice[javascript] return double {\n"
                                      "    return data[0] * 2;\n}")
    assert (entry["inputStreamId"], entry["outputStreamId"], entry["queryName"]) == (
        "S", "T", "doubled")
