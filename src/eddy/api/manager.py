"""The manager API (HTTPS, 9543 by default), in WSO2 SP's paths, bodies and codes (digest
§5.1, §5.3, §2.3).

* ``/siddhi-apps`` — parent apps: ``POST`` (201, 409), ``PUT`` (200, 201), ``GET``,
  ``GET /{app}``, ``GET /{app}/status`` (``faulty`` with the faults of a file of the
  manager's deployment folder), ``DELETE /{app}``. A faulty app is a 400 with its
  line and column, exactly as on a worker; the app is split and placed before the answer.
* ``/managers`` (``haStatus``, ``groupId``), ``/managers/isActive``,
  ``/managers/siddhi-apps[/{app}]`` (the child apps and where they run; a waiting child
  carries the reason), ``/managers/siddhi-apps-execution/{app}`` (the parent's text),
  ``/resourceClusterWorkers[/clusteredWorkerNodeDetails]``, ``/nodeDetails/runTime``,
  ``/managers/schedule-events`` (workers joined and lost, children placed, apps waiting),
  ``/managers/siddhi-apps/{app}/topics`` (each child's lag on the topics it reads).
* ``POST /resourceManager/heartbeat`` — the workers' heartbeat: 200 from the leader, 301
  naming the leader from a follower, 204 while there is no leader.

Any manager answers reads from the manager database. A change sent to a follower is
redirected to the leader with 307, which keeps the method and the body (``curl -L``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel

from eddy.api import bodies, errors
from eddy.api.app import build_api
from eddy.api.bodies import R401, R404
from eddy.api.siddhi_apps import R400, TEXT_BODY, app_text, one_line_hint, validated_name
from eddy.cluster.manager import AppExists, Manager, NotLeader
from eddy.lang import SiddhiAppError

DESCRIPTION = """The manager API of WSO2 Stream Processor's fully distributed deployment,
served by eddy: deploy parent Siddhi apps (text/plain), see their child apps and where they
run, and the workers' heartbeat. Basic auth with a user of `auth.configs`."""


class Interface(BaseModel):
    host: str
    port: int
    username: str | None = None
    password: str | None = None


class NodeConfig(BaseModel):
    """A worker's heartbeat (WSO2's ``NodeConfig``)."""

    id: str
    state: str = "NEW"
    httpsInterface: Interface
    isReceiverNode: bool = False
    workerMetrics: dict[str, float] | None = None


def _to_leader(manager: Manager, request: Request) -> Response:
    """307 to the same path on the leader; 503 when no manager leads now."""
    leader = manager.leader()
    if leader is None:
        return JSONResponse(errors.worker_error(503, "no manager leads the group now; retry "
                                                     "in a moment"), 503)
    location = f"https://{leader['host']}:{leader['port']}{request.url.path}"
    if request.url.query:
        location += f"?{request.url.query}"
    return JSONResponse({"type": "redirect", "message": f"manager {leader['id']} leads: "
                                                        f"send changes to {location}"},
                        307, {"Location": location})


def apps_router(manager: Manager) -> APIRouter:
    """``/siddhi-apps`` for parent apps."""
    api = APIRouter(prefix="/siddhi-apps", tags=["siddhi-apps"], responses=R401)

    async def save(request: Request, *, replace: bool) -> Response:
        if not manager.is_leader:
            return _to_leader(manager, request)
        text = await app_text(request)
        if isinstance(text, JSONResponse):
            return text
        name = await run_in_threadpool(validated_name, text)
        if isinstance(name, JSONResponse):
            return name
        try:
            created = await run_in_threadpool(manager.submit, text, name, replace=replace)
        except AppExists:
            return bodies.conflict("There is a Siddhi App already exists with same name")
        except SiddhiAppError as error:
            return bodies.validation_error(error, one_line_hint(text))
        except NotLeader:
            return _to_leader(manager, request)
        if created:
            return bodies.success("Siddhi App saved successfully and will be deployed in next "
                                  "deployment cycle", 201, {"Location": f"siddhi-apps/{name}"})
        return bodies.success("Siddhi App updated successfully and will be deployed in next "
                              "deployment cycle")

    @api.post("", status_code=201, openapi_extra=TEXT_BODY,
              summary="Deploy a parent app: split into child apps and placed on workers",
              responses={201: {"model": bodies.ApiResponse},
                         409: {"model": bodies.ApiResponse}, **R400})
    async def post_app(request: Request) -> Response:
        return await save(request, replace=False)

    @api.put("", openapi_extra=TEXT_BODY, summary="Deploy or replace a parent app",
             responses={200: {"model": bodies.ApiResponse},
                        201: {"model": bodies.ApiResponse}, **R400})
    async def put_app(request: Request) -> Response:
        return await save(request, replace=True)

    @api.get("", summary="Names of the parent apps", response_model=list[str])
    def list_apps(isActive: bool | None = None) -> list[str]:
        return [name for name, app in manager.apps().items()
                if isActive is None or (app.status == "deployed") == isActive]

    @api.get("/{app}", summary="The parent app's text", response_model=bodies.ContentResponse,
             responses=R404)
    def get_app(app: str) -> Any:
        found = manager.apps().get(app)
        return bodies.not_found(app) if found is None else {"content": found.text}

    @api.get("/{app}/status", summary="active (every child placed) or inactive (waiting, "
                                      "with the reason)", responses=R404)
    def app_status(app: str) -> Any:
        found = manager.apps().get(app)
        fault = manager.folder.faults.get(app)
        if fault is not None:  # a file of the deployment folder that cannot be deployed
            return {"status": "faulty", "message": fault}
        if found is None:
            return bodies.not_found(app)
        if found.status == "deployed":
            return {"status": "active"}
        return {"status": "inactive", "message": manager.waiting_reason(app) or found.reason}

    @api.delete("/{app}", summary="Undeploy every child app and delete the parent",
                responses=R404)
    async def delete_app(app: str, request: Request) -> Response:
        if not manager.is_leader:
            return _to_leader(manager, request)
        try:
            removed = await run_in_threadpool(manager.remove, app)
        except NotLeader:
            return _to_leader(manager, request)
        return Response(status_code=200) if removed else bodies.not_found(app)

    return api


def _child(manager: Manager, child: Any, workers: dict[str, Any],
           reasons: dict[str, str]) -> dict[str, Any]:
    worker = workers.get(child.node_id) if child.node_id else None
    body: dict[str, Any] = {
        "parentAppName": child.parent, "groupName": child.group,
        "childAppName": child.name, "siddhiApp": child.text,
        "deployedNodeHost": worker.host if worker else None,
        "deployedNodePort": str(worker.port) if worker else None,
        "deployedNodeId": child.node_id if worker else None,
        "deployedNodeState": "EXISTS" if worker else None,
        "lastPingTimeStamp": manager.last_seen_ms(child.node_id) if worker else None,
        "failedPingAttempts": 0 if worker else None,
        "version": child.version, "isReceiver": child.receiver}
    if worker is None:
        body["waitingReason"] = reasons.get(child.parent, "")
    return body


def cluster_router(manager: Manager) -> APIRouter:
    """``/managers…``, ``/resourceClusterWorkers…`` and ``/nodeDetails/runTime``."""
    api = APIRouter(tags=["managers"], responses=R401)

    def children(parent: str | None) -> list[dict[str, Any]]:
        workers = manager.workers()
        reasons = {n: manager.waiting_reason(n) or a.reason for n, a in manager.apps().items()
                   if a.status != "deployed"}
        return [_child(manager, c, workers, reasons) for c in manager.children(parent)]

    @api.get("/managers", summary="Whether this manager leads, and its group")
    def managers() -> Response:
        if not manager.clustered:
            return Response(status_code=204)
        leader = manager.leader()
        return JSONResponse({"haStatus": "Active" if manager.is_leader else "pasive",
                             "groupId": manager.group_id, "nodeId": manager.node_id,
                             "leader": leader, "epoch": manager.epoch,
                             "connectedManagers": manager.connected_managers()})

    @api.get("/managers/isActive", summary="200 on the leader, 404 on the others",
             response_class=PlainTextResponse)
    def is_active() -> PlainTextResponse:
        if manager.is_leader:
            return PlainTextResponse(f"manager {manager.node_id} is the active (leader) "
                                     f"manager of group {manager.group_id}")
        return PlainTextResponse(f"manager {manager.node_id} is not the active manager", 404)

    @api.get("/managers/siddhi-apps", summary="Every child app and where it runs")
    def all_children() -> list[dict[str, Any]]:
        return children(None)

    @api.get("/managers/siddhi-apps/{app}", summary="The child apps of one parent app",
             responses=R404)
    def app_children(app: str) -> Any:
        if app not in manager.apps():
            return bodies.not_found(app)
        return children(app)

    @api.get("/managers/siddhi-apps/{app}/topics", responses=R404,
             summary="Each child's lag on the bus topics it reads: heads against its "
                     "committed positions, in events")
    def app_topics(app: str) -> Any:
        if app not in manager.apps():
            return bodies.not_found(app)
        return manager.topic_lags(app)

    @api.get("/managers/siddhi-apps-execution/{app}", response_class=PlainTextResponse,
             summary="The parent app's text, as deployed", responses=R404)
    def execution(app: str) -> Response:
        found = manager.apps().get(app)
        return bodies.not_found(app) if found is None else PlainTextResponse(found.text)

    @api.get("/managers/schedule-events",
             summary="The latest scheduling events of this manager: leads, workers joined "
                     "and lost, children placed and rescheduled, apps waiting and why")
    def schedule_events() -> list[dict[str, Any]]:
        return manager.schedule_events()

    @api.get("/resourceClusterWorkers", summary="How many resource workers are up")
    def resource_count() -> Response:
        count = sum(1 for w in manager.workers().values() if not w.receiver)
        return JSONResponse(count) if count else Response(status_code=204)

    @api.get("/resourceClusterWorkers/clusteredWorkerNodeDetails",
             summary="Every worker: interface, kind and last heartbeat")
    def worker_details() -> dict[str, Any]:
        return {n: {"host": w.host, "port": w.port, "isReceiverNode": w.receiver,
                    "lastPingTimeStamp": manager.last_seen_ms(n)}
                for n, w in sorted(manager.workers().items())}

    @api.get("/nodeDetails/runTime", response_class=PlainTextResponse,
             summary="What this node is: manager (plain text)")
    def run_time() -> PlainTextResponse:
        return PlainTextResponse("manager")

    return api


def heartbeat_router(manager: Manager) -> APIRouter:
    """``POST /resourceManager/heartbeat``."""
    api = APIRouter(tags=["resourceManager"], responses=R401)

    @api.post("/resourceManager/heartbeat", summary="A worker's heartbeat (WSO2's NodeConfig)")
    async def heartbeat(node: NodeConfig) -> Response:
        interface = node.httpsInterface
        try:
            joined = await run_in_threadpool(
                manager.heartbeat, node.id, node.state, interface.host, interface.port,
                interface.username, interface.password, node.isReceiverNode)
        except NotLeader:
            leader = manager.leader()
            if leader is None:
                return Response(status_code=204)
            body = {"leader": {"id": leader["id"], "httpsInterface": {
                "host": leader["host"], "port": leader["port"]}},
                "connectedManagers": None, "joinedState": None}
            return JSONResponse(body, 301, {
                "Location": f"https://{leader['host']}:{leader['port']}"
                            f"/resourceManager/heartbeat"})
        return JSONResponse({
            "leader": {"id": manager.node_id,
                       "httpsInterface": {"host": manager.host, "port": manager.port},
                       "heartbeatInterval": int(manager.interval_s * 1000),
                       "heartbeatMaxRetry": manager.heartbeat_max_retry},
            "connectedManagers": manager.connected_managers(), "joinedState": joined})

    return api


def health_router(manager: Manager) -> APIRouter:
    """``GET /health`` (no credentials): 200 on the leader, 503 on a follower."""
    api = APIRouter(tags=["health"])

    @api.get("/health", summary="leader (200) or follower (503); needs no credentials")
    def health() -> JSONResponse:
        if manager.is_leader:
            return JSONResponse({"status": "active"})
        leader = manager.leader()
        who = f"; manager {leader['id']} leads" if leader else "; no manager leads now"
        return JSONResponse({"status": "passive",
                             "message": f"this manager follows{who}"}, 503)

    return api


def create_manager_app(manager: Manager) -> FastAPI:
    """The manager API of one manager."""
    return build_api(manager.config, "eddy manager API", DESCRIPTION, errors.worker_error,
                     [apps_router(manager), cluster_router(manager), heartbeat_router(manager)],
                     [health_router(manager)])
