"""Fixtures: every bus test runs on both real backends, each test on a bus of its own.

The NATS backend needs a JetStream server at ``EDDY_TEST_NATS`` (default
``nats://127.0.0.1:4222``); each test gets an app (stream and bucket) of its own, deleted
afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bus_samples import BACKENDS, BusFactory, make_factory

from eddy.bus import Bus


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
