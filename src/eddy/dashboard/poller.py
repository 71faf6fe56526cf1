"""Polls every node every few seconds, server-side, and keeps what it read.

Per node: ``/statistics`` (CPU, memory, load, uptime, HA status), ``/system-details``,
``/siddhi-apps/statistics`` (each app's status), the ``/status`` of faulty apps (their
error's line and column), ``/metrics`` (into :class:`SeriesStore`) and ``/ha``. A node that
does not answer is shown unreachable with the reason; its last figures stay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eddy.dashboard.cluster import ManagerState, ParentState
from eddy.dashboard.ha import HaFormatError, HaState, parse_ha
from eddy.dashboard.node_client import NodeClient, NodeUnreachable
from eddy.dashboard.nodes import Node
from eddy.dashboard.series import SeriesStore, parse_metrics, record_samples

log = logging.getLogger("eddy.dashboard.poller")


@dataclass(frozen=True)
class AppState:
    """One app on one node: status and, when faulty, its error."""

    name: str
    status: str
    age_ms: int
    error: dict[str, Any] | None = None


@dataclass
class NodeState:
    """What the last poll of a node found."""

    node: Node
    reachable: bool = False
    error: str = "not polled yet"
    last_seen_ms: int | None = None
    statistics: dict[str, Any] = field(default_factory=dict)
    system: dict[str, Any] = field(default_factory=dict)
    apps: list[AppState] = field(default_factory=list)
    ha: HaState | None = None
    ha_error: str | None = None
    runtime: str | None = None
    """``worker`` or ``manager`` (``/nodeDetails/runTime``), read once."""
    manager: ManagerState | None = None


def now_ms() -> int:
    return int(time.time() * 1000)


class Poller:
    """The polling loop and its findings."""

    def __init__(self, nodes: Callable[[], list[Node]], interval_s: float) -> None:
        self._nodes = nodes
        self.interval_s = interval_s
        self.series = SeriesStore()
        self.states: dict[str, NodeState] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def poke(self) -> None:
        """Polls now (after a node was added or an app deployed)."""
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self.poll_all()
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self.interval_s)
            except TimeoutError:
                pass

    async def poll_all(self) -> None:
        nodes = self._nodes()
        keys = {n.key for n in nodes}
        for key in [k for k in self.states if k not in keys]:
            del self.states[key]
            self.series.forget(key)
        await asyncio.gather(*(self.poll(node) for node in nodes))

    async def poll(self, node: Node) -> NodeState:
        state = self.states.get(node.key)
        if state is None or state.node != node:
            state = self.states[node.key] = NodeState(node)
        client = NodeClient(node)
        try:
            await self._read(client, state)
            state.reachable, state.error, state.last_seen_ms = True, "", now_ms()
        except NodeUnreachable as error:
            state.reachable, state.error = False, str(error)
        except Exception as error:  # a node's odd answer must not stop the loop
            log.exception("polling %s", node.key)
            state.reachable, state.error = False, f"{type(error).__name__}: {error}"
        finally:
            await client.close()
        return state

    async def _read(self, client: NodeClient, state: NodeState) -> None:
        if state.runtime is None:
            state.runtime = (await client.text("/nodeDetails/runTime")).strip()
        if state.runtime == "manager":
            state.manager = await self._read_manager(client)
            return
        state.statistics = await client.json("/statistics", {})
        if not state.system:
            state.system = await client.json("/system-details", {})
        listed = await client.json("/siddhi-apps/statistics", [])
        apps = []
        for entry in listed:
            error = None
            if entry.get("status") == "faulty":
                status = await client.json(f"/siddhi-apps/{entry['appName']}/status", {})
                error = status.get("error") or {"message": status.get("message", "")}
            apps.append(AppState(entry["appName"], entry["status"], int(entry.get("age", 0)),
                                 error))
        state.apps = apps
        at = now_ms()
        record_samples(self.series, state.node.key, at, parse_metrics(await client.text(
            "/metrics")))
        state.ha, state.ha_error = None, None
        body = await client.json("/ha")
        if body is not None:
            try:
                state.ha = parse_ha(body)
            except HaFormatError as error:
                state.ha_error = str(error)

    @staticmethod
    async def _read_manager(client: NodeClient) -> ManagerState:
        found = ManagerState()
        for name in await client.json("/siddhi-apps", []):
            status = await client.json(f"/siddhi-apps/{name}/status", {})
            found.parents.append(ParentState(name, status.get("status", "?"),
                                             status.get("message", "")))
        found.children = await client.json("/managers/siddhi-apps", [])
        found.workers = await client.json(
            "/resourceClusterWorkers/clusteredWorkerNodeDetails", {})
        found.events = await client.json("/managers/schedule-events", [])
        for parent in found.parents:
            found.lags[parent.name] = await client.json(
                f"/managers/siddhi-apps/{parent.name}/topics", [])
        answer = await client.request("GET", "/managers/isActive")
        found.leader = answer.status_code == 200
        return found
