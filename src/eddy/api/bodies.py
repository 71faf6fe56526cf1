"""Request and response bodies of the worker API, in WSO2 SP's shapes (digest §5).

The models exist for the OpenAPI document and for validation of JSON requests; handlers
build responses with the helpers below so every error of a kind has one shape.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict

from eddy.lang.errors import SiddhiAppError

VALIDATION_ERROR = 800101
FILE_PROCESSING_ERROR = 800102


class ApiResponse(BaseModel):
    """WSO2's success, conflict and not-found body."""

    type: Literal["success", "conflict", "not-found"]
    message: str


class ErrorResponse(BaseModel):
    """WSO2's error body; a validation error adds where in the app the fault is."""

    code: int
    type: str
    message: str
    kind: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    errors: list[dict[str, Any]] | None = None


class ContentResponse(BaseModel):
    content: str


class StatusResponse(BaseModel):
    """``active``, ``inactive`` (deploying) or ``faulty`` (with its error)."""

    status: Literal["active", "inactive", "faulty", "passive"]
    message: str | None = None
    error: dict[str, Any] | None = None


class RevisionResponse(BaseModel):
    revision: str


class AppStatistics(BaseModel):
    """One app in ``GET /siddhi-apps/statistics``; ``siddhiStatEnabledLevel`` repeats the
    level because WSO2's status dashboard reads that field (WSO2's bean sends both)."""

    appName: str
    status: Literal["active", "inactive", "faulty", "passive"]
    age: int
    isStatEnabled: Literal["OFF", "BASIC", "DETAIL"]
    siddhiStatEnabledLevel: Literal["OFF", "BASIC", "DETAIL"]


class StatsRequest(BaseModel):
    """``{"statsEnable": true}`` (BASIC or OFF) or ``{"enabledStatLevel": "DETAIL"}``."""

    model_config = ConfigDict(extra="forbid")

    statsEnable: bool | None = None
    enabledStatLevel: Literal["OFF", "BASIC", "DETAIL"] | None = None

    def level(self) -> Literal["OFF", "BASIC", "DETAIL"]:
        """The level asked for."""
        if self.enabledStatLevel is not None:
            return self.enabledStatLevel
        return "BASIC" if self.statsEnable else "OFF"


class StoreQueryRequest(BaseModel):
    appName: str = ""
    query: str = ""
    details: bool = False


class StoreQueryResponse(BaseModel):
    records: list[list[Any]]
    details: list[dict[str, str]] | None = None


class StoreQueryError(BaseModel):
    code: Literal[1] = 1
    type: Literal["error"] = "error"
    message: str
    line: int | None = None
    column: int | None = None


class WorkerMetrics(BaseModel):
    processCPU: float
    systemCPU: float
    loadAverage: float
    memoryUsage: float


class SparkStatus(BaseModel):
    """The node's Spark (eddy's own field of ``/statistics``): absent figures while no
    SparkContext runs (a worker starts Spark with its first app)."""

    running: bool
    version: str | None = None
    master: str | None = None
    appId: str | None = None
    activeQueries: int | None = None
    uiUrl: str | None = None
    uiPort: int | None = None


class NodeStatistics(BaseModel):
    """``GET /statistics`` as WSO2 SP 4.4 answers it (``haStatus`` only in a cluster, the
    sync and snapshot times as its role has them), plus ``uptime`` (ms) and ``memory``."""

    workerMetrics: WorkerMetrics
    haStatus: Literal["Active", "Passive"] | None = None
    runningStatus: str
    isStatsEnabled: bool
    clusterID: str
    lastSyncTime: str | None = None
    lastSnapshotTime: str | None = None
    osName: Literal["windows", "other"]
    isInSync: bool
    message: str
    uptime: int
    memory: dict[str, int]
    spark: SparkStatus | None = None


class SystemDetails(BaseModel):
    """``GET /system-details``: WSO2's 14 fields (the ``java…`` ones describe the JVM that
    runs Spark for this worker), then eddy's own."""

    carbonId: str
    javaRuntimeName: str
    javaVMVersion: str
    javaVMVendor: str
    javaHome: str
    javaVersion: str
    osName: str
    osVersion: str
    userHome: str
    userTimezone: str
    userName: str
    userCountry: str
    repoLocation: str
    serverStartTime: str
    eddyVersion: str
    pythonVersion: str
    pythonImplementation: str
    osArch: str
    storeQueryListeners: list[dict[str, Any]] = []
    """Where this node serves the store query API (``scheme``, ``host``, ``port``): WSO2
    serves it on listeners of its own, which a client of ``/system-details`` (eddy's
    dashboard) cannot otherwise find."""


class ServerStatus(BaseModel):
    """``GET /health``: ``active`` (200), or why this node takes no traffic (503)."""

    status: Literal["active", "passive", "starting"]
    message: str | None = None


def success(message: str, status_code: int = 200,
            headers: dict[str, str] | None = None) -> JSONResponse:
    """``{"type": "success", "message": …}``."""
    return JSONResponse({"type": "success", "message": message}, status_code, headers)


def not_found(app: str) -> JSONResponse:
    """404 for an app that is not deployed."""
    return JSONResponse({"type": "not-found",
                         "message": f"There is no Siddhi App exist with provided name : {app}"},
                        404)


def conflict(message: str) -> JSONResponse:
    """409 ``{"type": "conflict", …}``."""
    return JSONResponse({"type": "conflict", "message": message}, 409)


def validation_error(error: SiddhiAppError, hint: str | None = None) -> JSONResponse:
    """400 with WSO2's validation body plus the fault's kind, line, column and end; the
    message ends with the fault's hint and ``hint`` (about how the app arrived)."""
    body: dict[str, Any] = {"code": VALIDATION_ERROR, "type": "validation error"}
    body.update(error.to_dict())
    hints = [h for h in (error.hint, hint) if h]
    body["message"] = error.message + "".join(f" (hint: {h})" for h in hints)
    return JSONResponse(body, 400)


def invalid(message: str, line: int = 1, column: int = 0,
            hint: str | None = None) -> JSONResponse:
    """400 validation error without a SiddhiAppError (a missing or unusable name)."""
    if hint:
        message += f" (hint: {hint})"
    return JSONResponse({"code": VALIDATION_ERROR, "type": "validation error",
                         "message": message, "line": line, "column": column}, 400)


def server_error(message: str) -> JSONResponse:
    """500 with WSO2's file processing error body."""
    return JSONResponse({"code": FILE_PROCESSING_ERROR, "type": "file processing error",
                         "message": message}, 500)


def store_error(status_code: int, message: str, **where: int) -> JSONResponse:
    """The store query API's error body (with ``line`` and ``column`` of a faulty query)."""
    return JSONResponse({"code": 1, "type": "error", "message": message, **where},
                        status_code)


def unauthorized(message: str = "Authentication failed") -> PlainTextResponse:
    """401 in plain text, with the header that makes clients send credentials."""
    return PlainTextResponse(message, 401, {"WWW-Authenticate": 'Basic realm="eddy"'})


# OpenAPI ``responses=`` entries shared by the routes.
R401: dict[int | str, dict[str, Any]] = {
    401: {"description": "No or wrong credentials (plain text)",
          "content": {"text/plain": {"schema": {"type": "string"}}}},
    413: {"description": "Request body too large", "model": ErrorResponse},
}
R404: dict[int | str, dict[str, Any]] = {404: {"description": "No such app",
                                               "model": ApiResponse}}
R500: dict[int | str, dict[str, Any]] = {500: {"description": "Failure", "model": ErrorResponse}}
