"""Stopping a node process the tests started in its own process group (driver, JVM, Python
workers), so that nothing it spawned outlives the test, pass or fail."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(process: subprocess.Popen[bytes] | None, grace_s: float = 60) -> None:
    """SIGCONT (it may be stopped) and SIGTERM, ``grace_s`` to exit, then SIGKILL of the
    whole group whatever is left in it."""
    if process is None:
        return
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
            process.wait(grace_s)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
