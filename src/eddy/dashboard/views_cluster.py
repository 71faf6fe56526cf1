"""The distributed view: per manager, each parent app → its execution groups → child
instances → the workers they run on, the bus topics between the children, waiting apps
with the reason, the manager's workers (to add as nodes) and its scheduling events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eddy.dashboard.cluster import ManagerState, topics
from eddy.dashboard.html import Markup, csrf_field, esc, join, page, table, tag
from eddy.dashboard.poller import NodeState
from eddy.dashboard.sessions import Session
from eddy.dashboard.views_nodes import when


def _worker_cell(child: dict[str, Any], known: set[str]) -> Markup:
    if not child.get("deployedNodeId"):
        return tag("span", f"waiting: {child.get('waitingReason') or 'not placed'}",
                   class_="status-waiting")
    address = f"{child.get('deployedNodeHost')}:{child.get('deployedNodePort')}"
    label = f"{child['deployedNodeId']} ({address})"
    if address in known:
        return tag("a", label, href=f"/apps?node={address}")
    return esc(label)


def _parent(manager: ManagerState, name: str, status: str, reason: str,
            known: set[str]) -> Markup:
    children = [c for c in manager.children if c.get("parentAppName") == name]
    shown = "active" if status == "active" else "waiting"
    head = tag("h3", join([name, " ", tag("span", shown, class_=f"status-{shown}")]),
               id=f"parent-{name}")
    why = tag("p", f"Waiting: {reason}", class_="why waiting-reason") if reason and \
        status != "active" else Markup("")
    rows = [[c.get("groupName", ""), c.get("childAppName", ""),
             "receiver" if c.get("isReceiver") else "resource", _worker_cell(c, known),
             when(c.get("lastPingTimeStamp"))] for c in children]
    groups = table(["Execution group", "Child app", "Kind", "Worker", "Last heartbeat"], rows,
                   f"Child apps of {name} and the workers they run on",
                   class_="children", data_parent=name)
    links = topics(children, manager.lags.get(name))
    topic_table = table(["Topic", "Written by", "Read by (lag)"],
                        [[t.topic, ", ".join(t.producers) or "(a source)",
                          ", ".join(f"{c} ({'?' if lag is None else f'{lag:,} events'})"
                                    for c, lag in zip(t.consumers, t.lags))
                          or "(a sink or nobody)"] for t in links],
                        f"Bus topics of {name}", class_="topics") if links else Markup("")
    return tag("section", join([head, why, groups, topic_table]), class_="parent",
               aria_labelledby=f"parent-{name}")


def _manager(state: NodeState, session: Session, known: set[str]) -> Markup:
    manager = state.manager
    assert manager is not None
    role = {True: "leader", False: "follower", None: "?"}[manager.leader]
    title = tag("h2", f"Manager {state.node.key} ({role})")
    if not state.reachable:
        return join([title, tag("p", state.error, class_="error")])
    parents = [_parent(manager, p.name, p.status, p.reason, known) for p in manager.parents]
    workers = [[n, f"{w.get('host')}:{w.get('port')}",
                "receiver" if w.get("isReceiverNode") else "resource",
                when(w.get("lastPingTimeStamp")),
                "watched" if f"{w.get('host')}:{w.get('port')}" in known else "not added"]
               for n, w in manager.workers.items()]
    parts: list[str] = [title, join(parents) if parents else tag("p", "No parent apps.")]
    parts.append(table(["Worker", "Address", "Kind", "Last heartbeat", "Dashboard"], workers,
                       f"Workers of manager {state.node.key}", class_="workers")
                 if workers else tag("p", "No worker has joined."))
    if session.admin and any(r[-1] == "not added" for r in workers):
        parts.append(Markup(
            f'<form method="post" action="/nodes/discover">{csrf_field(session)}'
            f'<input type="hidden" name="node" value="{esc(state.node.key)}">'
            f'<button type="submit">Add the workers of {esc(state.node.key)}</button>'
            f'</form>'))
    events = [tag("li", f"{when(e.get('atMs'))} — {e.get('kind')}"
                        f"{' ' + e['app'] if e.get('app') else ''}: {e.get('message', '')}",
                  class_=f"event-{e.get('kind')}") for e in reversed(manager.events)]
    parts.append(tag("h3", "Scheduling events", id=f"events-{state.node.key}"))
    parts.append(tag("ol", join(events), class_="timeline events",
                     aria_labelledby=f"events-{state.node.key}") if events
                 else tag("p", "No scheduling events yet."))
    return tag("section", join(parts), class_="manager")


def cluster_page(states: Iterable[NodeState], session: Session) -> str:
    states = list(states)
    known = {s.node.key for s in states}
    managers = [s for s in states if s.manager is not None]
    body = join(_manager(s, session, known) for s in managers) if managers else tag(
        "p", "No manager among the nodes: add one (its API port, 9543 by default).")
    return page("Distributed apps", join([Markup('<div data-refresh="5"></div>'), body]),
                session, "/cluster")
