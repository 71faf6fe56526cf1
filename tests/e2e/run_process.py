"""``eddy run APP.siddhi`` as a real process for end-to-end tests (a plain module, imported
by name): started in its own process group so that a crash is ``SIGKILL`` of the Python
process and its Spark JVM together, restarted on the same data folder."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from polling import free_port, wait_for

SRC = Path(__file__).resolve().parents[2] / "src"
START_S = 240.0  # a loaded 2-core machine has taken a minute to start Spark

__all__ = ["START_S", "EddyRun", "free_port", "listening", "wait_for"]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class EddyRun:
    """One ``eddy run APP --data-dir DIR [--bus URL] [--real-time S]`` process;
    stdout/stderr go to files."""

    def __init__(self, app: Path, data: Path, bus: str | None = None,
                 real_time_s: float | None = None) -> None:
        self.app, self.data, self.bus, self.real_time_s = app, data, bus, real_time_s
        self.stdout = data.parent / f"{data.name}.stdout"
        self.stderr = data.parent / f"{data.name}.stderr"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        command = [sys.executable, "-m", "eddy.cli", "run", str(self.app),
                   "--data-dir", str(self.data)]
        if self.bus is not None:
            command += ["--bus", self.bus]
        if self.real_time_s is not None:
            command += ["--real-time", str(self.real_time_s)]
        env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONUNBUFFERED": "1"}
        self.starts += 1
        with open(self.stdout, "ab") as out, open(self.stderr, "ab") as err:
            self.process = subprocess.Popen(command, stdout=out, stderr=err, env=env,
                                            start_new_session=True)

    def running_query(self) -> bool:
        """Whether the app's query has started (its first status line is out)."""
        self.check_alive()
        return self.stderr.read_text(errors="replace").count(" running on Spark ") \
            >= self.starts

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"eddy run exited with {self.process.returncode}:\n"
                                 f"{self.tail()}")

    def kill(self) -> None:
        """SIGKILL of the whole process group (Python and its JVM), as a crash would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM to eddy (a clean stop: it stops its query, then its JVM), SIGKILL of the
        group if it does not stop in time."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def tail(self, lines: int = 40) -> str:
        text = self.stderr.read_text(errors="replace") if self.stderr.exists() else ""
        return "\n".join(line for line in text.splitlines() if "WARN" not in line)[-6000:]
