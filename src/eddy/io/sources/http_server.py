"""HTTP servers shared by HTTP sources: one uvicorn server (FastAPI) per port.

Several sources may listen on one port under different paths, as WSO2's HTTP sources do
(``http://0.0.0.0:8006/temp`` and ``http://0.0.0.0:8006/humidity``). The first source on a
port starts its server on a background thread; the last one to leave stops it. Port 0
asks for a free port and gets a server of its own.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from eddy.io.errors import SourceError

log = logging.getLogger("eddy.io.http")

Handler = Callable[[Request], Awaitable[Response]]

_START_TIMEOUT_S = 10.0


@dataclass
class _Server:
    host: str
    port: int
    routes: dict[str, Handler] = field(default_factory=dict)
    server: uvicorn.Server | None = None
    thread: threading.Thread | None = None

    def start(self) -> None:
        sock = _bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        app.add_api_route("/{path:path}", self._dispatch, include_in_schema=False,
                          methods=["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=5, server_header=False,
                                proxy_headers=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, args=(sock,), daemon=True,
                                       name=f"eddy-http-{self.port}")
        self.thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise SourceError(f"the HTTP server on {self.host}:{self.port} did not start")
            time.sleep(0.01)

    def _run(self, sock: socket.socket) -> None:
        assert self.server is not None
        try:
            self.server.run(sockets=[sock])
        except BaseException:  # a server thread must not die silently
            log.exception("HTTP server on %s:%d stopped with an error", self.host, self.port)
        finally:
            sock.close()

    async def _dispatch(self, request: Request) -> Response:
        handler = self.routes.get("/" + request.path_params["path"].strip("/"))
        if handler is None:
            return JSONResponse({"error": f"no source listens on {request.url.path}"},
                                status_code=404)
        return await handler(request)

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=15)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as error:
        sock.close()
        raise SourceError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.set_inheritable(True)
    return sock


class HttpServerPool:
    """The HTTP servers of a process, by port (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[int, _Server] = {}

    def mount(self, host: str, port: int, path: str, handler: Handler) -> int:
        """Serves ``handler`` at ``path`` on ``host:port``; returns the port (the one
        chosen when ``port`` is 0). SourceError if the path is taken or the port is busy."""
        path = "/" + path.strip("/")
        with self._lock:
            server = self._servers.get(port) if port else None
            if server is None:
                server = _Server(host, port, {path: handler})  # routed before it listens
                server.start()
                self._servers[server.port] = server
                return server.port
            if server.host != host:
                raise SourceError(f"port {port} is served on {server.host} for other sources; "
                                  f"an HTTP source cannot bind it on {host} too")
            if path in server.routes:
                raise SourceError(f"another source already listens on "
                                  f"http://{host}:{server.port}{path}")
            server.routes[path] = handler
            return server.port

    def unmount(self, port: int, path: str) -> None:
        """Stops serving ``path``; stops the server once it serves nothing."""
        path = "/" + path.strip("/")
        with self._lock:
            server = self._servers.get(port)
            if server is None:
                return
            server.routes.pop(path, None)
            if server.routes:
                return
            del self._servers[port]
        server.stop()

    def close(self) -> None:
        """Stops every server."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()


_default_pool: HttpServerPool | None = None
_default_lock = threading.Lock()


def default_pool() -> HttpServerPool:
    """The process's shared pool."""
    global _default_pool
    with _default_lock:
        if _default_pool is None:
            _default_pool = HttpServerPool()
        return _default_pool
