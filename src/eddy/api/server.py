"""Serving the API: one uvicorn server per listener, all in one event loop.

The listeners are ``wso2.transport.http``'s (HTTPS on 127.0.0.1:9443 by default) plus, when
configured, ``siddhi.stores.query.api``'s; all serve the same application. SIGINT and
SIGTERM stop every server, then the worker stops its apps.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Generator

import uvicorn
from fastapi import FastAPI

from eddy.api.app import create_app
from eddy.api.tls import certificate_files
from eddy.config import Listener
from eddy.node.worker import Worker

log = logging.getLogger("eddy.api.server")


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to :func:`serve_api`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _server(worker: Worker, listener: Listener, app: FastAPI) -> _Server:
    options: dict[str, object] = {}
    if listener.scheme == "https":
        cert, key, password = certificate_files(worker.config, listener)
        options = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        if password:
            options["ssl_keyfile_password"] = password
    config = uvicorn.Config(app, host=listener.host, port=listener.port, lifespan="off",
                            log_config=None, access_log=False, server_header=False,
                            timeout_graceful_shutdown=3, **options)  # type: ignore[arg-type]
    return _Server(config)


def serve_api(worker: Worker) -> None:
    """Serves the worker's API on every listener until SIGINT or SIGTERM."""
    app = create_app(worker)
    servers = [(listener, _server(worker, listener, app)) for listener in worker.config.listeners()]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, _stop_all, servers)
        tasks = [asyncio.create_task(_serve(server)) for _, server in servers]
        await asyncio.sleep(0)
        while not all(server.started for _, server in servers):
            if any(task.done() for task in tasks):
                break
            await asyncio.sleep(0.05)
        for listener, server in servers:
            if server.started:
                log.info("API listening on %s://%s:%d (%s)", listener.scheme, listener.host,
                         listener.port, listener.id)
        failed = [task for task in tasks if task.done()]
        if failed:
            _stop_all(servers)
        await asyncio.gather(*tasks)
        if any(not server.started for _, server in servers):
            raise OSError("a listener could not start (is its port in use?)")

    asyncio.run(main())


async def _serve(server: _Server) -> None:
    try:
        await server.serve()
    except SystemExit:  # uvicorn exits when it cannot bind; the caller reports it
        pass


def _stop_all(servers: list[tuple[Listener, _Server]]) -> None:
    for _, server in servers:
        server.should_exit = True
