"""Topics and events the bus tests share (a plain module, so spawned processes import it)."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest

from eddy.bus import Bus, PartitionRange, Retention, TopicSpec, open_bus, sqlite_url
from eddy.lang.ast import Attribute, AttrType

NATS_URL = os.environ.get("EDDY_TEST_NATS", "nats://127.0.0.1:4222")
BACKENDS = ("sqlite", "nats", "kafka")

ALL_TYPES = (
    Attribute("i", AttrType.INT), Attribute("l", AttrType.LONG), Attribute("f", AttrType.FLOAT),
    Attribute("d", AttrType.DOUBLE), Attribute("s", AttrType.STRING),
    Attribute("b", AttrType.BOOL), Attribute("o", AttrType.OBJECT),
)
READINGS = (Attribute("room", AttrType.STRING), Attribute("temp", AttrType.DOUBLE))


def readings_spec(name: str = "Temp", partitions: int = 1, key: str | None = None) -> TopicSpec:
    return TopicSpec(name, READINGS, partitions=partitions, key=key)


def readings(start: int, count: int, rooms: int = 7) -> pa.Table:
    """``count`` events whose ``temp`` is their index from ``start`` (so values name them)."""
    return pa.table({
        "room": [f"room{(start + i) % rooms}" for i in range(count)],
        "temp": [float(start + i) for i in range(count)],
    })


def read_everything(bus: Bus, topic: str) -> list[pa.Table]:
    """Every stored event of each partition, from its start offset."""
    starts, ends = bus.start_offsets(topic), bus.end_offsets(topic)
    return [bus.read_table(topic, p, starts[p], ends[p]) for p in range(len(ends))]


def append_for(url: str, topic: str, seconds: float, rows: int, offset: int, start: Any,
               results: Any) -> None:
    """A writer process: after the ``start`` barrier, appends ``rows`` at a time for
    ``seconds`` (``temp`` = ``offset`` + its event number), then reports its ranges."""
    bus = open_bus(url)
    try:
        bus.create_topic(readings_spec("Warmup"))  # first-call costs come before the start
        bus.append("Warmup", readings(0, rows))
        bus.read_table("Warmup", 0, 0, rows)
        start.wait(timeout=60)
        ranges: list[PartitionRange] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ranges += bus.append(topic, readings(offset + sum(r.events for r in ranges), rows))
        results.put([tuple(r) for r in ranges])
    finally:
        bus.close()


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
        if self.backend == "kafka":
            from eddy.bus.kafka_bus import KafkaBus

            bus = open_bus(self.url)
            assert isinstance(bus, KafkaBus)
            bus.destroy()


def kafka_bus_url(bootstrap: str, app: str) -> str:
    """A Kafka bus URL for a test; Tansu has no DeleteRecords (see eddy.bus.kafka_bus)."""
    return f"kafka://{bootstrap}?app={app}&delete_records=false"


def serve(factory: BusFactory) -> Iterator[BusFactory]:
    """A fixture's body: hands out ``factory``, and cleans up after it even on failure."""
    try:
        yield factory
    finally:
        factory.cleanup()


def make_factory(backend: str, tmp_path: Path, kafka_bootstrap: str | None = None
                 ) -> BusFactory:
    if backend == "sqlite":
        return BusFactory(backend, sqlite_url(tmp_path / "bus" / "bus.db"))
    if backend == "kafka":
        assert kafka_bootstrap is not None
        return BusFactory(backend, kafka_bus_url(kafka_bootstrap,
                                                 f"test-{uuid.uuid4().hex[:12]}"))
    if not nats_reachable():
        pytest.skip(f"no NATS server at {NATS_URL}; start one with: start-stop-daemon --start "
                    f"--oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 "
                    f"-p 4222 -js -sd /var/lib/nats-server")
    return BusFactory(backend, f"{NATS_URL}?app=test-{uuid.uuid4().hex[:12]}")
