"""What ``eddy dashboard`` reads from its ``deployment.yaml``.

The file is WSO2 SP's (the same model as a worker's, :mod:`eddy.config`): users come from
``auth.configs``; the listener from ``wso2.transport.http`` when the file sets it, else
HTTPS on 127.0.0.1:9643 as WSO2's dashboard runtime listens; the datasources
``DASHBOARD_DB``, ``WSO2_STATUS_DASHBOARD_DB`` and ``WSO2_METRICS_DB`` are accepted in
``wso2.datasources``. The nodes the dashboard watches are kept in
``wso2.status.dashboard.dashboardDatasourceName`` (``WSO2_STATUS_DASHBOARD_DB``), else in
``DASHBOARD_DB``, else in an SQLite file under the data folder, so they survive a restart;
their passwords are encrypted with the key in ``<data>/security/`` (beside the listener's
self-signed key), :mod:`eddy.dashboard.credentials`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eddy.config import Listener, WorkerConfig
from eddy.dashboard.credentials import key_file
from eddy.store import jdbc_to_sqlalchemy

DEFAULT_PORT = 9643
DASHBOARD_DB = "DASHBOARD_DB"


@dataclass(frozen=True)
class DashboardSettings:
    """The dashboard's listener, users, databases and polling period."""

    listener: Listener
    users: dict[str, tuple[str, bool]]
    nodes_db_url: str
    metrics_db_url: str | None
    polling_interval_s: float
    data_dir: Path
    credentials_key_file: Path
    """The key of the nodes' passwords in the database."""
    node_credentials: tuple[str, str] = ("admin", "admin")
    """``workerAccessCredentials``: what nodes given with ``--node`` are called with."""


def _datasource_url(config: WorkerConfig, name: str) -> str | None:
    for source in config.model.datasources.dataSources:
        if source.name == name:
            settings = source.definition.configuration
            return jdbc_to_sqlalchemy(settings.jdbcUrl, settings.username, settings.password)
    return None


def dashboard_settings(config: WorkerConfig) -> DashboardSettings:
    """The settings of a dashboard started with ``config``."""
    own = config.model.status_dashboard
    if "transport" in config.model.model_fields_set:
        listener = config.listeners()[0]
    else:
        offset = config.model.carbon.ports.offset
        listener = Listener(id="dashboard-https", host="127.0.0.1", port=DEFAULT_PORT + offset,
                            scheme="https")
    data_dir = config.data_dir / "dashboard"
    nodes = (_datasource_url(config, own.dashboardDatasourceName)
             or _datasource_url(config, DASHBOARD_DB)
             or f"sqlite:///{data_dir / 'dashboard.db'}")
    return DashboardSettings(listener=listener, users=config.users(), nodes_db_url=nodes,
                             metrics_db_url=_datasource_url(config, own.metricsDatasourceName),
                             polling_interval_s=own.pollingInterval, data_dir=data_dir,
                             credentials_key_file=key_file(config.data_dir),
                             node_credentials=(own.workerAccessCredentials.username,
                                               own.workerAccessCredentials.password))
