"""The node's own endpoints: ``/statistics`` and ``/system-details`` in WSO2 SP's shapes
(digest §5.4), and ``/metrics`` in Prometheus' text format."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from eddy import __version__
from eddy.api import bodies
from eddy.api.bodies import R401
from eddy.node.metrics import WorkerCollector
from eddy.node.worker import Worker


def _time(epoch_s: float | None) -> str:
    if epoch_s is None:
        return ""
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds")


def router(worker: Worker) -> APIRouter:
    """The node routes, bound to one worker."""
    api = APIRouter(tags=["node"], responses=R401)
    metrics = CollectorRegistry(auto_describe=False)
    metrics.register(WorkerCollector(worker.config.node_id, worker.node, worker.registry,
                                     lambda: worker.last_persisted))

    @api.get("/statistics", response_model=bodies.NodeStatistics,
             summary="CPU, memory, uptime and status of the worker")
    def statistics() -> Any:
        sample = worker.node.sample()
        faulty = [v.name for v in worker.registry.views() if v.state == "faulty"]
        return {
            "workerMetrics": {"processCPU": sample.process_cpu, "systemCPU": sample.system_cpu,
                              "loadAverage": sample.load_average,
                              "memoryUsage": sample.memory_usage},
            "haStatus": "Active", "runningStatus": "Reachable",
            "isStatsEnabled": worker.stats_enabled,
            "clusterID": worker.config.model.cluster.groupId or "Non Clusters",
            "lastSyncTime": "n/a", "lastSnapshotTime": _time(worker.last_persisted),
            "osName": sample.os_name, "isInSync": True,
            "message": f"faulty apps: {', '.join(faulty)}" if faulty else "",
            "uptime": sample.uptime_ms,
            "memory": {"rss": sample.rss_bytes, "total": sample.total_memory_bytes,
                       "available": sample.available_memory_bytes},
        }

    @api.put("/statistics", response_model=bodies.ApiResponse,
             summary="Enable or disable the worker's statistics")
    def enable_statistics(body: bodies.StatsRequest) -> Any:
        worker.stats_enabled = body.level() != "OFF"
        state = "enabled" if worker.stats_enabled else "disabled"
        return bodies.success(f"Worker statistics {state}")

    @api.get("/system-details", summary="The worker's software and operating system")
    def system_details() -> dict[str, Any]:
        return {"carbonId": worker.config.node_id, "eddyVersion": __version__,
                "pythonVersion": sys.version.split()[0],
                "pythonImplementation": platform.python_implementation(),
                "osName": platform.system(), "osVersion": platform.release(),
                "osArch": platform.machine(), "serverStartTime": _time(worker.node.started),
                "repoLocation": str(worker.config.data_dir)}

    @api.get("/metrics", summary="Prometheus metrics of the node and every app",
             response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}})
    def prometheus() -> Response:
        return Response(generate_latest(metrics), media_type=CONTENT_TYPE_LATEST)

    return api
