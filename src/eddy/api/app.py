"""The worker's two HTTP APIs as FastAPI applications, built alike.

* The worker API (``wso2.transport.http``: 9443): ``/siddhi-apps``, ``/statistics``,
  ``/system-details``, ``/nodeDetails/runTime``, ``/metrics``, the docs — and ``/health``.
* The store query API (``siddhi.stores.query.api``: 7070, 7443): ``/stores/query`` only,
  as in WSO2 SP, where it is its own service and not part of the worker API.

Every route but ``/health`` needs basic auth (the docs too); every request body is
size-limited; every error is WSO2's ``{code, type, message}`` (:mod:`eddy.api.errors`) but
401, which is plain text as in WSO2 SP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from eddy import __version__
from eddy.api import (
    child_state,
    errors,
    ha,
    health,
    node_details,
    siddhi_apps,
    statistics,
    stores,
)
from eddy.api.auth import Authenticator
from eddy.api.limits import BodySizeLimit
from eddy.config import WorkerConfig
from eddy.node.worker import Worker

DESCRIPTION = """The worker API of WSO2 Stream Processor, served by eddy: deploy Siddhi apps
(text/plain), read their status, back up and restore their state, read statistics.
Every endpoint but `/health` needs basic auth with a user of `auth.configs` in
deployment.yaml."""
STORE_DESCRIPTION = """WSO2 Stream Processor's store query API, served by eddy: on-demand
queries over a running app's tables, windows and aggregations. Basic auth with a user of
`auth.configs`; closed (503) while the node is passive."""


def build_api(config: WorkerConfig, title: str, description: str, body: errors.ErrorBody,
         routers: Sequence[APIRouter], public: Sequence[APIRouter] = (), *,
         docs: bool = True) -> FastAPI:
    """An application serving ``routers`` behind basic auth and ``public`` without, and
    with ``docs`` its OpenAPI document and Swagger UI (behind basic auth too)."""
    authenticated = [Depends(Authenticator(config.users()))]
    app = FastAPI(title=title, version=__version__, description=description,
                  docs_url=None, redoc_url=None, openapi_url=None)
    for router in routers:
        app.include_router(router, dependencies=authenticated)
    for router in public:
        app.include_router(router)

    if docs:
        _add_docs(app, authenticated)
    errors.install(app, body)
    app.add_middleware(BodySizeLimit, max_bytes=config.model.eddy.maxRequestBytes)
    return app


def _add_docs(app: FastAPI, authenticated: list[Any]) -> None:
    @app.get("/openapi.json", include_in_schema=False, dependencies=authenticated)
    def openapi() -> dict[str, Any]:
        return errors.document_400_not_422(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=authenticated)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=app.title)


def create_app(worker: Worker, runtime: node_details.Runtime = "worker") -> FastAPI:
    """The worker API of one node (``runtime`` is what ``/nodeDetails/runTime`` says)."""
    return build_api(worker.config, "eddy worker API", DESCRIPTION, errors.worker_error,
                [siddhi_apps.router(worker), statistics.router(worker), ha.router(worker),
                 child_state.router(worker), node_details.router(worker, runtime)],
                [health.router(worker)])


def create_store_app(worker: Worker) -> FastAPI:
    """The store query API of one node."""
    return build_api(worker.config, "eddy store query API", STORE_DESCRIPTION, errors.store_error,
                [stores.router(worker)], docs=False)
