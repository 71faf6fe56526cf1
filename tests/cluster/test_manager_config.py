"""The manager's and the distributed worker's deployment.yaml (seeds 000/001, digest §6):
WSO2's keys read, embedded defaults for one machine, and faults named by file, line and
key, as for the worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_nodes import manager_yaml, worker_yaml

from eddy.cluster.placement import Waiting, assign
from eddy.config import ConfigError, load_config, parse_config
from eddy.store.manager_state import ChildRow, WorkerRow

SOURCE = Path("/opt/sp/conf/manager/deployment.yaml")


def manager_faults(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, SOURCE, "manager")
    return caught.value.faults


def test_the_seed_manager_config_is_read_with_its_key_names() -> None:
    config = parse_config(manager_yaml("m1", 9543, "postgresql", "sp", 3), SOURCE, "manager")
    deployment = config.model.deployment
    assert (deployment.type, deployment.heartbeatInterval, deployment.heartbeatMaxRetry,
            deployment.minResourceCount, deployment.datasource) == \
        ("distributed", 1000, 3, 3, "SP_MGT_DB")
    assert config.manager_db_url().startswith("postgresql+psycopg://")
    assert config.manager_group == "sp"
    assert config.bus_url == "nats://127.0.0.1:4222?app=sp"  # natsServerUrl + clusterId
    assert config.store_query_listeners() == []


def test_a_manager_without_config_runs_alone_on_sqlite_on_port_9543() -> None:
    config = load_config(None, "manager")
    assert [(x.scheme, x.host, x.port) for x in config.listeners()] == \
        [("https", "127.0.0.1", 9543)]
    assert config.manager_db_url().startswith("sqlite:///")
    assert config.manager_db_url().endswith("eddy-data/database/manager.db")


def test_manager_faults_name_the_line_and_the_key() -> None:
    text = manager_yaml("m1", 9543, "postgresql", "sp", 1)
    broken = (text.replace("type: distributed", "type: ha")
              .replace("  datasource: SP_MGT_DB\n  minResourceCount",
                       "  datasource: SP_MGT\n  minResourceCount"))
    lines = broken.splitlines()
    found = manager_faults(broken)
    type_line = lines.index("  type: ha") + 1
    source_line = lines.index("  datasource: SP_MGT") + 1
    assert f"{SOURCE}:{type_line}: deployment.config.type: a manager runs the fully " \
           f"distributed deployment: type: distributed" in found
    assert any(f.startswith(f"{SOURCE}:{source_line}: deployment.config.datasource: no "
                            f"datasource 'SP_MGT'") for f in found)
    misspelt = text.replace("  natsServerUrl", "  natsServerURL")
    nats_line = next(i for i, line in enumerate(misspelt.splitlines())
                     if "natsServerURL" in line) + 1
    assert manager_faults(misspelt) == [
        f"{SOURCE}:{nats_line}: deployment.config.natsServerURL: unknown key; did you mean "
        f"'natsServerUrl'?"]
    creator = manager_faults(text.replace("NatsSiddhiAppCreator", "JMSSiddhiAppCreator"))
    assert "deployment.config.appCreatorClass: eddy's bus is Kafka or NATS" in creator[0]


def test_a_distributed_worker_needs_its_interface_and_its_managers() -> None:
    text = worker_yaml("w1", 9090, [9543, 9544], "nats://127.0.0.1:4222?app=x", True)
    config = parse_config(text, Path("worker.yaml"))
    deployment = config.model.deployment
    assert config.is_distributed_worker and deployment.isReceiverNode
    assert [(m.host, m.port) for m in deployment.resourceManagers] == \
        [("localhost", 9543), ("localhost", 9544)]
    with pytest.raises(ConfigError) as caught:
        parse_config(text.split("  resourceManagers:")[0] + "eddy:\n  dataDir: data\n",
                     Path("worker.yaml"))
    assert any("deployment.config.resourceManagers: required" in f
               for f in caught.value.faults)


def _child(name: str, group: str, instance: int, receiver: bool = False) -> ChildRow:
    return ChildRow(name, "App", group, instance, receiver, "", "", None)


def test_placement_is_all_or_nothing_and_spreads_instances() -> None:
    children = [_child("App-p-1", "p", 1, True), _child("App-g-1", "g", 1),
                _child("App-g-2", "g", 2), _child("App-h-1", "h", 1)]
    workers = {n: WorkerRow(n, "h", 1, None, None, n == "r") for n in ("a", "b", "r")}
    placed = assign(children, workers, {}, 2)
    assert placed == {"App-p-1": "r", "App-g-1": "a", "App-g-2": "b", "App-h-1": "a"}
    assert assign(children, workers, {}, 3) == Waiting(
        "waiting for resource workers: minResourceCount is 3 and 2 are up")
    no_receiver = {n: w for n, w in workers.items() if n != "r"}
    assert isinstance(assign(children, no_receiver, {}, 1), Waiting)
    assert assign(children[1:2], workers, {"a": 5}, 1) == {"App-g-1": "b"}  # least loaded
