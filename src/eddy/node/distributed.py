"""A worker of the fully distributed deployment: it registers with the managers, heartbeats
to their leader with WSO2's JSON, runs the child apps the leader deploys through its REST
API, and drops them all when no manager answers for ``leaderRetryInterval``.

**Heartbeat** (digest §2.3): ``POST /resourceManager/heartbeat`` with ``{id, state,
httpsInterface: {host, port, username, password}, isReceiverNode, workerMetrics}``. The
leader answers 200 ``{leader: {id, httpsInterface, heartbeatInterval, heartbeatMaxRetry},
connectedManagers, joinedState}``; the next beat follows after the leader's
``heartbeatInterval`` (the leader dictates the cadence) and the managers it lists are
added to the ones this worker tries. A follower answers 301 naming the leader, which this
worker asks at once; 204: no leader yet.

**Self-fencing.** When no manager answered for ``leaderRetryInterval`` ms the worker
undeploys every app (the managers will have moved its children elsewhere, and two copies of
a child must not run), says why in the log and in its role (``GET /ha``, ``/health``), and
registers as ``NEW`` when a manager answers again. It starts empty for the same reason: what
it ran before a restart may run elsewhere now; the leader redeploys what it places here.

**State of a moved child.** With ``DBPersistenceStore`` a child deployed here continues
from the state the worker it ran on left in the persistence database, and that worker can
write nothing after it (:mod:`eddy.node.child_state`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from eddy.config import Endpoint, WorkerConfig
from eddy.node.deployment import DeploymentFolder
from eddy.node.registry import AppRegistry
from eddy.node.role import NodeRole

log = logging.getLogger("eddy.node.distributed")
TIMEOUT_S = 5.0
MAX_REDIRECTS = 3


class HeartbeatSender:
    """The worker's side of the heartbeat protocol, on its own thread."""

    def __init__(self, config: WorkerConfig, registry: AppRegistry, folder: DeploymentFolder,
                 set_role: Callable[[NodeRole], None],
                 metrics: Callable[[], dict[str, float]] = dict) -> None:
        deployment = config.model.deployment
        assert deployment.httpsInterface is not None
        self.node_id = config.node_id
        self.interface = deployment.httpsInterface
        self.receiver = deployment.isReceiverNode
        self.retry_s = deployment.leaderRetryInterval / 1000
        self.managers: list[Endpoint] = list(deployment.resourceManagers)
        self.verify = config.peer_verify()
        self.registry = registry
        self.folder = folder
        self._set_role = set_role
        self._metrics = metrics
        self.interval_s = min(self.retry_s / 2, 1.0)  # until a leader says otherwise
        self.state = "NEW"
        self.leader: Endpoint | None = None
        self.leader_id: str | None = None
        self._last_ok = time.monotonic()
        self._fenced = False
        self.last_fence: str | None = None
        """When and why this worker last undeployed everything (kept in its role)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eddy-heartbeat", daemon=True)
        self._publish("starting", "registering with the managers")

    def start(self) -> None:
        """Drops the apps of an earlier run, then heartbeats until :meth:`stop`."""
        left = self.folder.names()
        if left:
            self._undeploy_all()
            log.info("distributed worker: dropped %d apps of an earlier run (%s); the leader "
                     "deploys what this worker should run", len(left), ", ".join(left))
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            if not self._fenced and started - self._last_ok >= self.retry_s:
                self._fence(started - self._last_ok)  # e.g. this process was paused
            try:
                answered = self._beat()
            except Exception:
                log.exception("heartbeat failed")
                answered = False
            now = time.monotonic()
            if answered:
                self._last_ok = now
            elif not self._fenced and now - self._last_ok >= self.retry_s:
                self._fence(now - self._last_ok)
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def _candidates(self) -> list[Endpoint]:
        ordered = [self.leader] if self.leader is not None else []
        return ordered + [m for m in self.managers if m != self.leader]

    def _beat(self) -> bool:
        """One heartbeat round; True when the leader answered."""
        body = self._body()
        for manager in self._candidates():
            for _ in range(MAX_REDIRECTS):
                answer = self._post(manager, body)
                if answer is None:
                    break
                status, reply = answer
                if status == 200:
                    self._joined(manager, reply)
                    return True
                if status == 301 and reply.get("leader"):
                    manager = self._endpoint(reply["leader"], manager)
                    continue
                break  # 204: no leader yet; anything else: try the next manager
        return False

    def _body(self) -> dict[str, Any]:
        return {"id": self.node_id, "state": self.state,
                "httpsInterface": {"host": self.interface.host, "port": self.interface.port,
                                   "username": self.interface.username,
                                   "password": self.interface.password},
                "isReceiverNode": self.receiver, "workerMetrics": self._metrics()}

    def _post(self, manager: Endpoint, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        auth = (manager.username or "", manager.password or "") if manager.username else None
        try:
            with httpx.Client(verify=self.verify, timeout=TIMEOUT_S, auth=auth) as client:
                response = client.post(
                    f"https://{manager.host}:{manager.port}/resourceManager/heartbeat",
                    json=body)
        except httpx.HTTPError as error:
            log.debug("manager %s:%d: %s", manager.host, manager.port, error)
            return None
        try:
            reply = response.json() if response.content else {}
        except ValueError:
            reply = {}
        return response.status_code, reply if isinstance(reply, dict) else {}

    def _endpoint(self, described: dict[str, Any], via: Endpoint) -> Endpoint:
        """The endpoint of a manager the answer names; credentials from the configured entry
        of that host and port, else those of the manager that named it."""
        interface = described.get("httpsInterface") or described
        host, port = str(interface.get("host")), int(interface.get("port", 0))
        for known in self.managers:
            if (known.host, known.port) == (host, port):
                return known
        return Endpoint(host=host, port=port, username=via.username, password=via.password)

    def _joined(self, manager: Endpoint, reply: dict[str, Any]) -> None:
        leader = reply.get("leader") or {}
        interval_ms = leader.get("heartbeatInterval")
        if isinstance(interval_ms, int) and interval_ms > 0:
            self.interval_s = interval_ms / 1000
        for described in reply.get("connectedManagers") or []:
            endpoint = self._endpoint(described, manager)
            if all((m.host, m.port) != (endpoint.host, endpoint.port) for m in self.managers):
                self.managers.append(endpoint)
        joined = reply.get("joinedState")
        if joined == "NEW" and self.state == "EXISTS" and not self._fenced:
            # The leader had dropped this worker: its children run elsewhere by now.
            self._fence(None)
        if self.leader_id != leader.get("id") or self._fenced or self.state == "NEW":
            log.info("distributed worker: joined manager %s at %s:%d as %s", leader.get("id"),
                     manager.host, manager.port, joined)
        self.leader, self.leader_id = manager, leader.get("id")
        self.state = "EXISTS"
        self._fenced = False
        since = f"; last undeployed everything at {self.last_fence}" if self.last_fence \
            else ""
        self._publish("active", f"heartbeating to leader {self.leader_id}{since}")

    def _fence(self, silent_s: float | None) -> None:
        names = self.folder.names()
        why = ("the leader no longer knew this worker (it had been silent too long)"
               if silent_s is None else
               f"no manager answered for {silent_s:.1f} s (leaderRetryInterval "
               f"{self.retry_s * 1000:.0f} ms)")
        reason = (f"{why}: undeployed every app ({len(names)}: {', '.join(names) or 'none'})"
                  f" so that they can run elsewhere")
        log.warning("distributed worker: %s", reason)
        self._undeploy_all()
        self._fenced = True
        self.state = "NEW"
        self.last_fence = f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {reason}"
        self._publish("passive", reason)

    def _undeploy_all(self) -> None:
        """Deletes every app's file and has the registry stop them, without waiting (the
        heartbeat must go on; the registry stops them in order)."""
        for name in self.folder.names():
            self.folder.delete(name)
        self.registry.reconcile_all()

    def _publish(self, status: str, reason: str) -> None:
        self._set_role(NodeRole(mode="distributed", status=status,  # type: ignore[arg-type]
                                node_id=self.node_id, holder=self.leader_id, reason=reason))
