"""The node's statistics: ``/statistics`` in WSO2 SP 4.4's shape, and ``/metrics`` in
Prometheus' text format.

``/statistics`` says what the status dashboard files the node under. A single node is in
``clusterID: "Single Node Deployments"`` with no ``haStatus`` (the dashboard would file a node
that has one as an HA cluster member); a member of an HA group or a distributed cluster says
``haStatus`` ``Active`` or ``Passive``, its group as ``clusterID``, and — passive — whether
and when its state last followed the active node's. Every field comes from the worker's
role snapshot (:meth:`Worker.role`), so one answer never mixes two roles.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from eddy.api import bodies
from eddy.api.bodies import R401
from eddy.engine.spark.status import spark_status
from eddy.node.metrics import WorkerCollector
from eddy.node.role import NodeRole
from eddy.node.worker import Worker

SINGLE_NODE_CLUSTER = "Single Node Deployments"
NOT_AVAILABLE = "n/a"


def wso2_time(epoch_s: float | None) -> str:
    """A time as WSO2 SP writes it (Java's ``E, dd MMM yyyy HH:mm:ss z``, in UTC), or
    ``n/a`` when there is none."""
    if epoch_s is None:
        return NOT_AVAILABLE
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%a, %d %b %Y %H:%M:%S UTC")


def role_fields(role: NodeRole, last_persisted: float | None) -> dict[str, Any]:
    """``haStatus``, ``clusterID``, ``isInSync`` and the sync and snapshot times for a role,
    with the fields WSO2 SP 4.4 leaves out (null in its Java bean) left out here too."""
    if role.mode == "single":
        # WSO2's bean leaves isInSync at its default, false, on a single node.
        return {"clusterID": SINGLE_NODE_CLUSTER, "lastSyncTime": NOT_AVAILABLE,
                "lastSnapshotTime": wso2_time(last_persisted), "isInSync": False}
    fields: dict[str, Any] = {"haStatus": "Active" if role.is_active else "Passive",
                              "clusterID": role.cluster_id or "", "isInSync": role.in_sync}
    if role.is_active:
        fields["lastSnapshotTime"] = wso2_time(last_persisted)
    else:
        fields["lastSyncTime"] = wso2_time(None if role.last_sync_ms is None
                                           else role.last_sync_ms / 1000)
    return fields


def router(worker: Worker) -> APIRouter:
    """The node routes, bound to one worker."""
    api = APIRouter(tags=["node"], responses=R401)
    metrics = CollectorRegistry(auto_describe=False)
    metrics.register(WorkerCollector(worker.config.node_id, worker.node, worker.registry,
                                     lambda: worker.last_persisted))

    @api.get("/statistics", response_model=bodies.NodeStatistics,
             response_model_exclude_none=True,
             summary="CPU, memory, uptime, status and HA role of the worker")
    def statistics() -> Any:
        sample = worker.node.sample()
        faulty = [v.name for v in worker.registry.views() if v.state == "faulty"]
        return {
            "workerMetrics": {"processCPU": sample.process_cpu, "systemCPU": sample.system_cpu,
                              "loadAverage": sample.load_average,
                              "memoryUsage": sample.memory_usage},
            "runningStatus": "Reachable", "isStatsEnabled": worker.stats_enabled,
            # WSO2's own values: the dashboard hides the load average on "windows"
            "osName": "windows" if platform.system() == "Windows" else "other",
            "message": f"faulty apps: {', '.join(faulty)}" if faulty else "",
            **role_fields(worker.role(), worker.last_persisted),
            "uptime": sample.uptime_ms,
            "memory": {"rss": sample.rss_bytes, "total": sample.total_memory_bytes,
                       "available": sample.available_memory_bytes},
            "spark": spark_status(),
        }

    @api.put("/statistics", response_model=bodies.ApiResponse,
             summary="Enable or disable the worker's statistics")
    def enable_statistics(body: bodies.StatsRequest) -> Any:
        worker.stats_enabled = body.level() != "OFF"
        state = "enabled" if worker.stats_enabled else "disabled"
        return bodies.success(f"Worker statistics {state}")

    @api.get("/metrics", summary="Prometheus metrics of the node and every app",
             response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}})
    def prometheus() -> Response:
        return Response(generate_latest(metrics), media_type=CONTENT_TYPE_LATEST)

    return api
