"""Helpers shared by tests that drive real processes: a free loopback port, and polling for
a condition with a deadline that says what it waited for."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(condition: Callable[[], Any], timeout: float, what: str,
             interval: float = 0.05) -> Any:
    """Polls until ``condition()`` is truthy; returns it, or fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
