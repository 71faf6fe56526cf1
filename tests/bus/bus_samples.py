"""Topics and events the bus tests share (a plain module, so spawned processes import it)."""

from __future__ import annotations

import pyarrow as pa

from eddy.bus import Bus, PartitionRange, TopicSpec, open_bus
from eddy.lang.ast import Attribute, AttrType

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


def append_many(url: str, topic: str, appends: int, rows: int, offset: int
                ) -> list[PartitionRange]:
    """Appends from a separate process (run through multiprocessing)."""
    bus = open_bus(url)
    try:
        ranges: list[PartitionRange] = []
        for i in range(appends):
            ranges += bus.append(topic, readings(offset + i * rows, rows))
        return ranges
    finally:
        bus.close()
