"""``eddy ha status``: who is active in a minimum-HA group, at which epoch, when the lease
was last renewed, how far the passive is behind and which apps it has not planned ahead yet
(a takeover plans those first: seconds more) — read from the cluster and persistence
databases named by a node's deployment.yaml, so it works with both nodes down too."""

from __future__ import annotations

from typing import Any

from eddy.config import WorkerConfig
from eddy.store.cluster_apps import AppCatalog
from eddy.store.connect import connect
from eddy.store.lease import NodeState, lease_tables_exist, node_states, read_lease
from eddy.store.revisions import CheckpointMirror


def group_status(config: WorkerConfig) -> dict[str, Any]:
    """The group's lease, nodes and apps as one JSON-ready mapping (times: the cluster
    database's clock, ms)."""
    if not config.is_ha:
        raise ValueError(f"{config.source}: not a minimum-HA node (cluster.config.enabled "
                         f"and deployment.config.type: ha)")
    cluster = config.model.cluster
    strategy = cluster.strategyConfig
    assert cluster.groupId is not None and strategy.datasource is not None
    engine = connect(config.datasource_url(strategy.datasource))
    ttl_ms = strategy.heartbeatInterval * strategy.heartbeatMaxRetry
    if not lease_tables_exist(engine):
        return {"groupId": cluster.groupId, "active": None, "epoch": 0, "nodes": [],
                "apps": [], "note": "no node of the group has started yet"}
    with engine.connect() as conn:
        lease = read_lease(conn, cluster.groupId)
        states = node_states(conn, cluster.groupId)
    persistence = config.model.persistence
    mirror = CheckpointMirror(connect(config.datasource_url(persistence.datasource)),
                              persistence.table, cluster.groupId)
    apps: list[dict[str, Any]] = []
    for name, app in sorted(AppCatalog(engine, cluster.groupId).apps().items()):
        if app.text is None:
            continue
        head = mirror.head(name)
        apps.append({"app": name, "revision": head.rev if head else 0,
                     "batchId": head.batch_id if head else None,
                     "epoch": head.epoch if head else None})
    nodes = []
    for node, seen in lease.members:
        state = states.get(node, NodeState("unknown", {}, None, 0))
        status, synced = state.status, state.revisions
        live = lease.now_ms - seen <= ttl_ms
        entry: dict[str, Any] = {"nodeId": node, "live": live, "lastSeenAgoMs":
                                 lease.now_ms - seen,
                                 "status": ("active" if node == lease.holder and
                                            not lease.expired(ttl_ms) else
                                            status if live else "down")}
        if entry["status"] == "passive":
            entry["lagBatches"] = {str(a["app"]): int(a["revision"]) - synced.get(str(a["app"]), 0)
                                   for a in apps}
            entry["lagEvents"] = state.lag_events
            entry["plannedApps"] = list(state.planned_apps)
        nodes.append(entry)
    return {"groupId": cluster.groupId,
            "active": None if lease.expired(ttl_ms) else lease.holder,
            "epoch": lease.epoch, "lastRenewalAgoMs": lease.now_ms - lease.renewed_ms
            if lease.renewed_ms else None, "leaseMs": ttl_ms, "nodes": nodes, "apps": apps}


def render(status: dict[str, Any]) -> str:
    """The status as lines for a terminal."""
    lines = [f"group {status['groupId']}: active {status['active'] or '(none)'}, "
             f"epoch {status['epoch']}"]
    if status.get("lastRenewalAgoMs") is not None:
        lines[0] += (f", lease renewed {status['lastRenewalAgoMs']} ms ago "
                     f"(lost after {status['leaseMs']} ms)")
    if status.get("note"):
        lines.append(status["note"])
    for node in status["nodes"]:
        line = f"  node {node['nodeId']}: {node['status']}, seen {node['lastSeenAgoMs']} ms ago"
        if "lagBatches" in node:
            behind = {a: n for a, n in node["lagBatches"].items() if n}
            line += ", in sync" if not behind else ", behind by " + ", ".join(
                f"{a} {n} micro-batch(es)" for a, n in sorted(behind.items()))
            if node.get("lagEvents") is not None:
                line += f", {node['lagEvents']} event(s) behind the active's committed position"
            unplanned = sorted(a["app"] for a in status["apps"]
                               if a["app"] not in node.get("plannedApps", ()))
            if unplanned:  # a takeover plans these first: seconds more
                line += ", not planned ahead yet: " + ", ".join(unplanned)
        lines.append(line)
    for app in status["apps"]:
        lines.append(f"  app {app['app']}: checkpoint revision {app['revision']}"
                     + (f" (micro-batch {app['batchId']}, epoch {app['epoch']})"
                        if app["batchId"] is not None else " (not run yet)"))
    return "\n".join(lines)
