"""The fork server: a process with pyspark and eddy's bus source imported, that forks Spark's
Python stream reader on request (:mod:`eddy.engine.spark.runner_forks` starts it).

A fresh ``python -m pyspark.sql.streaming.python_streaming_source_runner`` spends
0.6–0.8 s importing pyspark, pyarrow and eddy's bus source before it connects back to
Spark: a good part of every query start, and of an HA takeover. A child forked from this
server has all of that in memory already. The server runs no Python thread but its own, so
a fork copies no Python lock another thread holds; it refuses to serve if an import left
one running. Native threads the imports start are fork-aware: numpy's OpenBLAS pool and
pyarrow's jemalloc background thread both stop or reset themselves at a fork
(``pthread_atfork``), as they must for pyspark's own forking daemon.

Per request (:mod:`eddy.engine.spark.runner_fork_launcher` has the protocol) the child
takes the launcher's standard streams, environment (replacing ours entirely), working
directory and arguments, and runs the module as ``__main__`` the way ``python -m`` does
(only ``/proc/<pid>/cmdline`` and ``environ``, fixed at the server's exec, still show the
server's).
It belongs to its launcher, not to the server: a thread watches the launcher's connection
and ends the runner when the launcher is gone, and the runner reports its exit status back
over it. So stopping the server stops no running query.

The server exits when its standard input closes — its owner's end of the pipe, closed by
:meth:`RunnerForks.stop` or by the kernel when the owner dies — or when it is reparented;
it removes its socket then, so launchers stop asking.
"""

from __future__ import annotations

import atexit
import importlib
import io
import marshal
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Sequence

from eddy.engine.spark.runner_fork_launcher import _HEADER, _REPLY, EXITED, STARTED

RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"
# What the runner imports, and what it unpickles and opens (the bus source and its bus
# backends). Not the runner module itself: ``runpy`` runs that as __main__, which warns
# if it was imported already.
PRELOAD = (
    "pyspark.accumulators", "pyspark.errors", "pyspark.serializers", "pyspark.sql.datasource",
    "pyspark.sql.streaming.datasource", "pyspark.sql.datasource_internal",
    "pyspark.sql.pandas.serializers", "pyspark.sql.types",
    "pyspark.sql.worker.plan_data_source_read", "pyspark.util", "pyspark.worker_util",
    "eddy.engine.spark.bus_source", "eddy.bus.sqlite_bus", "eddy.bus.nats_bus",
    "eddy.bus.kafka_bus",
)
REQUEST_TIMEOUT_S = 5.0
POLL_S = 0.5
LAUNCHER_GONE_GRACE_S = 5.0
"""How long a runner whose launcher is gone may take to end on SIGTERM before it is cut."""


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional bus backend's client library missing
            pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _receive_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the launcher closed its connection mid-request")
        data += chunk
    return data


def _receive_request(conn: socket.socket) -> tuple[list[int], list[str], dict[str, str], str]:
    """The launcher's standard-stream fds, argv, environment and working directory."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    fds: list[int] = []
    try:
        header, fds, _flags, _address = socket.recv_fds(conn, _HEADER.size, 3)
        if len(header) < _HEADER.size:
            header += _receive_exactly(conn, _HEADER.size - len(header))
        (size,) = _HEADER.unpack(header)
        argv, environ, cwd = marshal.loads(_receive_exactly(conn, size))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"expected the launcher's 3 standard streams, got {len(fds)} fds")
    return fds, list(argv), dict(environ), str(cwd)


def _runnable(argv: Sequence[str], environ: dict[str, str]) -> bool:
    """Only the stream reader, with the hash seed this interpreter was started with (a
    forked child cannot change it): anything else the launcher runs the ordinary way."""
    return (list(argv) == ["-m", RUNNER_MODULE]
            and environ.get("PYTHONHASHSEED") == os.environ.get("PYTHONHASHSEED"))


class ForkServer:
    """Accepts launchers on a unix socket and forks a runner for each."""

    def __init__(self, path: str, owner: int) -> None:
        self.path = path
        self.owner = owner
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.selector = selectors.DefaultSelector()

    def serve(self) -> None:
        """Serves until the owner's pipe on stdin closes or the owner is gone."""
        # Bound and listening before the path appears: whoever sees the path can connect.
        bound = f"{self.path}.{os.getpid()}"
        self.listener.bind(bound)
        self.listener.listen(16)
        os.replace(bound, self.path)  # also over one a killed server left
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
        try:
            while os.getppid() == self.owner:
                for key, _events in self.selector.select(POLL_S):
                    if key.fileobj is self.listener:
                        self._accept()
                    elif not os.read(sys.stdin.fileno(), 4096):
                        return  # the owner closed its end, or died
                self._reap()
        finally:
            _unlink(self.path)  # launchers fall back at once, not on a refused connection
            self.selector.close()
            self.listener.close()

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            try:
                fds, argv, environ, cwd = _receive_request(conn)
            except (OSError, ValueError, EOFError, TypeError) as error:
                print(f"eddy fork server: bad request: {error}", file=sys.stderr)
                return
            try:
                if _runnable(argv, environ):
                    pid = os.fork()
                    if pid == 0:
                        self._become_runner(conn, fds, argv, environ, cwd)  # never returns
            finally:
                for fd in fds:
                    os.close(fd)
            # Closing our copy of conn: the child's copy is the launcher's lifeline; a
            # refused request ends here and the launcher starts the runner itself.

    @staticmethod
    def _reap() -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _become_runner(self, conn: socket.socket, fds: list[int], argv: list[str],
                       environ: dict[str, str], cwd: str) -> None:
        """In the forked child: take the launcher's place and run the module; exits."""
        status = 1
        try:
            self.selector.close()
            self.listener.close()
            _take_over_process_state(fds, environ, cwd)
            conn.settimeout(None)
            conn.sendall(_REPLY.pack(STARTED, os.getpid()))
            threading.Thread(target=_end_when_launcher_gone, args=(conn,),
                             name="eddy-launcher-watch", daemon=True).start()
            status = _run_module(argv[1])
        finally:
            try:
                conn.sendall(_REPLY.pack(EXITED, status))
            except OSError:
                pass
            os._exit(status)


def _take_over_process_state(fds: list[int], environ: dict[str, str], cwd: str) -> None:
    """Make this forked child look like ``python -m`` started by the launcher's caller."""
    for handler_signal in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(handler_signal, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    atexit._clear()  # the server's exit handlers are not the runner's
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)  # inheritable, as the streams of a started process are
    for fd in fds:
        if fd > 2:  # else dup2 just replaced it
            os.close(fd)
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    # Spark sets PYTHONUNBUFFERED for its workers; our streams were made without it.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(write_through=True)
    # `python -m` puts the working directory first, then PYTHONPATH's entries.
    sys.path[0] = cwd
    extra = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and p not in sys.path]
    sys.path[1:1] = extra
    _reseed()


def _reseed() -> None:
    """Fresh random state: ``random`` reseeds itself after a fork, numpy's global
    generator does not (every runner would draw the same numbers)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _end_when_launcher_gone(conn: socket.socket) -> None:
    """Runs in the forked runner: when the launcher's end of ``conn`` closes (it exited or
    was killed, as Spark does to stop a runner), end the runner as SIGTERM would."""
    try:
        while conn.recv(64):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)
    threading.Event().wait(LAUNCHER_GONE_GRACE_S)
    os._exit(128 + signal.SIGTERM)


def _run_module(module: str) -> int:
    """Run ``module`` as __main__ and return the exit status ``python -m`` would have."""
    sys.argv = [sys.argv[0]]  # run_module puts the module's file name first
    status = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m eddy.engine.spark.runner_fork_server <socket path> <owner pid>``."""
    args = list(sys.argv[1:] if argv is None else argv)
    path, owner = args[0], int(args[1])
    # Ctrl-C reaches the whole process group; the server ends with its owner instead.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _preload()
    if (threads := threading.active_count()) != 1:
        print(f"eddy fork server: {threads} Python threads after the imports; a fork "
              "would be unsafe, so stream readers start the ordinary way", file=sys.stderr)
        return
    ForkServer(path, owner).serve()


if __name__ == "__main__":
    main()
