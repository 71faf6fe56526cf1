"""The dashboard as one FastAPI application: pages, the JSON the script calls, static files.

Every page and call needs a session (``/login`` starts one); every change needs the
session's CSRF token (a form field, or the ``X-CSRF-Token`` header of the script's calls)
and, for changes to nodes or apps, a user in ``adminRole``. Responses forbid framing and
any script, style or image not served by the dashboard itself.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy.exc import SQLAlchemyError

from eddy import __version__
from eddy.dashboard import app_text, views_app, views_cluster, views_nodes
from eddy.dashboard.app_text import AppFacts
from eddy.dashboard.graph import graph_svg
from eddy.dashboard.history import MetricHistory
from eddy.dashboard.node_client import NodeClient, NodeUnreachable
from eddy.dashboard.nodes import Node, NodeError, open_node_store, parse_address
from eddy.dashboard.poller import Poller
from eddy.dashboard.series import SeriesKey
from eddy.dashboard.sessions import (
    CSRF_HEADER,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    Session,
    Sessions,
    same_token,
)
from eddy.dashboard.settings import DashboardSettings
from eddy.dashboard.simulator import SimulationError, Simulator, csv_events, event, post_event
from eddy.lang import SiddhiAppError
from eddy.store import connect

log = logging.getLogger("eddy.dashboard")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
STATIC = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
HOUR_MS = 3_600_000


class Refused(Exception):
    """A request without a session, CSRF token or admin role."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (the first value of each field)."""
    parsed = parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items()}


def create_app(settings: DashboardSettings) -> FastAPI:
    """The dashboard of ``settings``."""
    nodes = open_node_store(settings.nodes_db_url, settings.credentials_key_file)
    sessions = Sessions(settings.users)
    poller = Poller(nodes.all, settings.polling_interval_s)
    simulator = Simulator()
    history = (MetricHistory(connect(settings.metrics_db_url))
               if settings.metrics_db_url else None)
    login_tokens: dict[str, float] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        poller.start()
        yield
        await poller.stop()
        await simulator.stop()

    app = FastAPI(title="eddy dashboard", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def headers(request: Request,
                      call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(Refused)
    async def refused(request: Request, error: Refused) -> Response:
        return _refusal(request, error)

    def session_of(request: Request, change: bool = False, admin: bool = False) -> Session:
        session = sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            raise Refused(401, "log in first")
        if change:
            token = request.headers.get(CSRF_HEADER) or getattr(request.state, "csrf", None)
            if not same_token(token, session.csrf):
                raise Refused(403, "missing or wrong CSRF token; reload the page")
        if admin and not session.admin:
            raise Refused(403, f"user {session.user} may not change nodes or apps "
                               f"(not in the admin role)")
        return session

    async def form_session(request: Request, admin: bool = False) -> tuple[Session,
                                                                           dict[str, str]]:
        fields = await form(request)
        request.state.csrf = fields.get("csrf")
        return session_of(request, change=True, admin=admin), fields

    def node_of(key: str) -> Node:
        node = nodes.get(key)
        if node is None:
            raise Refused(404, f"no node {key}")
        return node

    # -- log-in ----------------------------------------------------------------------
    @app.get("/login", response_class=HTMLResponse)
    def login_form() -> Response:
        token = secrets.token_urlsafe(24)
        now = time.monotonic()
        for old in [t for t, at in login_tokens.items() if now - at > 600]:
            del login_tokens[old]
        login_tokens[token] = now
        response = HTMLResponse(views_nodes.login_page(token))
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, secure=True,
                            samesite="strict", max_age=600)
        return response

    @app.post("/login")
    async def login(request: Request) -> Response:
        fields = await form(request)
        token = request.cookies.get(LOGIN_COOKIE)
        if token is None or token not in login_tokens or not same_token(fields.get("csrf"),
                                                                          token):
            return RedirectResponse("/login", 303)
        started = sessions.log_in(fields.get("username", ""), fields.get("password", ""))
        if started is None:
            return HTMLResponse(views_nodes.login_page(token, "Wrong user name or password."),
                                401)
        del login_tokens[token]
        cookie, _ = started
        response = RedirectResponse("/nodes", 303)
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, secure=True,
                            samesite="strict")
        response.delete_cookie(LOGIN_COOKIE)
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        await form_session(request)
        sessions.log_out(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login", 303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    # -- pages -----------------------------------------------------------------------
    @app.get("/")
    def home() -> Response:
        return RedirectResponse("/nodes", 303)

    @app.get("/nodes", response_class=HTMLResponse)
    def nodes_page(request: Request) -> str:
        return views_nodes.nodes_page(_states(), session_of(request))

    @app.post("/nodes")
    async def add_node(request: Request) -> Response:
        session, fields = await form_session(request, admin=True)
        try:
            host, port = parse_address(fields.get("address", ""))
            if not fields.get("username"):
                raise NodeError("give the user name the dashboard logs in to the node with")
            node = nodes.add(host, port, fields["username"], fields.get("password", ""))
        except NodeError as error:
            return HTMLResponse(views_nodes.nodes_page(_states(), session, str(error)), 400)
        await poller.poll(node)
        return RedirectResponse("/nodes", 303)

    @app.post("/nodes/remove")
    async def remove_node(request: Request) -> Response:
        _, fields = await form_session(request, admin=True)
        nodes.remove(fields.get("node", ""))
        poller.poke()
        return RedirectResponse("/nodes", 303)

    @app.post("/nodes/discover")
    async def discover_nodes(request: Request) -> Response:
        """Adds every worker a manager lists, with the manager's credentials (the
        distributed deployment's nodes share ``auth.configs``)."""
        _, fields = await form_session(request, admin=True)
        manager = node_of(fields.get("node", ""))
        if manager.credentials_error is not None:
            raise Refused(409, manager.credentials_error)
        state = poller.states.get(manager.key)
        listed = state.manager.workers if state is not None and state.manager else {}
        for worker in listed.values():
            host, port = str(worker.get("host", "")), int(worker.get("port", 0))
            if nodes.get(f"{host}:{port}") is None:
                try:
                    nodes.add(host, port, manager.username, manager.password)
                except NodeError as error:
                    log.warning("cannot add %s:%s: %s", host, port, error)
        poller.poke()
        return RedirectResponse("/cluster", 303)

    def _states() -> list[Any]:
        known = nodes.all()
        return [poller.states[n.key] for n in known if n.key in poller.states]

    @app.get("/apps", response_class=HTMLResponse)
    def apps_page(request: Request, node: str | None = None) -> str:
        return views_nodes.apps_page(_states(), poller.series, session_of(request), node)

    @app.get("/apps/{node_key}/{app_name}", response_class=HTMLResponse)
    async def app_page(request: Request, node_key: str, app_name: str) -> str:
        session = session_of(request)
        node = node_of(node_key)
        state = poller.states.get(node.key) or await poller.poll(node)
        found = next((a for a in state.apps if a.name == app_name), None)
        if found is None:
            raise Refused(404, f"no app {app_name} on {node.key}")
        facts: AppFacts | None = None
        client = NodeClient(node)
        try:
            elements = await client.json(f"/siddhi-apps/{app_name}/elements", [])
            text = (await client.json(f"/siddhi-apps/{app_name}", {})).get("content", "")
        except NodeUnreachable as error:
            raise Refused(502, str(error)) from None
        finally:
            await client.close()
        try:
            facts = app_text.facts(text) if text else None
        except SiddhiAppError:
            facts = None
        queries = sorted(set(poller.series.queries(node.key, app_name))
                         | set(facts.operators if facts else ()))
        graph = graph_svg(elements, facts.operators if facts else None)
        return views_app.app_page(node.key, found, facts, graph, queries, session)

    @app.get("/editor", response_class=HTMLResponse)
    async def editor_page(request: Request, node: str | None = None,
                          app: str | None = None) -> str:
        session = session_of(request)
        text = views_app.NEW_APP
        if node and app:
            client = NodeClient(node_of(node))
            try:
                text = (await client.json(f"/siddhi-apps/{app}", {})).get("content", text)
            except NodeUnreachable as error:
                raise Refused(502, str(error)) from None
            finally:
                await client.close()
        return views_app.editor_page([n.key for n in nodes.all()], text, session, node)

    @app.get("/ha", response_class=HTMLResponse)
    def ha_page(request: Request) -> str:
        return views_nodes.ha_page(_states(), session_of(request))

    @app.get("/cluster", response_class=HTMLResponse)
    def cluster_page(request: Request) -> str:
        return views_cluster.cluster_page(_states(), session_of(request))

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC:
            return Response(status_code=404)
        data = resources.files("eddy.dashboard").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC[name],
                        headers={"Cache-Control": "no-cache"})

    # -- JSON for the script -----------------------------------------------------------
    async def body_of(request: Request, admin: bool = False) -> dict[str, Any]:
        session_of(request, change=True, admin=admin)
        data = await request.json()
        if not isinstance(data, dict):
            raise Refused(400, "the body should be a JSON object")
        return data

    @app.post("/api/validate")
    async def validate(request: Request) -> dict[str, Any]:
        text = str((await body_of(request)).get("text", ""))
        return {"errors": await asyncio.to_thread(app_text.validate, text)}

    @app.post("/api/explain")
    async def explain(request: Request) -> dict[str, Any]:
        text = str((await body_of(request)).get("text", ""))
        return await asyncio.to_thread(app_text.explain, text)

    @app.post("/api/deploy")
    async def deploy(request: Request) -> Response:
        data = await body_of(request, admin=True)
        client = NodeClient(node_of(str(data.get("node", ""))))
        try:
            response = await client.deploy(str(data.get("text", "")))
        except NodeUnreachable as error:
            return JSONResponse({"ok": False, "message": str(error)}, 502)
        finally:
            await client.close()
        body = response.json() if response.headers.get("content-type", "").startswith(
            "application/json") else {"message": response.text}
        poller.poke()
        return JSONResponse({"ok": response.status_code < 300, **body},
                            200 if response.status_code < 300 else response.status_code)

    @app.get("/api/series")
    async def series(request: Request, node: str, app: str) -> dict[str, Any]:
        session_of(request)
        figures = [f for _, names in views_app.CHARTS for f in names.split(",")]
        found = poller.series.select(node, app)
        data = {f: found.get(f, []) for f in figures}
        if history is not None:
            await _with_history(node, app, data)
        queries = {}
        for query in poller.series.queries(node, app):
            q = poller.series.select(node, app, query)
            queries[query] = {
                "events_in_total_rate": _last(q.get("events_in_total_rate")),
                "events_out_total_rate": _last(q.get("events_out_total_rate")),
                "events_out_total": poller.series.total(
                    SeriesKey(node, app, query, "events_out_total"))}
        totals = {f: poller.series.total(SeriesKey(node, app, "", f))
                  for f in ("events_in_total", "events_out_total", "errors_total")}
        return {"series": data, "queries": queries, "totals": totals}

    async def _with_history(node: str, app: str, data: dict[str, list[Any]]) -> None:
        assert history is not None
        state = poller.states.get(node)
        source = state.system.get("carbonId") if state else None
        if not source:
            return
        since = int(time.time() * 1000) - HOUR_MS
        try:
            old = await asyncio.to_thread(history.app_rates, source, app, since)
        except SQLAlchemyError as error:
            log.warning("cannot read the metrics history: %s", error)
            return
        for figure, points in old.items():
            live = data.get(figure, [])
            first = live[0][0] if live else None
            data[figure] = [p for p in points if first is None or p[0] < first] + live

    @app.post("/api/store-query")
    async def store_query(request: Request) -> Response:
        data = await body_of(request)
        return await _store_query(str(data.get("node", "")), str(data.get("app", "")),
                                  str(data.get("query", "")))

    async def _store_query(node_key: str, app_name: str, query: str) -> Response:
        client = NodeClient(node_of(node_key))
        try:
            response = await client.store_query(app_name, query)
        except NodeUnreachable as error:
            return JSONResponse({"message": str(error)}, 502)
        finally:
            await client.close()
        body = response.json()
        if response.status_code != 200:
            return JSONResponse(body, response.status_code)
        columns = [d["name"] for d in body.get("details", [])]
        return JSONResponse({"columns": columns, "records": body.get("records", []),
                             "query": query})

    @app.post("/api/aggregation")
    async def aggregation(request: Request) -> Response:
        data = await body_of(request)
        per = str(data.get("per", ""))
        if per not in views_app.GRANULARITIES:
            raise Refused(400, f"per should be one of {', '.join(views_app.GRANULARITIES)}")
        try:
            minutes = float(data.get("minutes", 60))
        except (TypeError, ValueError):
            raise Refused(400, "minutes should be a number") from None
        name = str(data.get("aggregation", ""))
        if not name.isidentifier():
            raise Refused(400, f"'{name}' is not an aggregation name")
        end = int(time.time() * 1000) + 1000
        start = end - int(minutes * 60_000)
        query = f'from {name} within {start}L, {end}L per "{per}" select *'
        return await _store_query(str(data.get("node", "")), str(data.get("app", "")), query)

    async def _target(data: dict[str, Any]) -> tuple[Any, Node]:
        node = node_of(str(data.get("node", "")))
        client = NodeClient(node)
        try:
            text = (await client.json(f"/siddhi-apps/{data.get('app', '')}", {})).get(
                "content", "")
        except NodeUnreachable as error:
            raise Refused(502, str(error)) from None
        finally:
            await client.close()
        try:
            facts = app_text.facts(text)
        except SiddhiAppError as error:
            raise Refused(400, f"the app is faulty: {error}") from None
        stream = str(data.get("stream", ""))
        target = next((i for i in facts.http_inputs if i.stream == stream), None)
        if target is None:
            raise Refused(400, f"{stream} has no HTTP source to send events to")
        return target, node

    @app.post("/api/simulate")
    async def simulate(request: Request) -> Response:
        data = await body_of(request, admin=True)
        target, node = await _target(data)
        values = [str(data.get(f"value:{target.stream}:{a}", "")) for a, _ in target.attributes]
        try:
            body = event(values, target, "event")
            async with _http() as client:
                await post_event(client, target, body, _auth(target, node))
        except SimulationError as error:
            return JSONResponse({"message": str(error)}, 400)
        return JSONResponse({"message": f"sent 1 event to {target.stream}", "event": body})

    @app.post("/api/simulate-csv")
    async def simulate_csv(request: Request) -> Response:
        data = await body_of(request, admin=True)
        target, node = await _target(data)
        try:
            events = csv_events(str(data.get("csv", "")), target)
            run = simulator.start(target, events, float(data.get("rate", 10)),
                                  _auth(target, node))
        except (SimulationError, ValueError) as error:
            return JSONResponse({"message": str(error)}, 400)
        return JSONResponse({"message": f"sending {run.total} events to {target.stream} at "
                                        f"{run.rate:g}/s", "simulation": run.to_json()})

    @app.get("/api/simulations/{run_id}")
    def simulation(request: Request, run_id: int) -> Response:
        session_of(request)
        run = simulator.runs.get(run_id)
        if run is None:
            return JSONResponse({"message": f"no simulation {run_id}"}, 404)
        return JSONResponse(run.to_json())

    return app


def _http() -> Any:
    import httpx

    return httpx.AsyncClient(timeout=30)


def _auth(target: Any, node: Node) -> tuple[str, str] | None:
    return (node.username, node.password) if target.basic_auth else None


def _last(points: list[Any] | None) -> float | None:
    return points[-1][1] if points else None


def _refusal(request: Request, refused: Refused) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"message": str(refused)}, refused.status)
    if refused.status == 401:
        return RedirectResponse("/login", 303)
    return HTMLResponse(views_nodes.error_page(str(refused)), refused.status)
