"""``POST /stores/query``: on-demand queries over a running app's tables, windows and
aggregations (digest §5.2).

The query is checked against the app first, so a faulty query is a 400 with its line and
column (WSO2 SP answers 500 for those); a query that fails while it runs (a bad ``within``
value) is a 400 with the engine's message. A valid query runs against the app's live state
at its place in the app's input (``GroupRunner.store_query``): a find answers
``{"records": [[…], …]}``, a mutation ``{"records": []}``; ``"details": true`` adds each
column's name and type. A passive HA node answers 503: its apps' state follows the active
node's and is not what clients should read (WSO2 SP stops this service on a passive node).
It is served on its own listeners (``siddhi.stores.query.api``), not the worker API's.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from eddy.api import bodies
from eddy.api.bodies import R401
from eddy.lang import SiddhiAppError
from eddy.node.app_view import AppNotFound
from eddy.node.worker import Worker


def router(worker: Worker) -> APIRouter:
    """The store query route, bound to one worker."""
    api = APIRouter(tags=["stores"], responses=R401)

    @api.post("/stores/query", response_model=bodies.StoreQueryResponse,
              response_model_exclude_none=True, summary="Run an on-demand query on an app",
              responses={400: {"model": bodies.StoreQueryError},
                         404: {"model": bodies.StoreQueryError},
                         500: {"model": bodies.StoreQueryError},
                         503: {"model": bodies.StoreQueryError}})
    def store_query(request: bodies.StoreQueryRequest) -> Any:
        role = worker.role()
        if not role.is_active:
            return bodies.store_error(503, f"this node is {role.status}: the store query API "
                                           f"is served by the active node only")
        if not request.appName.strip() or not request.query.strip():
            return bodies.store_error(400, "appName and query must not be empty")
        try:
            view = worker.registry.get(request.appName)
        except AppNotFound:
            view = None
        if view is None or view.state != "active" or view.analyzed is None:
            return bodies.store_error(404, f"There is no active Siddhi App with name "
                                           f"{request.appName}")
        from eddy.lang.on_demand import check_on_demand

        try:
            analysis = check_on_demand(view.analyzed, request.query)
            records = worker.registry.store_query(request.appName, request.query)
        except SiddhiAppError as error:
            return bodies.store_error(400, f"Cannot query: {error.message}",
                                      line=error.line, column=error.column)
        except Exception as error:
            if _failed_while_running(error):
                return bodies.store_error(400, f"Cannot query: {error}")
            return bodies.store_error(500, f"Cannot query: {error}")
        body: dict[str, Any] = {"records": records}
        if request.details:
            body["details"] = [{"name": a.name, "dataType": a.type.value}
                               for a in analysis.outputs[:analysis.visible]]
        return body

    return api


def _failed_while_running(error: Exception) -> bool:
    """Whether the engine ran the query and the query itself failed (the caller's fault)."""
    try:
        from eddy.engine.run.store_requests import StoreQueryFailed
    except ImportError:  # no engine, so nothing ran
        return False
    return isinstance(error, StoreQueryFailed)
