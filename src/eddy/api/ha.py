"""``GET /ha``: this node's role in its minimum-HA group, for operators and the dashboard.

The body is the node's :class:`~eddy.node.role.NodeRole` in camelCase — ``mode``,
``status``, ``clusterId``, ``nodeId``, ``epoch``, ``holder``, ``lastRenewalMs``, ``inSync``,
``lastSyncMs``, ``lagEvents``, ``reason`` — ``plannedApps``, the apps whose queries this
passive has planned ahead (a takeover only starts them; an app not listed is still being
warmed up, or cannot be, and a takeover plans it first: seconds more), and ``history``,
every role change so far as ``{atMs, status, epoch, holder, reason, lossMs, recoveredMs,
firstOutputMs}`` (empty on a single node, which is always active); a takeover's
``lossMs`` is the previous holder's last renewal, ``recoveredMs`` when this node's apps had
all become active and ``firstOutputMs`` when its first outputs were on the bus: the
failover's loss-to-ready and loss-to-output times.
Times are epoch milliseconds; ``lastRenewalMs`` is the cluster database's clock.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from eddy.api.bodies import R401
from eddy.node.worker import Worker


def router(worker: Worker) -> APIRouter:
    """The HA route, bound to one worker."""
    api = APIRouter(tags=["ha"], responses=R401)

    @api.get("/ha", summary="This node's HA role, lease and role changes")
    def ha_role() -> dict[str, Any]:
        role = worker.role()
        history = worker.ha.history() if worker.ha is not None else []
        return {"mode": role.mode, "status": role.status, "clusterId": role.cluster_id,
                "nodeId": role.node_id or worker.config.node_id, "epoch": role.epoch,
                "holder": role.holder, "lastRenewalMs": role.last_renewal_ms,
                "inSync": role.in_sync, "lastSyncMs": role.last_sync_ms,
                "lagEvents": role.lag_events, "reason": role.reason,
                "plannedApps": worker.ha.planned_apps() if worker.ha is not None else [],
                "history": [{"atMs": h["at_ms"], "status": h["status"], "epoch": h["epoch"],
                             "holder": h["holder"], "reason": h["reason"],
                             "lossMs": h["loss_ms"], "recoveredMs": h["recovered_ms"],
                             "firstOutputMs": h["first_output_ms"]}
                            for h in history]}

    return api
