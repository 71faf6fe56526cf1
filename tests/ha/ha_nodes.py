"""Two ``eddy worker`` processes of one minimum-HA group, for the HA tests and the bench.

Each node has its own folder, API port, HTTP-source port (``${HA_HTTP_PORT}`` in the app)
and its own TCP proxy in front of the shared database, so a test can cut one node's
database connection. Processes start in their own session: SIGKILL and SIGSTOP reach the
Python driver and its Spark JVM together.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx

from polling import free_port, wait_for
from process_group import stop_group

SRC = Path(__file__).resolve().parents[2] / "src"
START_S = 240.0
ADMIN = ("admin", "admin")
DATABASES = {"postgresql": ("jdbc:postgresql://root@127.0.0.1:{port}/test", 5432),
             "mariadb": ("jdbc:mysql://root@127.0.0.1:{port}/test", 3306)}
NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")


class TcpProxy:
    """A loopback TCP proxy to ``127.0.0.1:target`` that the test can cut (every open
    connection reset, new ones refused) and restore on the same port."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self._server: socket.socket | None = None
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self.restore()

    def restore(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def cut(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            _shut(server)  # shutdown() first: close() alone does not wake a blocked accept()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for end in pair:
                _shut(end)

    def close(self) -> None:
        self.cut()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        raise OSError("closed")
                    (b if end is a else a).sendall(data)
        except (OSError, ValueError):
            for end in (a, b):
                try:
                    end.close()
                except OSError:
                    pass


def _shut(end: socket.socket) -> None:
    try:
        end.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    end.close()


def node_yaml(node_id: str, https_port: int, db_url: str, group: str, table: str,
              bus_url: str, max_retry: int = 2, ha: bool = True) -> str:
    """Seed 003's worker configuration, with loopback ports and test-unique names (without
    ``ha``: the same node as a single worker, for comparisons)."""
    datasources = "".join(
        f"    - name: {name}\n      definition:\n        type: RDBMS\n        configuration:\n"
        f"          jdbcUrl: {db_url}\n          isAutoCommit: false\n"
        for name in ("WSO2_CLUSTER_DB", "PERSISTENCE_DB", "WSO2_METRICS_DB"))
    text = f"""\
wso2.carbon:
  id: {node_id}
wso2.transport.http:
  listenerConfigurations:
    - id: msf4j-https
      host: 127.0.0.1
      port: {https_port}
      scheme: https
wso2.datasources:
  dataSources:
{datasources}state.persistence:
  enabled: false
  intervalInMin: 1
  revisionsToKeep: 2
  persistenceStore: org.wso2.carbon.stream.processor.core.persistence.DBPersistenceStore
  config:
    datasource: PERSISTENCE_DB
    table: {table}
cluster.config:
  enabled: true
  groupId: {group}
  coordinationStrategyClass: org.wso2.carbon.cluster.coordinator.rdbms.RDBMSCoordinationStrategy
  strategyConfig:
    datasource: WSO2_CLUSTER_DB
    heartbeatInterval: 1000
    heartbeatMaxRetry: {max_retry}
    eventPollingInterval: 1000
deployment.config:
  type: ha
  eventSyncServer:
    host: 0.0.0.0
    port: 9893
  eventSyncClientPool:
    maxActive: 10
eddy:
  dataDir: data
  busUrl: {bus_url}
  deploymentPollIntervalMs: 100
  spark:
    master: local[2]
    conf:
      spark.sql.shuffle.partitions: 1
      spark.ui.enabled: false
"""
    if not ha:
        text = text.replace("  enabled: true\n  groupId", "  enabled: false\n  groupId") \
            .replace("  type: ha", "  type: single-node") \
            .replace("DBPersistenceStore", "FileSystemPersistenceStore")
    return text


class HaNode:
    """One node of the pair: its process, API client and HTTP-source port."""

    def __init__(self, home: Path, node_id: str, database: str, group: str, table: str,
                 bus_url: str, max_retry: int = 2, ha: bool = True) -> None:
        self.home, self.node_id = home, node_id
        self.group, self.table, self.database = group, table, database
        self.database_url = DATABASES[database][0].format(port=DATABASES[database][1])
        home.mkdir(parents=True, exist_ok=True)
        url, port = DATABASES[database]
        self.proxy = TcpProxy(port)
        self.port = free_port()
        self.source_port = free_port()
        self.config = home / "deployment.yaml"
        self.config.write_text(node_yaml(node_id, self.port, url.format(port=self.proxy.port),
                                         group, table, bus_url, max_retry, ha))
        self.log = home / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> HaNode:
        env = {**os.environ, "PYTHONPATH": str(SRC), "EDDY_LOG_LEVEL": "INFO",
               "HA_HTTP_PORT": str(self.source_port)}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "eddy.cli", "worker", "--config", str(self.config)],
                cwd=self.home, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        wait_for(self._answers, 90, f"{self.node_id}'s API", interval=0.2)
        return self

    def spark_ready(self) -> bool:
        """Whether the node's Spark session has started (its log says so): before that a
        takeover waits for it, as the node's app starts do."""
        return self.log.exists() and re.search(
            r"Spark \S+ ready \(", self.log.read_text(errors="replace")) is not None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _answers(self) -> bool:
        if not self.alive():
            raise AssertionError(f"{self.node_id} exited:\n{self.log_tail()}")
        try:
            return self.ha() is not None
        except (httpx.TransportError, ssl.SSLError, FileNotFoundError):
            return False

    def client(self) -> httpx.Client:
        context = ssl.create_default_context(
            cafile=str(self.home / "data" / "security" / "eddy-worker.crt"))
        return httpx.Client(base_url=f"https://localhost:{self.port}", auth=ADMIN,
                            verify=context, timeout=30)

    def ha(self) -> dict[str, Any] | None:
        """``GET /ha``; None when the API does not answer."""
        try:
            with self.client() as client:
                response = client.get("/ha")
        except (httpx.TransportError, ssl.SSLError):
            return None
        body: dict[str, Any] = response.json()
        return body

    def status(self) -> str | None:
        body = self.ha()
        return None if body is None else str(body["status"])

    def app_status(self, app: str) -> str | None:
        try:
            with self.client() as client:
                response = client.get(f"/siddhi-apps/{app}/status")
        except (httpx.TransportError, ssl.SSLError):
            return None
        return str(response.json().get("status")) if response.status_code == 200 else None

    def signal(self, sig: signal.Signals) -> None:
        """``sig`` to the node's whole process group (driver and JVM)."""
        assert self.process is not None
        os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        if self.alive():
            assert self.process is not None
            self.signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM (SIGCONT first, in case it is stopped), SIGKILL of the group if it
        lingers."""
        stop_group(self.process)
        self.proxy.close()

    def log_tail(self, lines: int = 60) -> str:
        if not self.log.exists():
            return "(no log)"
        return "\n".join(line for line in self.log.read_text(errors="replace").splitlines()
                         if " WARN " not in line or "HA" in line)[-8000:]


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


APP = """\
@App:name('{app}')

@source(type='http', receiver.url='http://127.0.0.1:${{HA_HTTP_PORT}}/in', @map(type='json'))
define stream In (id long, v double);

@sink(type='nats', destination='{subject}', bootstrap.servers='{nats}', jetstream='true',
      @map(type='json'))
define stream Out (id long, v2 double);

from In
select id, v * 2.0 as v2
insert into Out;
"""
