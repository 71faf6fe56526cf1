"""The distributed view in a real browser: one ``eddy manager`` (PostgreSQL as its
database) and one resource worker (the SQLite bus), both real processes, and a real
``eddy dashboard``. Added by its address, the manager shows a parent app's execution
groups, their child apps and the worker each runs on, the bus topic between the groups,
a second app waiting with the reason (it needs a receiver worker; none is up), and the
scheduling events; its worker is added as a node from that page. Then the worker is
SIGKILLed: the page shows it lost, its children rescheduled, and the app waiting. The children are placed
as soon as the worker accepts them (its Spark starts later), so no Spark start is waited
for. Every process is stopped by process group."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

_CLUSTER_TESTS = Path(__file__).resolve().parents[1] / "cluster"
if str(_CLUSTER_TESTS) not in sys.path:
    sys.path.insert(0, str(_CLUSTER_TESTS))

import pyarrow as pa  # noqa: E402
from cluster_nodes import NATS_URL, ClusterNode, manager, unique, worker  # noqa: E402

from polling import free_port, wait_for  # noqa: E402

from eddy.bus import TopicSpec, open_bus  # noqa: E402
from eddy.bus.url import nats_url  # noqa: E402
from eddy.lang.ast import Attribute, AttrType  # noqa: E402

BUS_OF: dict[str, str] = {}  # manager id → the bus URL of its group
UI_MS = 30_000
expect.set_options(timeout=UI_MS)
CHAIN = """@App:name('{name}')
define stream Readings (room int, temp double);
@info(name = 'hot')
@dist(execGroup='filter')
from Readings[temp > 40.0] select room, temp insert into Hot;
@info(name = 'count')
@dist(execGroup='count')
from Hot select room, count() as hits group by room insert into Hits;
"""
NEEDS_RECEIVER = """@App:name('{name}')
@source(type='http', receiver.url='http://127.0.0.1:{port}/t', @map(type='json'))
define stream T (room int, temp double);
@info(name = 'a')
@dist(execGroup='a')
from T[temp > 1.0] select room insert into A;
@info(name = 'b')
@dist(execGroup='b')
from T[temp > 2.0] select room insert into B;
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterNode,
                                                                        ClusterNode]]:
    root = tmp_path_factory.mktemp("dash-cluster")
    group = unique("dash")
    boss = manager(root, unique("m"), "postgresql", group)
    # The manager reads the lags from the bus its natsServerUrl names: the worker's too.
    BUS_OF[boss.node_id] = nats_url(NATS_URL, group)
    resource = worker(root, unique("w"), [boss], BUS_OF[boss.node_id])
    try:
        boss.start()
        resource.start()
        yield boss, resource
    finally:
        resource.stop()
        boss.stop()


def _placed(boss: ClusterNode, app: str) -> bool:
    children = boss.json(f"/managers/siddhi-apps/{app}") or []
    return bool(children) and all(c["deployedNodeId"] for c in children)


def test_a_manager_shows_parents_children_workers_topics_and_waiting_apps(
        cluster: tuple[ClusterNode, ClusterNode], cluster_page: Page,
        artifacts: Path) -> None:
    page = cluster_page
    boss, resource = cluster
    chain, waiting = unique("Chain"), unique("Waits")
    # Five readings on the first group's input topic: its child has them to read (a lag
    # of 5 until its query, once Spark is up, has read them).
    with open_bus(BUS_OF[boss.node_id]) as bus:
        bus.create_topic(TopicSpec(f"{chain}.Readings", (Attribute("room", AttrType.INT),
                                                        Attribute("temp", AttrType.DOUBLE))))
        bus.append(f"{chain}.Readings", pa.table({"room": pa.array([1, 2, 3, 4, 5], pa.int32()),
                                                  "temp": [41.0, 42.0, 43.0, 44.0, 45.0]}))
    with boss.client() as client:
        wait_for(lambda: client.get("/resourceClusterWorkers").status_code == 200, 30,
                 "the worker to join the manager", interval=0.3)
        for text in (CHAIN.format(name=chain),
                     NEEDS_RECEIVER.format(name=waiting, port=free_port())):
            answer = client.post("/siddhi-apps", content=text,
                                 headers={"Content-Type": "text/plain"})
            assert answer.status_code == 201, answer.text
    wait_for(lambda: _placed(boss, chain), 60, f"{chain}'s children placed", interval=0.5)

    page.get_by_label("Host and port").fill(f"127.0.0.1:{boss.port}")
    page.get_by_label("Password").fill("admin")
    page.get_by_role("button", name="Add node").click()
    expect(page.locator("#nodes tbody tr", has_text=str(boss.port))).to_contain_text(
        "manager (leader)")
    page.get_by_role("link", name="Distributed").click()
    expect(page).to_have_url(re.compile(r"/cluster$"))
    children = page.locator(f'table.children[data-parent="{chain}"]')
    expect(children).to_contain_text(f"{chain}-filter-1")
    expect(children).to_contain_text(f"{chain}-count-1")
    expect(children.locator("tbody tr")).to_have_count(2)
    for row in children.locator("tbody tr").all():
        expect(row).to_contain_text(resource.node_id)
    expect(page.locator(f"#parent-{chain} .status-active")).to_have_text("active")
    topics = page.locator("table.topics").first
    expect(topics).to_contain_text(f"{chain}.Hot")
    expect(topics.locator("tr", has_text=f"{chain}.Readings")).to_contain_text(
        re.compile(rf"{chain}-filter-1 \((5|0) events\)"))
    expect(topics.locator("tr", has_text=f"{chain}.Hot")).to_contain_text(
        f"{chain}-count-1")
    expect(page.locator(f"#parent-{waiting} .status-waiting")).to_have_text("waiting")
    expect(page.locator(".waiting-reason")).to_contain_text("needs a receiver worker")
    expect(page.locator(".events")).to_contain_text(f"placed {chain}")
    expect(page.locator(".events")).to_contain_text(f"worker {resource.node_id} joined")
    assert page.evaluate("""() => [...document.querySelectorAll(
        'input:not([type=hidden]), select, textarea')].filter(
        (e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).length"""
                         ) == 0
    page.get_by_role("button", name=re.compile("Add the workers of")).click()
    expect(page.locator("table.workers")).to_contain_text("watched")
    page.screenshot(path=str(artifacts / "cluster.png"), full_page=True)
    page.goto("/nodes")
    expect(page.locator("#nodes tbody tr", has_text=str(resource.port))).to_contain_text(
        "reachable")
    # The worker dies: the manager reschedules its children, finds no worker for them,
    # and the app waits, saying why.
    resource.kill()
    page.goto("/cluster")
    expect(page.locator(".events")).to_contain_text(
        re.compile(rf"worker {resource.node_id} lost .*rescheduling .*{chain}-filter-1"))
    expect(page.locator(f"#parent-{chain} .status-waiting")).to_have_text("waiting")
    expect(page.locator(f"#parent-{chain} + .waiting-reason")).to_contain_text(
        "minResourceCount")
    page.screenshot(path=str(artifacts / "cluster-rescheduled.png"), full_page=True)
