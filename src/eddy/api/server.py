"""Serving the APIs: one uvicorn server per listener, all in one event loop.

A worker: ``wso2.transport.http``'s listeners (HTTPS on 127.0.0.1:9443 by default) serve the
worker API; ``siddhi.stores.query.api``'s serve the store query API and nothing else. A
manager: its listeners (HTTPS on 127.0.0.1:9543 by default) serve the manager API. SIGINT and
SIGTERM stop every server, then the node stops. :class:`ApiServers` runs the same servers
from any thread (tests, embedding) until :meth:`ApiServers.stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Generator, Sequence

import uvicorn
from fastapi import FastAPI

from eddy.api.app import create_app, create_store_app
from eddy.api.tls import certificate_files
from eddy.cluster.manager import Manager
from eddy.config import Listener, WorkerConfig
from eddy.node.worker import Worker

log = logging.getLogger("eddy.api.server")
START_TIMEOUT_S = 60.0


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to its owner."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _server(config: WorkerConfig, listener: Listener, app: FastAPI) -> _Server:
    options: dict[str, object] = {}
    if listener.scheme == "https":
        cert, key, password = certificate_files(config, listener)
        options = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        if password:
            options["ssl_keyfile_password"] = password
    served = uvicorn.Config(app, host=listener.host, port=listener.port, lifespan="off",
                            log_config=None, access_log=False, server_header=False,
                            timeout_graceful_shutdown=3, **options)  # type: ignore[arg-type]
    return _Server(served)


class ApiServers:
    """The servers of every listener of one node: ``served`` lists, per API, its name, its
    application and its listeners."""

    def __init__(self, config: WorkerConfig,
                 served: Sequence[tuple[str, FastAPI, Sequence[Listener]]]) -> None:
        self.servers = [(listener, what, _server(config, listener, api))
                        for what, api, listeners in served for listener in listeners]
        self.started = threading.Event()

    async def serve(self) -> None:
        """Serves until every server stops; OSError when a listener could not start."""
        tasks = [asyncio.create_task(_serve(server)) for _, _, server in self.servers]
        await asyncio.sleep(0)
        while not all(server.started for _, _, server in self.servers):
            if any(task.done() for task in tasks):
                break
            await asyncio.sleep(0.05)
        for listener, what, server in self.servers:
            if server.started:
                log.info("%s listening on %s://%s:%d (%s)", what, listener.scheme,
                         listener.host, listener.port, listener.id)
        self.started.set()
        if any(task.done() for task in tasks):
            self.stop()
        await asyncio.gather(*tasks)
        if any(not server.started for _, _, server in self.servers):
            raise OSError("a listener could not start (is its port in use?)")

    def stop(self) -> None:
        """Asks every server to stop (from any thread)."""
        for _, _, server in self.servers:
            server.should_exit = True

    def serve_in_thread(self) -> threading.Thread:
        """Serves on a daemon thread; returns once every listener is up (OSError if one
        could not start)."""
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self.serve())
            except BaseException as error:  # handed to the caller below
                failure.append(error)
                self.started.set()

        thread = threading.Thread(target=run, name="eddy-api", daemon=True)
        thread.start()
        if not self.started.wait(START_TIMEOUT_S):
            raise OSError(f"the API did not start within {START_TIMEOUT_S:g} s")
        if failure or not all(server.started for _, _, server in self.servers):
            self.stop()
            thread.join(START_TIMEOUT_S)
            raise OSError(f"a listener could not start: {failure[0] if failure else ''}")
        return thread


def worker_servers(worker: Worker) -> ApiServers:
    """The worker API on ``wso2.transport.http``'s listeners, the store query API on its
    own."""
    config = worker.config
    if not config.store_query_listeners():
        log.info("store query API off: deployment.yaml has no siddhi.stores.query.api "
                 "listeners (WSO2's file serves it on 7070 and 7443)")
    return ApiServers(config, [("worker API", create_app(worker), config.listeners()),
                               ("store query API", create_store_app(worker),
                                config.store_query_listeners())])


def serve_api(worker: Worker) -> None:
    """Serves the worker's APIs on every listener until SIGINT or SIGTERM."""
    serve_until_signalled(worker_servers(worker))


def serve_manager(manager: Manager) -> None:
    """Serves the manager API on every listener until SIGINT or SIGTERM."""
    from eddy.api.manager import create_manager_app

    config = manager.config
    serve_until_signalled(ApiServers(config, [("manager API", create_manager_app(manager),
                                                config.listeners())]))


def serve_until_signalled(servers: ApiServers) -> None:
    """Serves ``servers`` until SIGINT or SIGTERM."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, servers.stop)
        await servers.serve()

    asyncio.run(main())


async def _serve(server: _Server) -> None:
    try:
        await server.serve()
    except SystemExit:  # uvicorn exits when it cannot bind; the caller reports it
        pass
