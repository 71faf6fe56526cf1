"""The Kafka bus's metadata: topic definitions, committed positions and retention marks.

They live in one compacted, single-partition topic per app, ``eddy.<app>.meta``, as keyed
records (JSON keys and values), and every bus follows it to its end before answering:

* ``["topic", name, <random id>]`` → the definition (JSON). The *first* definition of a
  name in the log is the topic's; a later, different one is refused — so two processes
  creating a topic at once agree on the winner. The random id keeps compaction from
  replacing the first definition by a later one.
* ``["commit", topic, partition, consumer]`` → the committed sequence; removing a consumer
  writes tombstones (null values), which compaction drops.
* ``["start", topic, partition]`` → ``[offset, seq]``: retention removed every event below
  ``seq``; the valid record at ``offset`` holds ``seq`` (see :mod:`eddy.bus.kafka_chain`).

Kafka's own consumer-group offsets are not used: their metadata field, listing a group's
offsets and deleting groups are missing from Tansu, the broker the tests run on, and a bus commit
is an event sequence, not a record offset.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable

from eddy.bus.errors import BusError, TopicConflictError
from eddy.bus.kafka_fetch import PartitionReader
from eddy.bus.topic import TopicSpec

Produce = Callable[[str, int, bytes, bytes | None], int]
"""Writes (topic, partition, key, value) and returns the record's offset once stored."""


class MetaLog:
    """This process's view of one app's metadata topic, caught up on every question."""

    def __init__(self, topic: str, reader: PartitionReader, produce: Produce) -> None:
        self.topic = topic
        self._reader = reader
        self._produce = produce
        self._next = 0
        self._lock = threading.Lock()
        self.specs: dict[str, TopicSpec] = {}
        self.commits: dict[tuple[str, int, str], int] = {}
        self.starts: dict[tuple[str, int], tuple[int, int]] = {}

    def catch_up(self) -> None:
        """Applies every record written since the last call."""
        with self._lock, self._reader.lock:
            _, high = self._reader.watermarks()
            for offset, key, value in self._reader.keyed(self._next, high):
                self._apply(offset, key, value)
            self._next = max(self._next, high)

    def _apply(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        try:
            kind, *rest = json.loads(key or b"null")
        except (TypeError, ValueError):
            raise BusError(f"{self.topic}: record {offset} has a key eddy did not write: "
                           f"{key!r}") from None
        if kind == "topic" and value is not None:
            spec = TopicSpec.from_json(value)
            self.specs.setdefault(spec.name, spec)
        elif kind == "commit":
            topic, partition, consumer = rest
            if value is None:
                self.commits.pop((topic, partition, consumer), None)
            else:
                self.commits[topic, partition, consumer] = int(value)
        elif kind == "start" and value is not None:
            topic, partition = rest
            mark = tuple(json.loads(value))
            if mark[1] > self.starts.get((topic, partition), (0, -1))[1]:
                self.starts[topic, partition] = (int(mark[0]), int(mark[1]))

    def _write(self, key: list[object], value: bytes | None) -> None:
        self._produce(self.topic, 0, json.dumps(key).encode(), value)

    def create(self, spec: TopicSpec) -> None:
        """Records ``spec`` unless the topic exists; raises if it exists as something else."""
        self.catch_up()
        if spec.name not in self.specs:
            self._write(["topic", spec.name, uuid.uuid4().hex], spec.to_json().encode())
            self.catch_up()
        existing = self.specs[spec.name]
        if existing != spec:
            raise TopicConflictError(
                f"topic '{spec.name}' already exists as {existing}, not {spec}")

    def commit(self, consumer: str, topic: str, partition: int, seq: int) -> None:
        self._write(["commit", topic, partition, consumer], str(seq).encode())

    def committed(self, consumer: str, topic: str, partition: int) -> int | None:
        self.catch_up()
        return self.commits.get((topic, partition, consumer))

    def remove_consumer(self, consumer: str) -> None:
        self.catch_up()
        for topic, partition, name in [k for k in self.commits if k[2] == consumer]:
            self._write(["commit", topic, partition, name], None)
        self.catch_up()

    def protected_from(self, topic: str, partition: int) -> int | None:
        """The lowest position committed on the partition (after catching up), or None."""
        self.catch_up()
        return min((seq for (t, p, _), seq in self.commits.items()
                    if t == topic and p == partition), default=None)

    def mark_start(self, topic: str, partition: int, offset: int, seq: int) -> None:
        """Records that events below ``seq`` are removed; ``offset`` holds ``seq``."""
        self._write(["start", topic, partition], json.dumps([offset, seq]).encode())
        self.catch_up()

    def close(self) -> None:
        with self._lock, self._reader.lock:
            self._reader.close()
