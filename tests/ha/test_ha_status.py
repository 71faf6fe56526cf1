"""``eddy ha status``: the group's active node, epoch, last renewal and the passive's lag,
read from the databases a node's deployment.yaml names (here SQLite files and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ha_nodes import node_yaml, unique

from eddy.cli import main
from eddy.config import load_config
from eddy.store.cluster_apps import AppCatalog
from eddy.store.connect import connect
from eddy.store.lease import Lease
from eddy.store.revisions import CheckpointMirror


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_status_names_the_active_the_epoch_and_the_passive_lag(
        database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"jdbc:sqlite:{tmp_path / 'cluster.db'}" if database == "sqlite" \
        else "jdbc:postgresql://root@127.0.0.1:5432/test"
    group, table = unique("g"), unique("P_")
    config_path = tmp_path / "deployment.yaml"
    config_path.write_text(node_yaml("node-a", 9443, url, group, table,
                                     "nats://127.0.0.1:4222?app=x", max_retry=10))
    config = load_config(config_path)
    assert main(["ha", "status", "--config", str(config_path)]) == 0
    assert "active (none), epoch 0" in capsys.readouterr().out

    engine = connect(config.datasource_url("WSO2_CLUSTER_DB"))
    a, b = Lease(engine, group, "node-a", 2000), Lease(engine, group, "node-b", 2000)
    a.join()
    b.join()
    assert a.tick().mine and not b.tick().mine
    AppCatalog(engine, group).publish("App1", "@App:name('App1')")
    AppCatalog(engine, group).publish("App2", "@App:name('App2')")
    mirror = CheckpointMirror(connect(config.datasource_url("PERSISTENCE_DB")), table, group)
    (tmp_path / "ckpt").mkdir()
    for batch in range(3):
        (tmp_path / "ckpt" / str(batch)).write_text("x")
        mirror.push("App1", tmp_path / "ckpt", epoch=1, batch_id=batch)
    a.report("active", {}, 0)
    b.report("passive", {"App1": 1}, 12, ["App1"])

    assert main(["ha", "status", "--config", str(config_path), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["active"], status["epoch"], status["leaseMs"]) == ("node-a", 1, 10000)
    assert 0 <= status["lastRenewalAgoMs"] < 10000
    nodes = {n["nodeId"]: n for n in status["nodes"]}
    assert nodes["node-a"]["status"] == "active"
    assert nodes["node-b"]["status"] == "passive"
    assert nodes["node-b"]["lagBatches"] == {"App1": 2, "App2": 0}
    assert nodes["node-b"]["lagEvents"] == 12
    assert nodes["node-b"]["plannedApps"] == ["App1"]
    assert status["apps"] == [{"app": "App1", "revision": 3, "batchId": 2, "epoch": 1},
                              {"app": "App2", "revision": 0, "batchId": None, "epoch": None}]
    assert main(["ha", "status", "--config", str(config_path)]) == 0
    text = capsys.readouterr().out
    assert f"group {group}: active node-a, epoch 1" in text
    assert "node node-b: passive" in text and "behind by App1 2 micro-batch(es)" in text
    assert "12 event(s) behind the active's committed position" in text
    assert "not planned ahead yet: App2" in text  # a takeover plans it first


def test_status_of_a_single_node_config_is_an_error(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deployment.yaml"
    path.write_text("wso2.carbon:\n  id: solo\n")
    assert main(["ha", "status", "--config", str(path)]) == 2
    assert "not a minimum-HA node" in capsys.readouterr().err
