"""Every error of an API in WSO2's ``ApiResponseMessage`` shape: ``{code, type, message}``.

FastAPI's own errors would otherwise reach clients in shapes no WSO2 client knows: a
request that fails validation (a JSON body of the wrong type, a query parameter that is
not a boolean) as ``422 {"detail": [...]}``, an unknown path as ``{"detail": "Not Found"}``.
Here they become 400 (WSO2 answers a malformed request with 400, not 422), 404 and 405 in
the API's error shape, and an unexpected exception a 500 of the same shape. A 401 stays
plain text with ``WWW-Authenticate``, as WSO2's is plain text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from eddy.api import bodies

# (status, message) -> the error body of one API
ErrorBody = Callable[[int, str], dict[str, Any]]


def worker_error(status: int, message: str) -> dict[str, Any]:
    """The worker API's error body: WSO2's validation or file processing error, or the
    status code itself for the errors WSO2 gives no code of its own (404, 405, 503)."""
    if status == 400:
        return {"code": bodies.VALIDATION_ERROR, "type": "validation error", "message": message}
    if status >= 500 and status != 503:
        return {"code": bodies.FILE_PROCESSING_ERROR, "type": "file processing error",
                "message": message}
    return {"code": status, "type": "error", "message": message}


def store_error(status: int, message: str) -> dict[str, Any]:
    """The store query API's error body (``code`` is always 1 there)."""
    return {"code": 1, "type": "error", "message": message}


def describe_validation(error: RequestValidationError) -> str:
    """One line naming every faulty part of the request: ``body: statsEnable: Input should
    be a valid boolean``."""
    faults = []
    for fault in error.errors():
        if fault.get("type") == "json_invalid":
            faults.append("the body is not valid JSON")
            continue
        loc = [str(part) for part in fault.get("loc", ())] or ["body"]
        where = f"{loc[0]} {'.'.join(loc[1:])}" if len(loc) > 1 else loc[0]
        faults.append(f"{where}: {fault.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(faults)


def install(app: FastAPI, body: ErrorBody) -> None:
    """Puts every error ``app`` answers into ``body``'s shape."""

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        if error.status_code == 401:
            return bodies.unauthorized(str(error.detail))
        return JSONResponse(body(error.status_code, str(error.detail)), error.status_code,
                            error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> Response:
        return JSONResponse(body(400, describe_validation(error)), 400)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> Response:
        # Starlette logs the exception (with its traceback) after this answer is sent.
        return JSONResponse(body(500, f"{type(error).__name__}: {error}"), 500)


def document_400_not_422(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with FastAPI's 422 answers documented as the 400 they are."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            responses = operation.get("responses", {})
            validation = responses.pop("422", None)
            if validation is not None and "400" not in responses:
                responses["400"] = {"description": "The request is not valid", "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/"
                                                            "ErrorResponse"}}}}
    components = schema.get("components", {}).get("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    return schema
