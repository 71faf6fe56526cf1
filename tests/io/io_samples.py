"""Helpers the io tests share (a plain module, so test modules import it by name)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest

from eddy.bus import Bus
from eddy.io import BusDeliver, IoConfig, Source, fault_stream
from eddy.lang.semantic import AnalyzedApp

NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")


def wait_until(condition: Callable[[], object], timeout: float = 10.0,
               what: str = "the condition") -> None:
    """Polls ``condition`` until it is true; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


@dataclass
class Landing:
    """An app whose defined streams (and their fault streams) are topics on a SQLite bus."""

    analyzed: AnalyzedApp
    bus: Bus
    deliver: BusDeliver
    config: IoConfig
    started: list[Source] = field(default_factory=list)

    def rows(self, stream: str) -> list[dict[str, Any]]:
        """Every event on the stream's topic, without ``_seq`` and ``_ts``."""
        end = self.bus.end_offsets(stream)[0]
        table = self.bus.read_table(stream, 0, 0, end)
        return [{k: v for k, v in row.items() if k not in ("_seq", "_ts")}
                for row in table.to_pylist()]

    def faults(self, stream: str) -> list[dict[str, Any]]:
        """Every event on the fault stream ``!stream``."""
        return self.rows(fault_stream(stream))

    def start(self, source: Source) -> Source:
        """Starts ``source`` onto the bus; it is stopped when the test ends."""
        source.start(self.deliver)
        self.started.append(source)
        return source


def reachable(url: str, default_port: int) -> bool:
    """Whether something listens at the host and port of ``url``."""
    address = urlsplit(url)
    try:
        with socket.create_connection((address.hostname or "127.0.0.1",
                                       address.port or default_port), timeout=1):
            return True
    except OSError:
        return False
