"""The dashboard's own parsing and bookkeeping, without a browser: the ``/ha`` contract and
the failover timeline, rates from counters, the query graph, node addresses and their
table, settings from deployment.yaml, CSV events and the METRIC_* history.

The HA view's end-to-end test (a real HA pair whose active is killed) waits for the
workers' ``GET /ha``; these tests pin the parsing of that contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eddy.config import parse_config
from eddy.dashboard.app_text import HttpInput, facts, validate
from eddy.dashboard.graph import graph_of, graph_svg
from eddy.dashboard.ha import HaFormatError, parse_ha, timeline
from eddy.dashboard.history import MetricHistory, counter_name
from eddy.dashboard.html import Markup, esc, tag
from eddy.dashboard.nodes import NodeError, open_node_store, parse_address
from eddy.dashboard.series import SeriesKey, SeriesStore, parse_metrics, record_samples
from eddy.dashboard.settings import dashboard_settings
from eddy.dashboard.simulator import SimulationError, csv_events
from eddy.store import connect
from eddy.store.metrics_tables import MetricTables, Report


def ha_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "mode": "ha", "status": "active", "clusterId": "g1", "nodeId": "a", "epoch": 2,
        "holder": "a", "lastRenewalMs": 1_000, "inSync": True, "lastSyncMs": 900,
        "lagEvents": 0, "reason": "",
        "history": [{"atMs": 10, "status": "active", "epoch": 1, "holder": "a",
                     "reason": "start"},
                    {"atMs": 20, "status": "passive", "epoch": 2, "holder": "b",
                     "reason": "lost the lease"},
                    {"atMs": 30, "status": "active", "epoch": 3, "holder": "a",
                     "reason": "b stopped renewing", "lossMs": 25, "recoveredMs": 1525,
                     "firstOutputMs": 2025}]}
    body.update(changes)
    return body


def test_ha_body_is_parsed_by_the_contract() -> None:
    state = parse_ha(ha_body())
    assert (state.mode, state.status, state.cluster_id, state.node_id, state.epoch,
            state.holder, state.last_renewal_ms, state.in_sync, state.lag_events) == (
        "ha", "active", "g1", "a", 2, "a", 1_000, True, 0)
    assert [e.epoch for e in state.history] == [1, 2, 3]
    single = parse_ha(ha_body(clusterId=None, holder=None, lastRenewalMs=None, inSync=None,
                              lastSyncMs=None, lagEvents=None, history=None))
    assert single.holder is None and single.history == ()


@pytest.mark.parametrize(("change", "message"), [
    ({"epoch": None}, "'epoch' is missing"),
    ({"epoch": "2"}, "'epoch' should be int"),
    ({"inSync": "yes"}, "'inSync' should be bool"),
    ({"lagEvents": True}, "'lagEvents' should be a number"),
    ({"history": {}}, "'history' should be a list"),
    ({"plannedApps": "Alerts"}, "'plannedApps' should be list"),
    ({"plannedApps": ["Alerts", 3]}, "'plannedApps' should be a list of names"),
    ({"history": [{"atMs": 1, "status": "active", "epoch": "1"}]},
     "history[0]: 'epoch' should be int"),
])
def test_a_body_breaking_the_contract_names_the_field(change: dict[str, Any],
                                                      message: str) -> None:
    with pytest.raises(HaFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_ha(ha_body(**change))


def test_timeline_merges_the_group_and_marks_failovers() -> None:
    a = parse_ha(ha_body())
    b = parse_ha(ha_body(nodeId="b", status="passive", history=[
        {"atMs": 20, "status": "active", "epoch": 2, "holder": "b", "reason": "took over"}]))
    entries = timeline([a, b])
    assert [(e.at_ms, e.node_id, e.status, e.failover) for e in entries] == [
        (10, "a", "active", False), (20, "a", "passive", True), (20, "b", "active", False),
        (30, "a", "active", True)]


def test_counters_become_rates_and_a_reset_starts_over() -> None:
    store = SeriesStore()
    key = SeriesKey("n", "A", "", "events_in_total")
    for at, total in ((1_000, 10.0), (3_000, 30.0), (4_000, 5.0), (5_000, 15.0)):
        store.counter(key, at, total)
    assert store.get(SeriesKey("n", "A", "", "events_in_total_rate")) == [
        (3_000, 10.0), (4_000, 0.0), (5_000, 10.0)]
    assert store.total(key) == 15.0


def test_old_points_fall_out_of_the_hour() -> None:
    store = SeriesStore(keep_ms=10_000)
    key = SeriesKey("n", "", "", "load_average")
    for at in (0, 5_000, 12_000):
        store.gauge(key, at, 1.0)
    assert [t for t, _ in store.get(key)] == [5_000, 12_000]


def test_metrics_page_is_sorted_into_node_app_and_query_series() -> None:
    page = """# TYPE eddy_node_load_average gauge
eddy_node_load_average 0.5
# TYPE eddy_app_status gauge
eddy_app_status{app="A",status="active"} 1.0
# TYPE eddy_app_events_in counter
eddy_app_events_in_total{app="A"} 100.0
# TYPE eddy_query_events_out counter
eddy_query_events_out_total{app="A",query="q1"} 40.0
# TYPE eddy_app_batch_latency_p99_ms gauge
eddy_app_batch_latency_p99_ms{app="A"} 12.0
"""
    store = SeriesStore()
    record_samples(store, "n", 1_000, parse_metrics(page))
    record_samples(store, "n", 2_000, parse_metrics(page.replace("100.0", "150.0")))
    assert store.latest(SeriesKey("n", "", "", "load_average")) == 0.5
    assert store.latest(SeriesKey("n", "A", "", "events_in_total_rate")) == 50.0
    assert store.latest(SeriesKey("n", "A", "", "batch_latency_p99_ms")) == 12.0
    assert store.queries("n", "A") == ["q1"]
    assert store.latest(SeriesKey("n", "A", "q1", "events_out_total_rate")) == 0.0


ELEMENTS = [
    {"inputStreamId": "In", "inputStreamType": "Stream", "outputStreamId": "T",
     "outputStreamType": "Table", "queryName": "q1", "query": "from In select * insert…"},
    {"inputStreamId": "In", "inputStreamType": "Stream", "outputStreamId": "Out",
     "outputStreamType": "Stream", "queryName": "q2", "query": "from In[x>1] …"},
    {"source": "http", "sourceStream": "In", "sourceSiddhiApp": "@source(type='http')"},
]


def test_query_graph_links_sources_streams_queries_and_targets() -> None:
    nodes, edges = graph_of(ELEMENTS)
    assert {n.id for n in nodes} == {"e:In", "e:T", "e:Out", "q:q1", "q:q2",
                                     "source:http:In"}
    assert set(edges) == {("e:In", "q:q1"), ("q:q1", "e:T"), ("e:In", "q:q2"),
                          ("q:q2", "e:Out"), ("source:http:In", "e:In")}
    svg = graph_svg(ELEMENTS, {"q2": "filter[x > 1] → select *"})
    assert svg.startswith("<svg") and "filter[x &gt; 1]" in svg and svg.count("<g ") == 6


def test_query_graph_draws_the_query_that_feeds_an_aggregation() -> None:
    """An aggregation's ``/elements`` entry has no ``queryName``: its feeding query is drawn
    as a box named after the aggregation, between its input stream and the aggregation
    (issue 20: it was a box labelled "None")."""
    from eddy.api.elements import app_elements
    from eddy.lang import check

    app = ("define stream S (sym string, price double);\n"
           "define aggregation Agg from S select sym, sum(price) as total group by sym "
           "aggregate every sec ... min;\n"
           "@info(name='q') from S[price > 1] select sym insert into Out;\n")
    nodes, edges = graph_of(app_elements(check(app)))
    labels = {n.id: n.label for n in nodes}
    assert "None" not in labels.values()
    assert labels["a:Agg"] == "aggregate Agg"
    feeder = next(n for n in nodes if n.id == "a:Agg")
    assert feeder.kind == "query" and feeder.detail.startswith("define aggregation Agg")
    assert set(edges) == {("e:S", "a:Agg"), ("a:Agg", "e:Agg"), ("e:S", "q:q"),
                          ("q:q", "e:Out")}
    assert next(n for n in nodes if n.id == "e:Agg").kind == "Aggregation"
    assert "aggregate Agg" in graph_svg(app_elements(check(app)))


def test_markup_escapes_plain_text_only() -> None:
    assert esc("<b>") == "&lt;b&gt;"
    assert tag("td", Markup("<i>x</i>")) == "<td><i>x</i></td>"
    assert Markup("<p>") + "<script>" == "<p>&lt;script&gt;"


def test_node_addresses_and_their_table_survive_a_restart(tmp_path: Path) -> None:
    assert parse_address("127.0.0.1:9443") == ("127.0.0.1", 9443)
    assert parse_address("[::1]:9443") == ("::1", 9443)
    for bad in ("localhost", "host:0", "host:99999", "a b:1", ":9443"):
        with pytest.raises(NodeError):
            parse_address(bad)
    url, key = f"sqlite:///{tmp_path / 'nodes.db'}", tmp_path / "nodes.key"
    open_node_store(url, key).add("127.0.0.1", 9443, "admin", "secret")
    again = open_node_store(url, key)
    assert [(n.key, n.username) for n in again.all()] == [("127.0.0.1:9443", "admin")]
    with pytest.raises(NodeError, match="already added"):
        again.add("127.0.0.1", 9443, "admin", "secret")
    assert again.remove("127.0.0.1:9443") and again.all() == []


def test_settings_default_to_9643_and_accept_the_dashboard_datasources(
        tmp_path: Path) -> None:
    plain = dashboard_settings(parse_config("eddy:\n  dataDir: d\n", tmp_path / "a.yaml"))
    assert (plain.listener.host, plain.listener.port, plain.listener.scheme) == (
        "127.0.0.1", 9643, "https")
    assert plain.nodes_db_url.endswith("d/dashboard/dashboard.db")
    assert plain.metrics_db_url is None and plain.users == {"admin": ("admin", True)}
    sources = "".join(
        f"    - name: {name}\n      definition:\n        type: RDBMS\n        configuration:\n"
        f"          jdbcUrl: jdbc:sqlite:{tmp_path / name}.db\n"
        for name in ("DASHBOARD_DB", "WSO2_STATUS_DASHBOARD_DB", "WSO2_METRICS_DB"))
    text = (f"wso2.carbon:\n  ports:\n    offset: 1\nwso2.datasources:\n  dataSources:\n"
            f"{sources}wso2.status.dashboard:\n  pollingInterval: 2\n")
    full = dashboard_settings(parse_config(text, tmp_path / "b.yaml"))
    assert full.listener.port == 9644 and full.polling_interval_s == 2
    assert full.nodes_db_url.endswith("WSO2_STATUS_DASHBOARD_DB.db")
    assert full.metrics_db_url is not None and full.metrics_db_url.endswith(
        "WSO2_METRICS_DB.db")


TARGET = HttpInput("S", "http://127.0.0.1:1/s", False,
                   (("name", "STRING"), ("n", "INT"), ("x", "DOUBLE"), ("ok", "BOOL")))


def test_csv_rows_become_typed_events_and_bad_cells_name_their_place() -> None:
    events = csv_events("name,n,x,ok\nA,1,2.5,true\n\nB, 2 ,3,false\n", TARGET)
    assert events == [{"event": {"name": "A", "n": 1, "x": 2.5, "ok": True}},
                      {"event": {"name": "B", "n": 2, "x": 3.0, "ok": False}}]
    with pytest.raises(SimulationError, match="row 2, n: 'two' is not a int"):
        csv_events("A,1,2,true\nB,two,3,true\n", TARGET)
    with pytest.raises(SimulationError, match="row 1: 2 values for 4 attributes"):
        csv_events("A,1\n", TARGET)


def test_app_text_gives_faults_and_the_simulator_targets() -> None:
    app = ("@App:name('T')\n@source(type='http', receiver.url='http://0.0.0.0:8006/in', "
           "basic.auth.enabled='true', @map(type='json'))\n"
           "define stream S (a int, b string);\n"
           "define aggregation Agg from S select a, sum(a) as total group by a "
           "aggregate every sec ... min;\n"
           "@info(name='q')\nfrom S[a > 1] select a insert into O;\n")
    found = facts(app)
    assert found.http_inputs == (HttpInput("S", "http://127.0.0.1:8006/in", True,
                                           (("a", "INT"), ("b", "STRING"))),)
    assert found.aggregations == ("Agg",) and found.operators["q"].startswith("filter")
    assert validate(app) == []
    faults = validate(app.replace("S[a > 1]", "S[c > 1]"))
    assert [(f["line"], f["column"]) for f in faults] == [(6, 7)]


def test_history_reads_rates_back_from_the_metric_tables(tmp_path: Path) -> None:
    engine = connect(f"sqlite:///{tmp_path / 'metrics.db'}")
    tables = MetricTables(engine)
    name = counter_name("A", "events_in_total")
    for at, count in ((1_000, 0), (3_000, 20), (5_000, 60)):
        tables.write("node-1", at, Report(gauges=[], counters=[(name, count)], meters=[],
                                          timers=[]))
    rates = MetricHistory(engine).app_rates("node-1", "A", since_ms=0)
    assert rates["events_in_total_rate"] == [(3_000, 10.0), (5_000, 20.0)]
    assert rates["errors_total_rate"] == []
    assert MetricHistory(engine).app_rates("other", "A", 0)["events_in_total_rate"] == []


def test_the_dashboard_talks_http_and_imports_no_node_or_engine() -> None:
    """DESIGN §1: the dashboard reads nodes over HTTP; only libraries below it load."""
    import subprocess
    import sys

    code = ("import sys, eddy.dashboard.web, eddy.dashboard.server, eddy.dashboard.app_text as a;"
            "a.validate(\"@App:name('A') define stream S (x int);\");"
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "(['eddy','node'], ['eddy','engine'], ['eddy','runtime'], ['eddy','cluster'])"
            " or m == 'pyspark'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_changes_need_a_session_its_csrf_token_and_the_admin_role(tmp_path: Path) -> None:
    import re

    from fastapi.testclient import TestClient

    from eddy.dashboard.web import create_app

    text = ("auth.configs:\n  userManager:\n    adminRole: admin\n    userStore:\n"
            "      users:\n        - user:\n            username: boss\n"
            "            password: Ym9zcw==\n            roles: 1\n"
            "        - user:\n            username: viewer\n            password: dmlld2Vy\n"
            "            roles: 2\n      roles:\n        - role:\n            id: 1\n"
            "            displayName: admin\n        - role:\n            id: 2\n"
            "            displayName: viewer\neddy:\n  dataDir: d\n")
    settings = dashboard_settings(parse_config(text, tmp_path / "deployment.yaml"))

    def log_in(client: TestClient, user: str, password: str) -> str:
        token = re.search(r'name="csrf" value="([^"]+)"', client.get("/login").text)
        assert token is not None
        client.post("/login", data={"csrf": token.group(1), "username": user,
                                    "password": password})
        found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/nodes").text)
        assert found is not None
        return found.group(1)

    with TestClient(create_app(settings), base_url="https://testserver") as client:
        assert client.get("/nodes", follow_redirects=False).headers["location"] == "/login"
        assert client.post("/api/validate", json={"text": ""}).status_code == 401
        forged = client.post("/login", data={"csrf": "forged", "username": "boss",
                                             "password": "boss"}, follow_redirects=False)
        assert forged.headers["location"] == "/login"  # no login without the form's token
        csrf = log_in(client, "viewer", "viewer")
        assert client.post("/api/validate", json={"text": ""}).status_code == 403
        assert client.post("/api/validate", json={"text": "x"},
                           headers={"X-CSRF-Token": csrf}).status_code == 200
        refused = client.post("/nodes", data={"csrf": csrf, "address": "127.0.0.1:1",
                                              "username": "a", "password": "b"})
        assert refused.status_code == 403 and "not in the admin role" in refused.text
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        csrf = log_in(client, "boss", "boss")
        assert client.post("/nodes", data={"address": "127.0.0.1:1", "username": "a",
                                           "password": "b"}).status_code == 403
        added = client.post("/nodes", data={"csrf": csrf, "address": "127.0.0.1:1",
                                            "username": "a", "password": "b"})
        assert added.status_code == 200 and "127.0.0.1:1" in added.text
        assert "unreachable" in added.text
        assert added.headers["X-Frame-Options"] == "DENY"


def test_the_ha_page_shows_holder_epoch_lag_and_the_failovers() -> None:
    from eddy.dashboard.nodes import Node
    from eddy.dashboard.poller import NodeState
    from eddy.dashboard.sessions import Session
    from eddy.dashboard.views_nodes import ha_page

    active = NodeState(Node(1, "127.0.0.1", 9443, "admin", "admin"), reachable=True,
                       ha=parse_ha(ha_body()))
    passive = NodeState(Node(2, "127.0.0.1", 9444, "admin", "admin"), reachable=True,
                        ha=parse_ha(ha_body(nodeId="b", status="passive", lagEvents=1234,
                                            inSync=False, history=[],
                                            plannedApps=["Alerts", "Rooms"])))
    broken = NodeState(Node(3, "127.0.0.1", 9445, "admin", "admin"),
                       ha_error="/ha: 'epoch' is missing")
    html = ha_page([active, passive, broken], Session("admin", True, "t"))
    assert '<span class="status-passive">passive</span>' in html
    assert "1,234 events" in html and "behind" in html
    assert "<td>Alerts, Rooms</td>" in html  # the passive's apps a takeover only starts
    assert html.count('class="failover"') == 2
    assert "loss → apps active: 1.5 s; loss → first output: 2.0 s" in html
    assert "127.0.0.1:9445: /ha: &#x27;epoch&#x27; is missing" in html


def test_store_queries_go_to_the_nodes_store_listener() -> None:
    """A node serves store queries on listeners of their own (``/system-details`` lists
    them): HTTPS first, reached at the node's host; none is a clear error."""
    from eddy.dashboard.node_client import NodeUnreachable, store_query_url
    from eddy.dashboard.nodes import Node

    node = Node(1, "10.0.0.5", 9443, "admin", "admin")
    listeners = [{"scheme": "http", "host": "0.0.0.0", "port": 7070},
                 {"scheme": "https", "host": "0.0.0.0", "port": 7443}]
    assert store_query_url(node, listeners) == "https://10.0.0.5:7443/stores/query"
    assert store_query_url(node, listeners[:1]) == "http://10.0.0.5:7070/stores/query"
    with pytest.raises(NodeUnreachable, match="serves no store query API"):
        store_query_url(node, [])


def test_the_node_view_says_what_spark_does() -> None:
    from eddy.dashboard.views_nodes import spark_cell

    assert "not started" in spark_cell({"running": False})
    shown = spark_cell({"running": True, "version": "4.3.0", "master": "local[2]",
                        "activeQueries": 1, "uiUrl": "http://h:4041", "uiPort": 4041})
    assert "Spark 4.3.0 on local[2], 1 active query, UI :4041" in shown
    assert "UI off" in spark_cell({"running": True, "version": "4.3.0", "master": "local[2]",
                                   "activeQueries": 0})
    assert spark_cell(None) == "–"


CHILD_A = """@App:name('P-a-1')
@bus(topic='P.In')
define stream In (x int);
@bus(topic='P.Mid')
define stream Mid (x int);
@info(name = 'q1')
from In select x insert into Mid;
"""
RECEIVER = """@App:name('P-passthrough-In-1')
@source(type='http', receiver.url='http://127.0.0.1:8280/in', @map(type='json'))
@bus(topic='P.In')
define stream In (x int);
"""
CHILD_B = """@App:name('P-b-1')
@bus(topic='P.Mid')
define stream Mid (x int);
@bus(topic='P.Out')
define stream Out (x int);
@info(name = 'q2')
from Mid select x insert into Out;
"""


def test_topics_link_the_children_with_each_readers_lag() -> None:
    from eddy.dashboard.cluster import topics

    children = [{"childAppName": "P-a-1", "siddhiApp": CHILD_A},
                {"childAppName": "P-b-1", "siddhiApp": CHILD_B},
                {"childAppName": "P-c-1", "siddhiApp": "not an app"},
                {"childAppName": "P-passthrough-In-1", "siddhiApp": RECEIVER}]
    lags = [{"topic": "P.Mid", "child": "P-b-1", "lagEvents": 7}]
    found = {t.topic: t for t in topics(children, lags)}
    assert found["P.Mid"].producers == ("P-a-1",) and found["P.Mid"].consumers == ("P-b-1",)
    assert found["P.Mid"].lags == (7,)
    assert found["P.In"].producers == ("P-passthrough-In-1",)
    assert found["P.In"].consumers == ("P-a-1",) and found["P.In"].lags == (None,)
    assert found["P.Out"].consumers == ()


def test_the_distributed_page_shows_children_workers_and_why_an_app_waits() -> None:
    from eddy.dashboard.cluster import ManagerState, ParentState
    from eddy.dashboard.nodes import Node
    from eddy.dashboard.poller import NodeState
    from eddy.dashboard.sessions import Session
    from eddy.dashboard.views_cluster import cluster_page

    child = {"parentAppName": "P", "groupName": "a", "childAppName": "P-a-1",
             "siddhiApp": CHILD_A, "deployedNodeId": "w1", "deployedNodeHost": "localhost",
             "deployedNodePort": "9444", "lastPingTimeStamp": 1_000, "isReceiver": False}
    waiting = {"parentAppName": "Q", "groupName": "r", "childAppName": "Q-r-1",
               "siddhiApp": "", "deployedNodeId": None, "waitingReason": "needs a receiver",
               "isReceiver": True}
    state = NodeState(Node(1, "127.0.0.1", 9543, "admin", "admin"), reachable=True,
                      runtime="manager", manager=ManagerState(
                          parents=[ParentState("P", "active", ""),
                                   ParentState("Q", "inactive", "needs a receiver")],
                          children=[child, waiting],
                          workers={"w1": {"host": "localhost", "port": 9444,
                                          "isReceiverNode": False}},
                          events=[{"atMs": 1, "kind": "lost", "app": None,
                                   "message": "worker w0 lost: rescheduling P-a-1"}],
                          lags={"P": [{"topic": "P.In", "child": "P-a-1", "lagEvents": 3}]},
                          leader=True))
    html = cluster_page([state], Session("admin", True, "t"))
    assert "Manager 127.0.0.1:9543 (leader)" in html
    assert "w1 (localhost:9444)" in html and "P-a-1 (3 events)" in html
    assert "Waiting: needs a receiver" in html and "waiting: needs a receiver" in html
    assert "worker w0 lost: rescheduling P-a-1" in html
    assert "Add the workers of 127.0.0.1:9543" in html
