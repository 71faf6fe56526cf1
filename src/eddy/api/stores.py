"""``POST /stores/query``: on-demand queries over a running app's tables, windows and
aggregations (digest §5.2).

The query is checked against the app first, so a faulty query is a 400 with its line and
column (WSO2 SP answers 500 for those). Running it is the engine's part: until the engine
answers on-demand queries on a running app, a valid query gets 500 "Cannot query: …".
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from eddy.api import bodies
from eddy.api.bodies import R401
from eddy.lang import SiddhiAppError
from eddy.node.registry import AppNotFound
from eddy.node.worker import Worker


def router(worker: Worker) -> APIRouter:
    """The store query route, bound to one worker."""
    api = APIRouter(tags=["stores"], responses=R401)

    @api.post("/stores/query", response_model=bodies.StoreQueryResponse,
              response_model_exclude_none=True, summary="Run an on-demand query on an app",
              responses={400: {"model": bodies.StoreQueryError},
                         404: {"model": bodies.StoreQueryError},
                         500: {"model": bodies.StoreQueryError}})
    def store_query(request: bodies.StoreQueryRequest) -> Any:
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
            check_on_demand(view.analyzed, request.query)
        except SiddhiAppError as error:
            return bodies.store_error(400, f"Cannot query: {error.message}",
                                      line=error.line, column=error.column)
        try:
            records = worker.registry.store_query(request.appName, request.query)
        except Exception as error:
            return bodies.store_error(500, f"Cannot query: {error}")
        return {"records": records}

    return api
