"""Starting Spark's Python stream readers by fork from a pre-imported server (issue 17).

Every streaming query over a Python data source makes Spark start a process
``<pythonExec> -m pyspark.sql.streaming.python_streaming_source_runner`` (Spark 4.x
``PythonStreamingSourceRunner.init``: ``PythonWorkerFactory.createSimpleWorker``, which
sets the connection back to the JVM in the environment — a loopback port and secret, or
a unix socket path — may set the working directory, reads the process's stdout and stderr
into its log, and stops the runner by destroying the process). Importing pyspark, pyarrow
and eddy's bus source there costs most of a second, on the critical path of an HA takeover
and of every query start.

With :class:`RunnerForks` the session's ``pythonExec`` is a small shell script that, for
exactly that command, runs :mod:`~eddy.engine.spark.runner_fork_launcher`, which has
:mod:`~eddy.engine.spark.runner_fork_server` fork the runner from a process that imported
all of it already; any other command (``pyspark.daemon``, the planners' workers) is exec'd
on the real interpreter unchanged, costing one ``sh`` start. If the server is not (yet)
up, the launcher starts the real interpreter too: a query never depends on the server.

Only for a local master (the script exists on this host only; executors elsewhere would
be handed its path), and only when ``pythonExec`` is this interpreter (the server must be
the interpreter the runner would have been). Off with ``spark.eddy.runnerForks.enabled=
false`` (``EDDY_SPARK_eddy__runnerForks__enabled=false``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from eddy.engine.spark import runner_fork_launcher, runner_fork_server

log = logging.getLogger(__name__)

ENABLED_KEY = "spark.eddy.runnerForks.enabled"
RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"
STOP_TIMEOUT_S = 5.0
SOCKET_NAME = "server.sock"
_PREFIX = "eddy-forks-"

SOCKET_ENV = "EDDY_RUNNER_FORKS_SOCKET"
"""Names the server's socket in the environment Spark gives a session's Python processes
(``SparkContext.environment``): the launcher script itself names no session's server."""

_LAUNCHER_SCRIPT = """#!/bin/sh
# Written by eddy.engine.spark.runner_forks: Spark's stream reader forked from a
# pre-imported server when $EDDY_RUNNER_FORKS_SOCKET is up; all else on the interpreter.
if [ "$#" -eq 2 ] && [ "$1" = -m ] && [ "$2" = {module} ] && \\
   [ -S "${{EDDY_RUNNER_FORKS_SOCKET:-}}" ]; then
  exec {python} -I -S {launcher} "$EDDY_RUNNER_FORKS_SOCKET" {python} "$@"
fi
exec {python} "$@"
"""


def launcher_script(parent: Path) -> Path:
    """The ``pythonExec`` to give Spark: a shell script for this interpreter and this eddy,
    named by its content and never removed — a session's Python functions keep the path of
    theirs for the session's life, and a missing one would fail every query."""
    text = _LAUNCHER_SCRIPT.format(
        module=RUNNER_MODULE, python=shlex.quote(sys.executable),
        launcher=shlex.quote(runner_fork_launcher.__file__))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = parent / f"eddy-python-{digest}"
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(path)  # atomic: a process starting alongside never runs half of it
    return path


def wanted(settings: dict[str, str], python_exec: str) -> bool:
    """Whether a session with these Spark ``settings`` and ``pythonExec`` should use a
    fork server (see the module docstring for why each condition)."""
    if settings.get(ENABLED_KEY, "true").strip().lower() in ("false", "0", "no", "off"):
        return False
    if not settings.get("spark.master", "local").startswith("local"):
        return False
    resolved = shutil.which(python_exec)
    return resolved is not None and os.path.abspath(resolved) == os.path.abspath(sys.executable)


class RunnerForks:
    """One fork server, listening in a private directory, and the launcher script."""

    def __init__(self, directory: Path, launcher: Path) -> None:
        self.directory = directory
        self.launcher = launcher
        """The ``pythonExec`` to give Spark, with :data:`SOCKET_ENV` set to
        :attr:`socket_path` in the environment of its Python processes."""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def socket_path(self) -> Path:
        return self.directory / SOCKET_NAME

    @classmethod
    def start(cls, parent: Path | None = None) -> RunnerForks:
        """Starts a server in a new directory under ``parent`` (the system's temporary
        directory by default); it imports in the background, and until it listens,
        launchers start runners the ordinary way."""
        parent = Path(parent or tempfile.gettempdir())
        _remove_abandoned(parent)
        # A short path: a unix socket's path is limited to ~107 bytes.
        directory = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent))
        forks = cls(directory, launcher_script(parent))
        forks._spawn()
        return forks

    def _spawn(self) -> None:
        # Spark runs its Python workers with this hash seed unless one is set; a forked
        # runner keeps the server's, so the server starts with the same.
        env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", runner_fork_server.__name__, str(self.socket_path),
             str(os.getpid())],
            stdin=subprocess.PIPE, env=env)
        log.debug("fork server %d for stream readers at %s", self.process.pid,
                  self.socket_path)

    def revive(self) -> bool:
        """Starts the server again if it failed (crashed, or was killed), not if it declined
        to serve (status 0, see the server's ``main``); whether it did. Meanwhile launchers
        have been starting runners the ordinary way."""
        if self.process is None or self.process.poll() in (None, 0):
            return False
        log.warning("the fork server of stream readers exited (status %s); restarting it",
                    self.process.returncode)
        self._stop_server()
        self._spawn()
        return True

    def stop(self) -> None:
        """Stops the server (the runners it forked belong to their launchers and go on)
        and removes its directory."""
        self._stop_server()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _stop_server(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the server's signal to exit
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)
        # A killed server leaves its socket; it must not pass for the next one's.
        self.socket_path.unlink(missing_ok=True)


def _remove_abandoned(parent: Path) -> None:
    """Remove the directories of servers whose owner died without stopping them (a
    SIGKILLed worker; its server exited then). Removing a live one by mistake (a pid of
    another pid namespace) would only make its launchers start runners the ordinary way."""
    for directory in parent.glob(f"{_PREFIX}*-*"):
        owner = directory.name[len(_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
