"""The worker's HTTP API as one FastAPI application.

Every route — the API, ``/openapi.json`` and ``/docs`` alike — needs basic auth, and every
request body is size-limited. Errors keep WSO2 SP's shapes: 401 is plain text, the rest JSON.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from eddy import __version__
from eddy.api import bodies, siddhi_apps, statistics, stores
from eddy.api.auth import Authenticator
from eddy.api.limits import BodySizeLimit
from eddy.node.worker import Worker

DESCRIPTION = """The worker API of WSO2 Stream Processor, served by eddy: deploy Siddhi apps
(text/plain), read their status, back up and restore their state, read statistics.
Every endpoint needs basic auth with a user of `auth.configs` in deployment.yaml."""


def create_app(worker: Worker) -> FastAPI:
    """The API of one worker."""
    authenticate = Authenticator(worker.config.users())
    app = FastAPI(title="eddy worker API", version=__version__, description=DESCRIPTION,
                  docs_url=None, redoc_url=None, openapi_url=None,
                  dependencies=[Depends(authenticate)])
    for module in (siddhi_apps, stores, statistics):
        app.include_router(module.router(worker))

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> dict[str, Any]:
        return app.openapi()

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="eddy worker API")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        if error.status_code == 401:
            return bodies.unauthorized(str(error.detail))
        return JSONResponse({"code": error.status_code, "type": "error",
                             "message": str(error.detail)}, error.status_code, error.headers)

    app.add_middleware(BodySizeLimit, max_bytes=worker.config.model.eddy.maxRequestBytes)
    return app
