"""``eddy manager`` and distributed ``eddy worker`` processes for the fully distributed
tests: WSO2-style configs (seeds 000/001) with loopback ports, short heartbeats and
test-unique names; each process in its own session, so SIGKILL, SIGSTOP and SIGCONT reach
a worker's Python driver and its Spark JVM together.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from polling import free_port, wait_for
from process_group import stop_group

SRC = Path(__file__).resolve().parents[2] / "src"
ADMIN = ("admin", "admin")
DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}
NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")
NATS_CREATOR = "org.wso2.carbon.sp.jobmanager.core.appcreator.NatsSiddhiAppCreator"
# Timings: a worker is lost after 1 s × 3 beats; a manager's lease after 1 s × 3 renewals;
# a worker drops its apps after 6 s without a manager. A loaded 2-core machine starves
# threads for a second or two: shorter would make healthy nodes look dead.
HEARTBEAT_MS, HEARTBEAT_RETRY, LEASE_MS, LEASE_RETRY, LEADER_RETRY_MS = 1000, 3, 1000, 3, 6000

# The seed app as the distributed tests and bench/distributed.py deploy it: query-1 on
# one group, query-3 on another of ``parallel`` instances.
DIST_SEED_APP = """\
@App:name('{name}')

define stream TempStream (deviceID long, roomNo int, temp double);

@info(name = 'query-1')
@dist(execGroup='group-1')
from TempStream#window.time(2 min)
select avg(temp) as avgTemp, roomNo, deviceID
insert all events into AvgTempStream;

@info(name = 'query-3')
@dist(execGroup='group-2', parallel='{parallel}')
from TempStream[(roomNo >= 100 and roomNo < 110) and temp > 40.0]
select roomNo, temp
insert into HighTempStream;
"""


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def _listener(port: int) -> str:
    return (f"wso2.transport.http:\n  listenerConfigurations:\n    - id: msf4j-https\n"
            f"      host: 127.0.0.1\n      port: {port}\n      scheme: https\n")


def manager_yaml(node_id: str, port: int, database: str, group: str,
                 min_resource_count: int) -> str:
    """Seed 000/001's manager configuration (NATS as the messaging layer)."""
    return f"""\
wso2.carbon:
  id: {node_id}
{_listener(port)}wso2.datasources:
  dataSources:
    - name: SP_MGT_DB
      description: The datasource used for cluster coordination and the resource pool
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: '{DATABASES[database]}'
          isAutoCommit: false
cluster.config:
  enabled: true
  groupId: {group}
  coordinationStrategyClass: org.wso2.carbon.cluster.coordinator.rdbms.RDBMSCoordinationStrategy
  strategyConfig:
    datasource: SP_MGT_DB
    heartbeatInterval: {LEASE_MS}
    heartbeatMaxRetry: {LEASE_RETRY}
    eventPollingInterval: {LEASE_MS}
deployment.config:
  type: distributed
  httpsInterface:
    host: localhost
    port: {port}
    username: admin
    password: admin
  heartbeatInterval: {HEARTBEAT_MS}
  heartbeatMaxRetry: {HEARTBEAT_RETRY}
  datasource: SP_MGT_DB
  minResourceCount: {min_resource_count}
  appCreatorClass: {NATS_CREATOR}
  natsServerUrl: {NATS_URL}
  clusterId: {group}
eddy:
  dataDir: data
"""


def worker_yaml(node_id: str, port: int, managers: list[int], bus_url: str,
                receiver: bool, database: str | None = None) -> str:
    """Seed 000/001's resource (or receiver) worker configuration; ``database``: the
    persistence database every worker names (``DBPersistenceStore``), from which a moved
    child continues."""
    shared = "" if database is None else f"""\
wso2.datasources:
  dataSources:
    - name: PERSISTENCE_DB
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: '{DATABASES[database]}'
          isAutoCommit: false
state.persistence:
  persistenceStore: org.wso2.carbon.stream.processor.core.persistence.DBPersistenceStore
  config:
    datasource: PERSISTENCE_DB
    table: EDDY_DIST_STATE
"""
    resource_managers = "".join(
        f"    - host: localhost\n      port: {m}\n      username: admin\n"
        f"      password: admin\n" for m in managers)
    return f"""\
wso2.carbon:
  id: {node_id}
{_listener(port)}deployment.config:
  type: distributed
  isReceiverNode: {str(receiver).lower()}
  httpsInterface:
    host: localhost
    port: {port}
    username: admin
    password: admin
  leaderRetryInterval: {LEADER_RETRY_MS}
  resourceManagers:
{resource_managers}{shared}eddy:
  dataDir: data
  busUrl: {bus_url}
  deploymentPollIntervalMs: 100
  spark:
    master: local[2]
    conf:
      spark.sql.shuffle.partitions: 1
      spark.ui.enabled: false
"""


class ClusterNode:
    """One ``eddy manager`` or ``eddy worker`` process of the test cluster."""

    def __init__(self, home: Path, node_id: str, command: str, config: str,
                 port: int) -> None:
        self.home, self.node_id, self.command, self.port = home, node_id, command, port
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / "deployment.yaml"
        self.config.write_text(config)
        self.log = home / f"{command}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ClusterNode:
        env = {**os.environ, "PYTHONPATH": str(SRC), "EDDY_LOG_LEVEL": "INFO"}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "eddy.cli", self.command, "--config", str(self.config)],
                cwd=self.home, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        wait_for(self._answers, 90, f"{self.node_id}'s API", interval=0.2)
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _answers(self) -> bool:
        if not self.alive():
            raise AssertionError(f"{self.node_id} exited:\n{self.log_tail()}")
        try:
            with self.client() as client:
                return client.get("/nodeDetails/runTime").status_code == 200
        except (httpx.TransportError, ssl.SSLError, FileNotFoundError):
            return False

    def client(self, timeout: float = 30) -> httpx.Client:
        """An HTTPS client that trusts only this node's self-signed certificate."""
        context = ssl.create_default_context(
            cafile=str(self.home / "data" / "security" / "eddy-worker.crt"))
        return httpx.Client(base_url=f"https://localhost:{self.port}", auth=ADMIN,
                            verify=context, timeout=timeout)

    def get(self, path: str) -> httpx.Response | None:
        """``GET path``; None when the node does not answer."""
        try:
            with self.client(timeout=10) as client:
                return client.get(path)
        except (httpx.TransportError, ssl.SSLError):
            return None

    def json(self, path: str) -> Any:
        response = self.get(path)
        return None if response is None or response.status_code != 200 else response.json()

    def signal(self, sig: signal.Signals) -> None:
        """``sig`` to the node's whole process group."""
        assert self.process is not None
        os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        if self.alive():
            assert self.process is not None
            self.signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """SIGCONT and SIGTERM; SIGKILL of the group if anything lingers."""
        stop_group(self.process)

    def log_tail(self, lines: int = 60) -> str:
        if not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def manager(root: Path, name: str, database: str, group: str,
            min_resource_count: int = 1) -> ClusterNode:
    port = free_port()
    return ClusterNode(root / name, name, "manager",
                       manager_yaml(name, port, database, group, min_resource_count), port)


def worker(root: Path, name: str, managers: list[ClusterNode], bus_url: str,
           receiver: bool = False, database: str | None = None) -> ClusterNode:
    port = free_port()
    return ClusterNode(root / name, name, "worker",
                       worker_yaml(name, port, [m.port for m in managers], bus_url, receiver,
                                   database), port)
