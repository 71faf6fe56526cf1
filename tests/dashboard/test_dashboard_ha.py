"""The HA view in a real browser: a real minimum-HA pair (two ``eddy worker`` processes of
one group, PostgreSQL as the cluster database; no apps, the passive's Spark started before
the kill, since a takeover waits for it)
and a real ``eddy dashboard``. SIGKILL the active node: the page shows the other as the
lease holder under a higher epoch, and the failover on the timeline with its measured time
from the loss of the active to the new one's apps all active. Every process is stopped
by process group."""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

_HA_TESTS = Path(__file__).resolve().parents[1] / "ha"
if str(_HA_TESTS) not in sys.path:
    sys.path.insert(0, str(_HA_TESTS))

from ha_nodes import HaNode, unique  # noqa: E402

from polling import wait_for  # noqa: E402

UI_MS = 30_000
expect.set_options(timeout=UI_MS)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[HaNode]]:
    root = tmp_path_factory.mktemp("dash-ha")
    group, table = unique("g"), unique("P_")
    nodes = [HaNode(root / n, f"node-{n}", "postgresql", group, table,
                    f"sqlite:///{root / 'bus.db'}") for n in ("a", "b")]
    try:
        nodes[0].start()
        wait_for(lambda: nodes[0].status() == "active", 60, "node-a active", interval=0.3)
        nodes[1].start()
        wait_for(lambda: nodes[1].status() == "passive", 60, "node-b passive", interval=0.3)
        wait_for(nodes[1].spark_ready, 240, "node-b's Spark session", interval=0.3)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def test_killing_the_active_shows_the_failover_on_the_timeline(
        pair: list[HaNode], cluster_page: Page, artifacts: Path) -> None:
    page = cluster_page
    active, passive = pair
    epoch = int((active.ha() or {})["epoch"])
    for node in pair:
        page.get_by_label("Host and port").fill(f"127.0.0.1:{node.port}")
        page.get_by_label("Password").fill("admin")
        page.get_by_role("button", name="Add node").click()
        expect(page.locator("#nodes tbody tr", has_text=str(node.port))).to_contain_text(
            "worker (ha, ")
    page.goto("/ha")
    row_b = page.locator("#ha tbody tr", has_text="node-b")
    expect(row_b).to_contain_text("passive")
    expect(row_b.locator("td").nth(5)).to_have_text("node-a")  # the lease holder
    page.screenshot(path=str(artifacts / "ha-before.png"), full_page=True)

    active.signal(signal.SIGKILL)
    wait_for(lambda: passive.status() == "active", 30, "node-b to take over",
             interval=0.2)
    expect(row_b.locator(".status-active")).to_have_text("active")
    expect(row_b.locator("td").nth(5)).to_have_text("node-b")
    expect(row_b.locator("td").nth(6)).to_have_text(re.compile(rf"^{epoch + 1}$"))
    failover = page.locator("ol.timeline li.failover", has_text="node-b became active")
    expect(failover).to_contain_text(re.compile(r"loss → apps active: \d+\.\d s"))
    seconds = float(re.search(r"(\d+\.\d) s", failover.locator(".recovery").first
                              .inner_text()).group(1))  # type: ignore[union-attr]
    assert 0 < seconds < 30, seconds
    page.screenshot(path=str(artifacts / "ha.png"), full_page=True)
