"""``eddy:`` (settings WSO2 SP has no key for) and ``wso2.status.dashboard``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from eddy.config.base import DEFAULT_DATA_DIR, Block, Scalar


class SparkSettings(Block):
    master: str = "local[*]"
    conf: dict[str, Scalar] = {}


class EddySettings(Block):
    """``eddy:``: settings WSO2 SP has no key for."""

    dataDir: Path = DEFAULT_DATA_DIR
    busUrl: str | None = None
    spark: SparkSettings = SparkSettings()
    maxRequestBytes: int = Field(default=1 << 20, ge=1024)
    deploymentPollIntervalMs: int = Field(default=250, ge=10, le=5_000)
    metricsIntervalS: float = Field(default=60, gt=0)
    """Seconds between writes to the ``METRIC_*`` tables (WSO2's ``pollingPeriod``)."""
    sourceMaxBehindS: float = Field(default=30, gt=0)
    """Seconds an app may lag behind its HTTP sources' events before they answer 503."""
    peerCaFile: Path | None = None
    """Fully distributed: a PEM file of the certificates (or their CA) the other nodes'
    HTTPS interfaces use; managers and workers verify each other against it. Unset: they
    do not verify each other's certificates (each node's self-signed one by default)."""
    realTimeBatchS: float | None = Field(default=None, gt=0)
    """Run apps whose queries are all stateless in Spark's real-time mode, checkpointing
    every this many seconds (e.g. 300); unset: every app runs in micro-batches."""


class WorkerAccessCredentials(Block):
    username: str = "admin"
    password: str = "admin"


class StatusDashboard(Block):
    """``wso2.status.dashboard``: the status dashboard's settings (``eddy dashboard``)."""

    pollingInterval: float = Field(default=5, gt=0)
    """Seconds between two polls of every node."""
    metricsDatasourceName: str = "WSO2_METRICS_DB"
    dashboardDatasourceName: str = "WSO2_STATUS_DASHBOARD_DB"
    workerAccessCredentials: WorkerAccessCredentials = WorkerAccessCredentials()
