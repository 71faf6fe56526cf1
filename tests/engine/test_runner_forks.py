"""Spark's Python stream readers forked from a pre-imported server (engine/spark/runner_forks).

Real SparkSession, real processes: a query over the bus source runs with its reader forked
and gives the right outputs; with the server killed, a query still starts (the launcher
runs the real interpreter) and the session restarts the server; a server whose owner is
SIGKILLed exits; a forked reader whose launcher is SIGKILLed ends. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pytest

from eddy.bus import Bus
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_topics import output_events
from eddy.engine.spark import runner_fork_launcher
from eddy.engine.spark.runner_forks import ENABLED_KEY, RunnerForks, wanted
from polling import wait_for

WAIT_S = 120.0
APP = """
@app:name('Forked')
define stream Temp (room string, temp double);
from Temp[temp > 25.0] select room, temp * 2.0 as twice insert into Hot;
"""
TEMPS = [(1_000_000 + 10 * i, f"r{i % 4}", 20.0 + (7 * i) % 13) for i in range(12)]
EXPECTED = [{"timestamp": ts, "data": [room, 2 * t]} for ts, room, t in TEMPS if t > 25.0]


@pytest.fixture
def forks(spark: Any) -> RunnerForks:
    """The session's fork server, listening."""
    from eddy.engine.spark.session import runner_fork_server

    forks = runner_fork_server()
    assert forks is not None, "a local session starts a fork server by default"
    assert spark.sparkContext.pythonExec == str(forks.launcher)
    wait_for(forks.socket_path.exists, WAIT_S, "the fork server to listen")
    return forks


def _temps(rows: list[tuple[int, str, float]]) -> pa.Table:
    return pa.table({"_ts": [r[0] for r in rows], "room": [r[1] for r in rows],
                     "temp": [r[2] for r in rows]})


def _forked_readers(forks: RunnerForks) -> list[psutil.Process]:
    assert forks.process is not None
    return psutil.Process(forks.process.pid).children()


def _launchers(forks: RunnerForks) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if runner_fork_launcher.__file__ in cmdline and str(forks.socket_path) in cmdline:
            found.append(process)
    return found


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _fds(pid: int) -> set[str]:
    links = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return links


def test_a_query_over_the_bus_source_reads_through_a_forked_reader(
        spark: Any, forks: RunnerForks, bus_url: str, bus: Bus, tmp_path: Path) -> None:
    runner = GroupRunner(APP, bus_url, tmp_path / "checkpoint", spark=spark)
    runner.start()
    try:
        runner.await_started(WAIT_S)
        # The query's stream reader is a child of the fork server.
        [reader] = wait_for(lambda: _forked_readers(forks), WAIT_S, "a forked reader")
        # Nothing of the server leaks into the reader: not its listening socket, not its
        # epoll, not its pipe from the owner.
        assert forks.process is not None
        server_only = {link for link in _fds(forks.process.pid)
                       if link.startswith(("socket:", "anon_inode:", "pipe:"))}
        assert not server_only & _fds(reader.pid)
        bus.append(runner.input_topic("Temp"), _temps(TEMPS[:6]))
        assert runner.await_idle(WAIT_S)
        bus.append(runner.input_topic("Temp"), _temps(TEMPS[6:]))
        assert runner.await_idle(WAIT_S)
    finally:
        runner.stop()
    assert output_events(bus, "Hot") == EXPECTED
    # Spark stops a reader by destroying its process (the launcher); the fork follows.
    wait_for(lambda: _gone(reader), 30, "the forked reader to end with its query")


def test_a_query_starts_without_the_server_and_the_session_restarts_it(
        spark: Any, forks: RunnerForks, bus_url: str, bus: Bus, tmp_path: Path) -> None:
    from eddy.engine.spark.session import get_spark

    assert forks.process is not None
    killed = forks.process
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    runner = GroupRunner(APP, bus_url, tmp_path / "checkpoint", spark=spark)
    runner.start()
    try:
        runner.await_started(WAIT_S)
        bus.append(runner.input_topic("Temp"), _temps(TEMPS))
        assert runner.await_idle(WAIT_S)
    finally:
        runner.stop()
    assert output_events(bus, "Hot") == EXPECTED
    assert get_spark() is spark
    assert forks.process is not None and forks.process is not killed, \
        "get_spark() restarted the server that was killed"
    wait_for(forks.socket_path.exists, WAIT_S, "the restarted server to listen")


def test_a_forked_reader_ends_when_its_launcher_is_killed(
        spark: Any, forks: RunnerForks, bus_url: str, tmp_path: Path) -> None:
    runner = GroupRunner(APP, bus_url, tmp_path / "checkpoint", spark=spark)
    runner.start()
    try:
        runner.await_started(WAIT_S)
        [reader] = wait_for(lambda: _forked_readers(forks), WAIT_S, "a forked reader")
        [launcher] = _launchers(forks)
        launcher.send_signal(signal.SIGKILL)
        wait_for(lambda: _gone(reader), 30, "the forked reader to end")
    finally:
        runner.stop()


def test_the_server_exits_when_its_owner_is_killed(tmp_path: Path) -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    owner_code = "\n".join([
        "import sys, threading",
        f"sys.path.insert(0, {src!r})",
        "from eddy.engine.spark.runner_forks import RunnerForks",
        "forks = RunnerForks.start()",
        "print(forks.process.pid, forks.socket_path, flush=True)",
        "threading.Event().wait(600)",
    ])
    owner = subprocess.Popen([sys.executable, "-c", owner_code], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert owner.stdout is not None
        pid, socket_path = owner.stdout.readline().split()
        server = psutil.Process(int(pid))
        wait_for(Path(socket_path).exists, WAIT_S, "the server to listen")
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        wait_for(lambda: _gone(server), 30, "the server to exit after its owner")
        assert not Path(socket_path).exists()
    finally:
        owner.kill()
        owner.wait(30)


def test_only_local_sessions_on_this_interpreter_use_a_fork_server() -> None:
    local = {"spark.master": "local[*]"}
    assert wanted(local, sys.executable)
    assert not wanted({**local, ENABLED_KEY: "false"}, sys.executable)
    assert not wanted({"spark.master": "spark://host:7077"}, sys.executable)
    assert not wanted(local, "/usr/bin/env")  # not the interpreter the server would be


def test_a_forked_runner_draws_other_random_numbers_than_its_server() -> None:
    import numpy as np

    from eddy.engine.spark.runner_fork_server import _reseed

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: reseed as a forked runner does, report its first draw
        _reseed()
        os.write(write, np.random.bytes(16))
        os._exit(0)
    os.close(write)
    try:
        child_draw = os.read(read, 16)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert child_draw != np.random.bytes(16)
