"""``GET /health``: whether this node takes traffic, for load balancers; no credentials.

A single node and the active node of an HA group answer 200 ``{"status": "active"}``; a
passive (or still starting) node answers 503 with its status and why, so a load balancer
in front of an HA pair sends its requests to the active node only.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from eddy.api import bodies
from eddy.node.worker import Worker


def router(worker: Worker) -> APIRouter:
    """The health route, bound to one worker (outside basic auth)."""
    api = APIRouter(tags=["health"])

    @api.get("/health", response_model=bodies.ServerStatus, response_model_exclude_none=True,
             summary="active (200), or passive or starting (503); needs no credentials",
             responses={503: {"description": "This node takes no traffic now",
                              "model": bodies.ServerStatus}})
    def health() -> JSONResponse:
        role = worker.role()
        if role.is_active:
            return JSONResponse({"status": "active"})
        where = f" in HA group {role.cluster_id}" if role.cluster_id else ""
        holder = f"; the active node is {role.holder}" if role.holder else ""
        reason = f" ({role.reason})" if role.reason else ""
        return JSONResponse({"status": role.status,
                             "message": f"this node is {role.status}{where}{holder}{reason}"},
                            503)

    return api
