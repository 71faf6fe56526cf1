"""``@source(type='kafka', topic.list='temp', group.id='eddy', bootstrap.servers='host:9092',
@map(type='json'))``: Kafka topics, with confluent-kafka (librdkafka).

Every record value is one payload for the mapper. Records are polled in batches; a batch is
landed on the bus and only then are its offsets committed to the group, so a restart
resumes after the last batch that is durable.

Options (WSO2 siddhi-io-kafka): ``topic.list`` (comma-separated), ``group.id`` and
``bootstrap.servers`` (required); ``partition.no.list`` (read only these partitions, by
assignment instead of group membership); ``threading.option`` (``single.thread``,
``topic.wise`` or ``partition.wise``; accepted — one consumer thread reads all);
``enable.offsets.commit`` (default true; false reads from ``auto.offset.reset`` on every
start); ``optional.configuration`` (librdkafka settings, ``'key:value,key:value'``, e.g.
``auto.offset.reset:latest``; eddy's default is ``earliest``).

Guarantee: at-least-once — a crash between landing a batch and committing its offsets
makes the batch land again after the restart.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import (
    OFFSET_STORED,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from eddy.bus.arrow_codec import now_ms
from eddy.io.api import Deliver, Guarantee, Source
from eddy.io.errors import SourceError
from eddy.io.ingest import Ingest

log = logging.getLogger("eddy.io.kafka")

_BATCH = 1000
_POLL_S = 0.2
_RETRY_MAX_S = 5.0


def parse_optional_configuration(text: str) -> dict[str, str]:
    """``'key:value,key:value'`` (WSO2's ``optional.configuration``) as a dict; ValueError
    naming an entry without a colon."""
    settings: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        key, sep, value = entry.partition(":")
        if not sep or not key.strip():
            raise ValueError(f"optional.configuration entry '{entry}' is not key:value")
        settings[key.strip()] = value.strip()
    return settings


class KafkaSource(Source):
    """Reads records of Kafka topics (see the module docstring)."""

    type = "kafka"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, ingest: Ingest, bootstrap_servers: str, topics: list[str], group_id: str,
                 *, partitions: list[int] | None = None, commit_offsets: bool = True,
                 settings: dict[str, str] | None = None) -> None:
        self.stream = ingest.stream
        self.ingest = ingest
        self.topics = topics
        self.partitions = partitions
        self.commit_offsets = commit_offsets
        self.config: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers, "group.id": group_id,
            "auto.offset.reset": "earliest", "client.id": f"eddy-{ingest.stream}",
            **(settings or {}),
            "enable.auto.commit": False, "enable.auto.offset.store": False,
        }
        self._consumer: Consumer | None = None
        self._running = threading.Event()
        self._thread: threading.Thread | None = None
        self._deliver: Deliver | None = None
        self.assigned = threading.Event()
        """Set once partitions are assigned (group membership can take seconds)."""

    def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        try:
            consumer = Consumer(self.config)
            if self.partitions is not None:
                consumer.assign([TopicPartition(t, p, OFFSET_STORED)
                                 for t in self.topics for p in self.partitions])
                self.assigned.set()
            else:
                consumer.subscribe(self.topics, on_assign=lambda c, ps: self.assigned.set())
        except KafkaException as error:
            raise SourceError(f"{self.describe()}: cannot create the consumer: {error}") from None
        self._consumer = consumer
        self._running.set()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"eddy-kafka-source-{self.stream}")
        self._thread.start()

    def stop(self) -> None:
        self._running.clear()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _run(self) -> None:
        assert self._consumer is not None
        while self._running.is_set():
            try:
                messages = self._consumer.consume(_BATCH, _POLL_S)
            except KafkaException as error:
                log.warning("%s: polling failed: %s", self.describe(), error)
                time.sleep(_POLL_S)
                continue
            records = [m for m in messages if self._usable(m)]
            if not records:
                continue
            try:
                self._land(records)
            except Exception:  # a bug, not bad data: stop rather than skip the records
                log.exception("%s: stopped reading; the uncommitted records are read again "
                              "when the source restarts", self.describe())
                self._running.clear()

    def _usable(self, message: Message) -> bool:
        error = message.error()
        if error is None:
            return True
        if error.code() != KafkaError._PARTITION_EOF:
            log.warning("%s: %s", self.describe(), error)
        return False

    def _land(self, records: list[Message]) -> None:
        assert self._consumer is not None and self._deliver is not None
        mapped = self.ingest.map([m.value() or b"" for m in records])
        ts, delay = now_ms(), 0.05
        while True:
            try:
                self.ingest.land(self._deliver, mapped, ts)
                break
            except Exception as error:  # the bus refused: retry; offsets stay uncommitted
                if not self._running.is_set():
                    log.warning("%s: stopped while the bus refused a batch; it is read again "
                                "on restart (%s)", self.describe(), error)
                    return
                log.warning("%s: the bus refused %d events (%s); retrying in %.1f s",
                            self.describe(), mapped.events.num_rows, error, delay)
                time.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)
        if self.commit_offsets:
            self._commit(records)

    def _commit(self, records: list[Message]) -> None:
        assert self._consumer is not None
        ends: dict[tuple[str, int], int] = {}
        for record in records:
            key = (record.topic() or "", record.partition() or 0)
            ends[key] = max(ends.get(key, -1), (record.offset() or 0) + 1)
        try:
            self._consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()],
                                  asynchronous=False)
        except KafkaException as error:  # the batch is on the bus; a restart re-reads it
            log.warning("%s: committing offsets failed: %s", self.describe(), error)
