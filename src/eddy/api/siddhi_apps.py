"""``/siddhi-apps``: WSO2 SP's worker API for deploying and managing apps (digest §5.1).

``POST`` and ``PUT`` validate the app (parse, analysis, plan) before anything is written, so
a faulty app is a 400 with the fault's line and column and never reaches the deployment
folder; a valid one is written to ``<name>.siddhi`` and deployed asynchronously, as WSO2 SP's
file deployer does (its status reads ``inactive`` until it runs).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from eddy.api import bodies
from eddy.api.bodies import R401, R404, R500
from eddy.api.elements import app_elements
from eddy.engine.compile.app_check import check_app
from eddy.lang import SiddhiAppError
from eddy.node.deployment import BadAppName, check_name
from eddy.node.persistence import RevisionNotFound
from eddy.node.app_view import AppNotFound, AppNotRunning, StateMismatch
from eddy.node.worker import Worker

TEXT_BODY = {"requestBody": {"required": True, "content": {
    "text/plain": {"schema": {"type": "string"}}}}}
R400: dict[int | str, dict[str, Any]] = {400: {"description": "The app is not valid",
                                               "model": bodies.ErrorResponse}}
UNDEPLOY_WAIT_S = 120


ONE_LINE_HINT = ("the app arrived as a single line; if it was written on several, the "
                 "client joined them, as curl -d @file does: send it with curl --data-binary "
                 "@file, which keeps its line breaks")


def one_line_hint(text: str) -> str | None:
    """The hint for an app that arrived on one line (``curl -d`` strips line breaks, which
    glues ``insert into X`` to the next line's text or comments out the rest after ``--``)."""
    return ONE_LINE_HINT if "\n" not in text.strip() else None


def validated_name(text: str) -> str | JSONResponse:
    """The app's name when the app is valid, else the 400 response to send."""
    try:
        analyzed, _ = check_app(text)
    except SiddhiAppError as error:
        return bodies.validation_error(error, one_line_hint(text))
    name = analyzed.app.name
    if name is None:
        return bodies.invalid("the app has no @App:name('…') annotation; the worker names "
                              "its file after it", hint=one_line_hint(text))
    try:
        return check_name(name)
    except BadAppName as error:
        return bodies.invalid(str(error))


async def app_text(request: Request) -> str | JSONResponse:
    body = await request.body()
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        return bodies.invalid(f"the app is not UTF-8 text: {error.reason} at byte "
                              f"{error.start}")


def router(worker: Worker) -> APIRouter:
    """The routes, bound to one worker."""
    api = APIRouter(prefix="/siddhi-apps", tags=["siddhi-apps"], responses=R401)
    registry = worker.registry

    def save(text: str, *, replace: bool) -> JSONResponse:
        name = validated_name(text)
        if isinstance(name, JSONResponse):
            return name
        existed = worker.folder.exists(name) or name in registry.names()
        if existed and not replace:
            return bodies.conflict("There is a Siddhi App already exists with same name")
        try:
            worker.folder.write(name, text)
        except OSError as error:
            return bodies.server_error(f"cannot write {name}.siddhi: {error}")
        registry.reconcile(name, force=replace)
        if existed:
            return bodies.success("Siddhi App updated successfully and will be deployed in "
                                  "next deployment cycle")
        return bodies.success("Siddhi App saved successfully and will be deployed in next "
                              "deployment cycle", 201, {"Location": f"siddhi-apps/{name}"})

    @api.post("", status_code=201, openapi_extra=TEXT_BODY,
              summary="Deploy a new app (the app's text as text/plain)",
              responses={201: {"model": bodies.ApiResponse}, 409: {"model": bodies.ApiResponse},
                         **R400, **R500})
    async def post_app(request: Request) -> Response:
        text = await app_text(request)
        if isinstance(text, JSONResponse):
            return text
        return await run_in_threadpool(save, text, replace=False)

    @api.put("", openapi_extra=TEXT_BODY, summary="Deploy or replace an app",
             responses={200: {"model": bodies.ApiResponse}, 201: {"model": bodies.ApiResponse},
                        **R400, **R500})
    async def put_app(request: Request) -> Response:
        text = await app_text(request)
        if isinstance(text, JSONResponse):
            return text
        return await run_in_threadpool(save, text, replace=True)

    @api.get("", summary="Names of the deployed apps", response_model=list[str])
    def list_apps(isActive: bool | None = None) -> list[str]:
        return registry.names(active=isActive)

    @api.get("/statistics", summary="Every app's status and age",
             response_model=list[bodies.AppStatistics], responses=R404)
    def app_statistics(isActive: bool | None = None) -> Any:
        views = [v for v in registry.views()
                 if isActive is None or (v.state == "active") == isActive]
        if not views:
            return JSONResponse({"type": "not-found", "message": "There are no Siddhi Apps"},
                                404)
        now = int(time.time() * 1000)
        return [{"appName": v.name, "status": v.state, "age": max(0, now - v.deployed_at_ms),
                 "isStatEnabled": v.stat_level, "siddhiStatEnabledLevel": v.stat_level}
                for v in views]

    @api.put("/statistics", summary="Set the statistics level of every app",
             response_model=bodies.ApiResponse)
    def all_statistics(body: bodies.StatsRequest) -> Any:
        for name in registry.names():
            try:
                registry.set_stat_level(name, body.level())
            except AppNotFound:
                continue
        return bodies.success(f"Statistics level set to {body.level()} for every app")

    @api.delete("/revisions", summary="Delete the revisions of every app",
                response_model=bodies.ApiResponse, responses=R500)
    def clear_all(enabledRedeployment: bool = True) -> Any:
        for name in registry.names():
            try:
                registry.clear_revisions(name, enabledRedeployment)
            except AppNotFound:
                continue
            except Exception as error:
                return bodies.server_error(f"cannot clear the revisions of {name}: {error}")
        return bodies.success("All revisions deleted")

    @api.get("/{app}", summary="The app's text", response_model=bodies.ContentResponse,
             responses=R404)
    def get_app(app: str) -> Any:
        try:
            deployed = registry.get(app).text
        except AppNotFound:
            return bodies.not_found(app)
        return {"content": worker.folder.read(app) or deployed}

    @api.delete("/{app}", summary="Undeploy an app and delete its file",
                responses={**R404, **R500})
    def delete_app(app: str) -> Response:
        try:
            registry.get(app)
        except AppNotFound:
            return bodies.not_found(app)
        try:
            worker.folder.delete(app)
        except OSError as error:
            return bodies.server_error(f"cannot delete {app}.siddhi: {error}")
        registry.reconcile(app).result(timeout=UNDEPLOY_WAIT_S)
        return Response(status_code=200)

    @api.get("/{app}/status", summary="active, inactive or faulty",
             response_model=bodies.StatusResponse, response_model_exclude_none=True,
             responses=R404)
    def app_status(app: str) -> Any:
        try:
            view = registry.get(app)
        except AppNotFound:
            return bodies.not_found(app)
        body: dict[str, Any] = {"status": view.state}
        if view.note:
            body["message"] = view.note
        if view.error:
            body["error"] = view.error
            body["message"] = str(view.error.get("message", ""))
        return body

    @api.get("/{app}/elements", summary="The app's streams, queries and their wiring",
             response_model=list[dict[str, Any]], responses=R404)
    def elements(app: str) -> Any:
        try:
            view = registry.get(app)
        except AppNotFound:
            return bodies.not_found(app)
        return app_elements(view.analyzed) if view.analyzed is not None else []

    @api.put("/{app}/statistics", summary="Set the app's statistics level",
             response_model=bodies.ApiResponse, responses=R404)
    def set_statistics(app: str, body: bodies.StatsRequest) -> Any:
        try:
            registry.set_stat_level(app, body.level())
        except AppNotFound:
            return bodies.not_found(app)
        return bodies.success(f"Statistics level of {app} set to {body.level()}")

    @api.post("/{app}/backup", status_code=201, summary="Persist the app's state as a revision",
              response_model=bodies.RevisionResponse, responses={**R404, **R500})
    def backup(app: str) -> Any:
        return _persistence_call(app, lambda: {"revision": registry.backup(app)}, 201)

    @api.post("/{app}/restore", summary="Restore the app's state to a revision",
              response_model=bodies.ApiResponse, responses={**R404, **R500})
    def restore(app: str, revision: str | None = None) -> Any:
        def run() -> dict[str, Any]:
            restored = registry.restore(app, revision)
            return {"type": "success", "message": f"State restored to revision {restored}"}

        return _persistence_call(app, run, 200)

    @api.get("/{app}/revisions", summary="The app's revisions, oldest first (eddy)",
             response_model=list[str], responses=R404)
    def revisions(app: str) -> Any:
        try:
            registry.get(app)
        except AppNotFound:
            return bodies.not_found(app)
        return worker.store.revisions(app)

    @api.delete("/{app}/revisions", summary="Delete the app's revisions",
                response_model=bodies.ApiResponse, responses={**R404, **R500})
    def clear_revisions(app: str, enabledRedeployment: bool = True) -> Any:
        def run() -> dict[str, Any]:
            registry.clear_revisions(app, enabledRedeployment)
            return {"type": "success", "message": f"All revisions of {app} deleted"}

        return _persistence_call(app, run, 200)

    return api


def _persistence_call(app: str, run: Any, status_code: int) -> Response:
    try:
        return JSONResponse(run(), status_code)
    except AppNotFound:
        return bodies.not_found(app)
    except RevisionNotFound as error:
        return JSONResponse({"type": "not-found", "message": str(error)}, 404)
    except (AppNotRunning, StateMismatch) as error:
        return bodies.server_error(str(error))
    except Exception as error:
        return bodies.server_error(f"cannot change the state of {app}: {error}")
