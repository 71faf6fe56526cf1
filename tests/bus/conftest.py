"""Fixtures: every bus test runs on every real backend, each test on a bus of its own.

The NATS backend needs a JetStream server at ``EDDY_TEST_NATS`` (default
``nats://127.0.0.1:4222``); each test gets an app (stream and bucket) of its own, deleted
afterwards. The Kafka backend runs on a Tansu broker started for the session (or the
Kafka at ``EDDY_TEST_KAFKA``), each test on an app (topics) of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bus_samples import BACKENDS, BusFactory, make_factory, serve

from eddy.bus import Bus


@pytest.fixture(params=BACKENDS)
def buses(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BusFactory]:
    """A factory for the test's bus, once per backend."""
    bootstrap = request.getfixturevalue("kafka_bootstrap") if request.param == "kafka" \
        else None
    yield from serve(make_factory(request.param, tmp_path, bootstrap))


@pytest.fixture
def bus(buses: BusFactory) -> Bus:
    """The test's bus, once per backend."""
    return buses.open()
