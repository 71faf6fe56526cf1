"""Helpers shared by tests that drive real processes: a free loopback port, and polling for
a condition with a deadline that says what it waited for."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


_LOWEST = 10_000
_GIVEN: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, never the same twice in
    this process, and below the kernel's ephemeral range: a port the kernel picked for
    ``bind(0)`` is one it may hand to any outgoing connection (a worker's Spark, its bus
    client) before the test's process binds it, which made a worker fail to start."""
    highest = _EPHEMERAL_START - 1
    if highest <= _LOWEST:  # an unusual kernel range: take the kernel's pick
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    for _ in range(1_000):
        port = random.randint(_LOWEST, highest)
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise RuntimeError(f"no free port between {_LOWEST} and {highest}")


def _ephemeral_start() -> int:
    """The first port of the kernel's range for outgoing connections (Linux's default
    elsewhere)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


_EPHEMERAL_START = _ephemeral_start()


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
