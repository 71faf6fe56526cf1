"""The pages about nodes: log-in, the node list with "Add node", every app on every node,
and the HA view."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from eddy.dashboard.ha import HaState, TimelineEntry, timeline
from eddy.dashboard.html import Markup, csrf_field, esc, join, page, table, tag
from eddy.dashboard.poller import AppState, NodeState
from eddy.dashboard.series import SeriesKey, SeriesStore
from eddy.dashboard.sessions import Session


def when(ms: int | None) -> str:
    """Epoch milliseconds as UTC time, or an en dash."""
    if ms is None:
        return "–"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(ms: float | None) -> str:
    if ms is None:
        return "–"
    seconds = int(ms / 1000)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return (f"{days}d " if days else "") + f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def percent(value: Any) -> str:
    return f"{float(value) * 100:.1f} %" if isinstance(value, int | float) else "–"


def rate(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}/s"


def login_page(token: str, error: str = "") -> str:
    alert = tag("p", error, class_="error", role="alert") if error else Markup("")
    form = Markup(
        f'<form method="post" action="/login" class="login">{alert}'
        f'<input type="hidden" name="csrf" value="{esc(token)}">'
        f'<label for="username">User name</label>'
        f'<input id="username" name="username" autocomplete="username" required autofocus>'
        f'<label for="password">Password</label>'
        f'<input id="password" name="password" type="password" '
        f'autocomplete="current-password" required>'
        f'<button type="submit">Log in</button></form>')
    return page("Log in", form, None)


def role(state: NodeState) -> str:
    """worker, plus the HA role when the node is in a group; or manager."""
    if state.runtime == "manager":
        leader = state.manager.leader if state.manager is not None else None
        return "manager" if leader is None else f"manager ({'leader' if leader else 'follower'})"
    if state.ha is not None:
        return f"worker ({state.ha.mode}, {state.ha.status})"
    ha = state.statistics.get("haStatus")
    return f"worker ({ha})" if ha and ha != "Active" else "worker"


def spark_cell(spark: Any) -> Markup:
    """The node's Spark (``/statistics``' ``spark``): version, master, active queries and
    UI port, or why there is none."""
    if not isinstance(spark, dict):
        return esc("–")
    if not spark.get("running"):
        return tag("span", "not started", class_="why", title="Spark starts with the "
                                                                 "node's first app")
    ui = f"UI :{spark['uiPort']}" if spark.get("uiPort") else "UI off"
    queries = spark.get("activeQueries", 0)
    return tag("span", f"Spark {spark.get('version', '?')} on {spark.get('master', '?')}, "
                       f"{queries} active {'query' if queries == 1 else 'queries'}, {ui}",
               class_="spark")


def _node_row(state: NodeState, session: Session) -> list[object]:
    stats = state.statistics
    metrics = stats.get("workerMetrics", {})
    reach = (tag("span", "reachable", class_="status-active") if state.reachable
             else tag("span", "unreachable", class_="status-faulty", title=state.error))
    if state.node.credentials_error is not None:
        reach = tag("span", "credentials unreadable", class_="status-faulty")
    remove = Markup("")
    if session.admin:
        remove = Markup(
            f'<form method="post" action="/nodes/remove">{csrf_field(session)}'
            f'<input type="hidden" name="node" value="{esc(state.node.key)}">'
            f'<button type="submit" aria-label="Remove {esc(state.node.key)}">Remove'
            f'</button></form>')
    apps = tag("a", f"{len(state.apps)} apps", href=f"/apps?node={quote(state.node.key)}")
    why = state.node.credentials_error or state.error
    return [state.node.key, role(state), join([reach, tag("div", why, class_="why")
                                               if why else ""]),
            percent(metrics.get("processCPU")), percent(metrics.get("systemCPU")),
            percent(metrics.get("memoryUsage")),
            f"{metrics['loadAverage']:.2f}" if "loadAverage" in metrics else "–",
            duration(stats.get("uptime")), when(state.last_seen_ms),
            state.system.get("eddyVersion", "–"), spark_cell(stats.get("spark")), apps, remove]


def nodes_page(states: Iterable[NodeState], session: Session, error: str = "") -> str:
    rows = [_node_row(s, session) for s in states]
    body = table(["Node", "Role", "Reachable", "Process CPU", "System CPU", "Memory",
                  "Load", "Uptime", "Last heartbeat", "Version", "Spark", "Apps", ""], rows,
                 "Nodes the dashboard watches", id="nodes") if rows else \
        tag("p", "No nodes yet: add a worker below.")
    if session.admin:
        alert = tag("p", error, class_="error", role="alert") if error else Markup("")
        body = join([body, Markup(
            f'<section aria-labelledby="add-title"><h2 id="add-title">Add node</h2>{alert}'
            f'<form method="post" action="/nodes" class="add-node">{csrf_field(session)}'
            f'<label for="address">Host and port</label>'
            f'<input id="address" name="address" placeholder="127.0.0.1:9443" required>'
            f'<label for="node-user">User name</label>'
            f'<input id="node-user" name="username" value="admin" required>'
            f'<label for="node-password">Password</label>'
            f'<input id="node-password" name="password" type="password" required>'
            f'<button type="submit">Add node</button></form></section>')])
    return page("Nodes", join([Markup('<div data-refresh="5"></div>'), body]), session,
                "/nodes")


def status_cell(app: AppState) -> Markup:
    """The status, in red with the error's line and column when faulty."""
    label = tag("span", app.status, class_=f"status-{app.status}")
    if app.error is None:
        return label
    where = ""
    if app.error.get("line") is not None:
        where = f"line {app.error['line']}, column {app.error.get('column', 0)}: "
    return join([label, tag("div", f"{where}{app.error.get('message', '')}",
                            class_="status-faulty app-error")])


def apps_page(states: Iterable[NodeState], series: SeriesStore, session: Session,
              only: str | None = None) -> str:
    rows = []
    for state in states:
        if only is not None and state.node.key != only:
            continue
        for app in state.apps:
            key = state.node.key
            link = tag("a", app.name, href=f"/apps/{quote(key)}/{quote(app.name)}")
            rows.append([link, key, status_cell(app), duration(app.age_ms),
                         rate(series.latest(SeriesKey(key, app.name, "",
                                                      "events_in_total_rate"))),
                         rate(series.latest(SeriesKey(key, app.name, "",
                                                      "events_out_total_rate")))])
    body = table(["App", "Node", "Status", "Age", "Events in", "Events out"], rows,
                 "Apps on every node", id="apps") if rows else tag("p", "No apps deployed.")
    return page("Apps", join([Markup('<div data-refresh="5"></div>'), body]), session, "/apps")


def _ha_row(key: str, ha: HaState) -> list[object]:
    lag = "–" if ha.lag_events is None else f"{ha.lag_events:,} events"
    sync = {True: "in sync", False: "behind", None: "–"}[ha.in_sync]
    return [key, ha.node_id, ha.cluster_id or "–", ha.mode,
            tag("span", ha.status, class_=f"status-{ha.status.lower()}"), ha.holder or "–",
            ha.epoch, when(ha.last_renewal_ms), sync, when(ha.last_sync_ms), lag,
            ", ".join(ha.planned_apps) or "–", ha.reason or "–"]


def _recovery(entry: TimelineEntry) -> Markup:
    """A takeover's measured times from the loss of the previous holder to its apps active
    and to its first output (or that they have not come yet)."""
    if entry.loss_ms is None:
        return Markup("")
    active = "apps not all active yet" if entry.recovery_ms is None \
        else f"loss → apps active: {entry.recovery_ms / 1000:.1f} s"
    output = "no output yet" if entry.output_ms is None \
        else f"loss → first output: {entry.output_ms / 1000:.1f} s"
    return tag("span", f" — {active}; {output}", class_="recovery")


def ha_page(states: Iterable[NodeState], session: Session) -> str:
    states = list(states)
    with_ha = [(s.node.key, s.ha) for s in states if s.ha is not None]
    parts: list[str] = []
    if with_ha:
        parts.append(table(["Node", "Node id", "Group", "Mode", "Status", "Lease holder",
                            "Epoch", "Last renewal", "Sync", "Last sync", "Passive lag",
                            "Planned ahead", "Reason"], [_ha_row(k, h) for k, h in with_ha],
                           "High availability of each node", id="ha"))
        entries = timeline(h for _, h in with_ha)
        parts.append(tag("h2", "Failover timeline", id="timeline-title"))
        parts.append(Markup('<ol class="timeline" aria-labelledby="timeline-title">') + join(
            tag("li", join([
                f"{when(e.at_ms)} — {e.node_id} became {e.status} (epoch {e.epoch}, "
                f"holder {e.holder or '–'}){': ' + e.reason if e.reason else ''}",
                _recovery(e)]), class_="failover" if e.failover else None)
            for e in entries) + Markup("</ol>"))
    else:
        parts.append(tag("p", "No node reports high availability (GET /ha)."))
    faults = [(s.node.key, s.ha_error) for s in states if s.ha_error]
    if faults:
        parts.append(join(tag("p", f"{k}: {e}", class_="error") for k, e in faults))
    return page("High availability", join([Markup('<div data-refresh="5"></div>'), *parts]),
                session, "/ha")


def error_page(message: str) -> str:
    return page("Cannot show this page", tag("p", message, class_="error", role="alert"),
                None)
