"""Who is active in a minimum-HA pair, with real ``eddy worker`` processes and a real
database (PostgreSQL and MariaDB): one active and one passive, a third node refused, apps
deployed to either node reach the other, and the lease moves on SIGKILL, on SIGSTOP past
the lease and on a database connection cut through a TCP proxy — never to two actives.

These checks need no running app (Spark starts in the background and is not waited for);
``test_failover.py`` checks the events across failovers.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ha_nodes import HaNode, unique

from polling import wait_for

LEASE_S = 4.0  # heartbeatInterval 1000 ms × heartbeatMaxRetry 4
APP = "@App:name('{app}')\ndefine stream In (id long);\n"


def history(node: HaNode) -> list[dict[str, Any]]:
    body = node.ha()
    assert body is not None
    return list(body["history"])


def last(entries: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return [h for h in entries if h["status"] == status][-1]


@pytest.fixture(scope="module", params=["postgresql", "mariadb"])
def nodes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[list[HaNode]]:
    root = tmp_path_factory.mktemp(f"roles-{request.param}")
    group, table, bus = unique("g"), unique("P_"), f"sqlite:///{root / 'unused-bus.db'}"
    pair = [HaNode(root / n, f"node-{n}", request.param, group, table, bus, max_retry=4)
            for n in ("a", "b", "c")]
    try:
        pair[0].start()
        wait_for(lambda: pair[0].status() == "active", 60, "node a to take the lease")
        pair[1].start()
        wait_for(lambda: pair[1].status() == "passive", 60, "node b to be passive")
        yield pair
    except BaseException:
        for node in pair:
            print(f"--- {node.node_id}\n{node.log_tail()}")
        raise
    finally:
        for node in pair:
            node.stop()


def test_one_active_one_passive_and_a_third_node_is_refused(nodes: list[HaNode]) -> None:
    a, b, c = nodes
    role_a, role_b = a.ha(), b.ha()
    assert role_a is not None and role_b is not None
    assert (role_a["mode"], role_a["status"], role_a["holder"]) == ("ha", "active", "node-a")
    assert (role_b["status"], role_b["holder"], role_b["epoch"]) == \
        ("passive", "node-a", role_a["epoch"])
    assert role_a["clusterId"] == role_b["clusterId"]
    assert role_a["lagEvents"] == 0  # the active is its own position
    wait_for(lambda: (b.ha() or {}).get("lagEvents") == 0, 60,
             "the passive to report its lag in events (no app: none)")
    assert "took the lease" in last(role_a["history"], "active")["reason"]
    c.process = subprocess.Popen([*_command(c)], cwd=c.home, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 env=_env(c))
    output, _ = c.process.communicate(timeout=120)
    assert c.process.returncode == 2
    assert b"already has two live nodes (node-a, node-b); minimum HA is a pair, so node " \
           b"'node-c' is refused" in output


def test_an_app_deployed_to_either_node_reaches_the_other(nodes: list[HaNode]) -> None:
    a, b, _ = nodes
    app = unique("Roles")
    with b.client() as client:  # deployed through the passive's REST API
        response = client.post("/siddhi-apps", content=APP.format(app=app),
                               headers={"Content-Type": "text/plain"})
    assert response.status_code == 201, response.text
    in_a = a.home / "data" / "deployment" / "siddhi-files" / f"{app}.siddhi"
    wait_for(in_a.exists, 30, f"{app} to reach node a")
    assert in_a.read_text() == APP.format(app=app)
    in_a.unlink()  # undeployed through node a's deployment folder
    in_b = b.home / "data" / "deployment" / "siddhi-files" / f"{app}.siddhi"
    wait_for(lambda: not in_b.exists(), 30, f"{app} to be undeployed from node b")


def test_undeploying_an_app_drops_its_checkpoint_from_the_database(nodes: list[HaNode],
                                                                  tmp_path: Path) -> None:
    from eddy.store.connect import connect, jdbc_to_sqlalchemy
    from eddy.store.revisions import CheckpointMirror

    active = next(n for n in nodes[:2] if n.status() == "active")
    body = active.ha()
    assert body is not None
    app = unique("Dropped")
    in_active = active.home / "data" / "deployment" / "siddhi-files" / f"{app}.siddhi"
    in_active.write_text(APP.format(app=app))
    wait_for(lambda: active.app_status(app) is not None, 30, f"{app} to be deployed")
    # What the app's micro-batches would have mirrored (this app has no query to run).
    mirror = CheckpointMirror(connect(jdbc_to_sqlalchemy(active.database_url)),
                              active.table, active.group)
    (tmp_path / "spark" / "offsets").mkdir(parents=True)
    (tmp_path / "spark" / "offsets" / "0").write_text("v1")
    mirror.push(app, tmp_path, int(body["epoch"]), 0)
    assert mirror.head(app) is not None
    in_active.unlink()
    wait_for(lambda: mirror.head(app) is None, 30, f"{app}'s mirrored checkpoint to go")


def test_sigkill_moves_the_lease_and_the_killed_node_returns_passive(nodes: list[HaNode]
                                                                     ) -> None:
    a, b, _ = nodes
    active, passive = (a, b) if a.status() == "active" else (b, a)
    epoch = active.ha()["epoch"]  # type: ignore[index]
    active.kill()
    wait_for(lambda: passive.status() == "active", 3 * LEASE_S + 30,
             f"{passive.node_id} to take over")
    role = passive.ha()
    assert role is not None and role["epoch"] == epoch + 1
    active.start()
    # From its first answer on, a restarted node is in the group and not the active one
    # (it once answered as a single node, "active", until its role keeper's first round).
    first = active.ha()
    assert first is not None and first["mode"] == "ha" and first["status"] != "active", first
    wait_for(lambda: active.status() == "passive", 60, f"{active.node_id} to rejoin")
    assert active.ha()["holder"] == passive.node_id  # type: ignore[index]


def test_a_node_paused_past_its_lease_steps_down_when_it_resumes(nodes: list[HaNode]) -> None:
    a, b, _ = nodes
    active, passive = (a, b) if a.status() == "active" else (b, a)
    active.signal(signal.SIGSTOP)
    try:
        wait_for(lambda: passive.status() == "active", 3 * LEASE_S + 30,
                 f"{passive.node_id} to take over from the paused node")
    finally:
        active.signal(signal.SIGCONT)
    wait_for(lambda: active.status() == "passive", 60, "the paused node to step down")
    stepped = [h for h in history(active) if "stepped down" in h["reason"]]
    assert stepped, history(active)
    assert passive.status() == "active"


def test_a_node_cut_from_the_database_steps_down_before_the_other_takes_over(
        nodes: list[HaNode]) -> None:
    a, b, _ = nodes
    active, passive = (a, b) if a.status() == "active" else (b, a)
    active.proxy.cut()
    try:
        wait_for(lambda: passive.status() == "active", 3 * LEASE_S + 30,
                 f"{passive.node_id} to take over")
        wait_for(lambda: active.status() == "passive", 60, "the cut-off node to step down")
        stepped = [h for h in history(active) if "stepped down" in h["reason"]][-1]
        took = last(history(passive), "active")
        assert stepped["atMs"] <= took["atMs"], "two active nodes at once"
        assert "database" in stepped["reason"] or "not renewed" in stepped["reason"]
    finally:
        active.proxy.restore()
    wait_for(lambda: active.status() == "passive" and active.ha()["holder"]  # type: ignore[index]
             == passive.node_id, 60, "the cut-off node to rejoin as passive")


def _command(node: HaNode) -> list[str]:
    import sys

    return [sys.executable, "-m", "eddy.cli", "worker", "--config", str(node.config)]


def _env(node: HaNode) -> dict[str, str]:
    import os

    from ha_nodes import SRC

    return {**os.environ, "PYTHONPATH": str(SRC), "HA_HTTP_PORT": str(node.source_port)}
