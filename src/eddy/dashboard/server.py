"""Serving the dashboard: one uvicorn server on the dashboard's listener (HTTPS on
127.0.0.1:9643 by default, with the certificate rules of the worker's API,
:mod:`eddy.api.tls`) until SIGINT or SIGTERM."""

from __future__ import annotations

import logging

import uvicorn

from eddy.api.tls import certificate_files
from eddy.config import WorkerConfig
from eddy.dashboard.nodes import open_node_store, parse_address
from eddy.dashboard.settings import dashboard_settings
from eddy.dashboard.web import create_app

log = logging.getLogger("eddy.dashboard")


def serve_dashboard(config: WorkerConfig, nodes: list[str] | None = None) -> int:
    """Serves until stopped; the exit status. ``nodes`` (``host:port``) are added to the
    watched nodes when missing, with ``workerAccessCredentials``."""
    settings = dashboard_settings(config)
    store = open_node_store(settings.nodes_db_url, settings.credentials_key_file)
    for address in nodes or ():
        host, port = parse_address(address)
        if store.get(f"{host}:{port}") is None:
            store.add(host, port, *settings.node_credentials)
    listener = settings.listener
    options: dict[str, object] = {}
    if listener.scheme == "https":
        cert, key, password = certificate_files(config, listener)
        options = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        if password:
            options["ssl_keyfile_password"] = password
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(
        app, host=listener.host, port=listener.port, lifespan="on", log_config=None,
        access_log=False, server_header=False, timeout_graceful_shutdown=3,
        **options))  # type: ignore[arg-type]
    log.info("dashboard on %s://%s:%d", listener.scheme, listener.host, listener.port)
    server.run()
    return 0 if server.started else 1
