"""Fixtures: every bus test runs on both real backends, each test on a bus of its own.

The NATS backend needs a JetStream server at ``EDDY_TEST_NATS`` (default
``nats://127.0.0.1:4222``); each test gets an app (stream and bucket) of its own, deleted
afterwards.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from eddy.bus import Bus, Retention, open_bus, sqlite_url

NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")
BACKENDS = ("sqlite", "nats")


def nats_reachable() -> bool:
    address = urlsplit(NATS_URL)
    try:
        with socket.create_connection((address.hostname or "127.0.0.1", address.port or 4222),
                                      timeout=1):
            return True
    except OSError:
        return False


@dataclass
class BusFactory:
    """Opens (and reopens) one test's bus; closes everything it opened at the end."""

    backend: str
    url: str
    opened: list[Bus] = field(default_factory=list)

    def open(self, retention: Retention | None = None) -> Bus:
        bus = open_bus(self.url, retention=retention)
        self.opened.append(bus)
        return bus

    def cleanup(self) -> None:
        for bus in self.opened:
            bus.close()
        if self.backend == "nats":
            from eddy.bus.nats_bus import NatsBus

            bus = open_bus(self.url)
            assert isinstance(bus, NatsBus)
            bus.destroy()


def make_factory(backend: str, tmp_path: Path) -> BusFactory:
    if backend == "sqlite":
        return BusFactory(backend, sqlite_url(tmp_path / "bus" / "bus.db"))
    if not nats_reachable():
        pytest.skip(f"no NATS server at {NATS_URL}; start one with: start-stop-daemon --start "
                    f"--oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 "
                    f"-p 4222 -js -sd /var/lib/nats-server")
    return BusFactory(backend, f"{NATS_URL}?app=test-{uuid.uuid4().hex[:12]}")


@pytest.fixture(params=BACKENDS)
def buses(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BusFactory]:
    """A factory for the test's bus, once per backend."""
    factory = make_factory(request.param, tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()


@pytest.fixture
def bus(buses: BusFactory) -> Bus:
    """The test's bus, once per backend."""
    return buses.open()
