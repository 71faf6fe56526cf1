"""The NATS JetStream bus: one stream per app, one message per stored batch of events.

Layout (names in :mod:`eddy.bus.nats_names`): app ``A`` owns the stream ``EDDY_A`` whose
subject ``eddy.A.<topic>.<partition>`` carries one partition of one topic, and the
key-value bucket ``EDDY_A_META`` with topic definitions and consumers' committed positions.

**Sequences.** A message's body is an Arrow IPC stream of ``count`` consecutive events;
its headers ``Eddy-First-Seq`` and ``Eddy-Count`` say which. Event sequences are therefore
per (topic, partition) and gap-free, independent of JetStream's stream sequence, which is
shared by every subject of the app and counts messages. An append allocates sequences
optimistically: it publishes with ``Eddy-First-Seq`` = the partition's next sequence and
``Nats-Expected-Last-Subject-Sequence`` = the stream sequence of the partition's last
message; if another writer got in first JetStream rejects the message (error 10071), the
writer re-reads the partition's last message and tries again. So allocation is atomic
across processes and hosts without a lock service.

**Idempotence.** Every message has ``Nats-Msg-Id`` = ``<subject>:<record index>:<producer>:
<batch id>`` (a random id in place of producer and batch id when the caller gives none,
which still makes internal retries safe). JetStream checks the id before the expected-sequence condition, so a replayed
batch is answered with the original message's stream sequence, from which the original
event range is read back. The guarantee lasts for the stream's duplicate window
(``dedup_window``, default 10 min).

**Reading** a sequence range is deterministic: locate the message holding ``start`` (a
cache of known messages, else a binary search over stream sequences with direct gets of
``next_by_subj``), then walk the subject from there: with direct gets when the range needs
a few more messages, else with an ephemeral pull consumer (no acks, in memory) from the
next stream sequence, fetching ahead of the caller. One direct get per message is
round-trip bound; the consumer pipelines (numbers in ``bench/bus_throughput.py``).

**A JetStream cluster** (``replicas=3``): the bus connects to every seed server given and
reconnects to another when its server goes; each request rides out the loss of a server and
the election of a new stream leader for up to ``failover_s`` (appends by resending the same
message id, reads by asking again — :mod:`eddy.bus.nats_retry`); single messages come from
the stream leader, so no replica that lags is asked; a read whose consumer was lost with
its server locates the next event afresh and carries on. JetStream acknowledges an append
only once a majority of replicas stored it, so losing one node of three loses nothing
acknowledged.

**Retention** is eddy's, not JetStream's (JetStream limits would ignore committed
positions): ``trim`` lists each partition's messages with a headers-only consumer and
purges the subject below the first message it must keep. The last message of a partition
is always kept because it records where the partition's sequence stands.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import nats
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from nats.aio.client import Client
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.client import JetStreamContext
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
)
from nats.js.kv import KeyValue

from eddy.bus import arrow_codec
from eddy.bus.api import Bus
from eddy.bus.errors import BusError, SequenceRangeError, TopicConflictError
from eddy.bus.loop_thread import LoopThread
from eddy.bus.nats_log import Cursor, Message, PartitionLog, StreamLogs
from eddy.bus.nats_names import NatsNames
from eddy.bus.nats_retry import retrying
from eddy.bus.retention import Retention, removable_prefix
from eddy.bus.topic import PartitionRange, TopicSpec

log = logging.getLogger(__name__)

T = TypeVar("T")
STORAGE_TYPES = ("file", "memory")
_STREAM_CONFIG_DIFFERS = 10058
_HEADER_ROOM = 16 * 1024  # of the server's max_payload, kept for headers
_DIRECT_READ_MESSAGES = 4  # a range needing more messages than this is read by a consumer
_RECONNECT_WAIT_S = 0.5  # before trying a server again; another seed is tried at once
_CONNECT_ROUNDS = 3  # tries per seed server when the bus is opened
# A server that hangs (paused, partitioned) keeps its TCP connection open: the client finds
# out only when pings go unanswered, so ping often enough to leave it within seconds.
_PING_INTERVAL_S = 2
_MAX_OUTSTANDING_PINGS = 3


class NatsBus(Bus):
    """A :class:`Bus` on NATS JetStream; a sync API over an event loop on its own thread."""

    def __init__(self, servers: Sequence[str], app: str, *, retention: Retention | None = None,
                 dedup_window_s: float = 600.0, storage: str = "file", replicas: int = 1,
                 compression: str = "none", timeout_s: float = 10.0,
                 failover_s: float = 60.0) -> None:
        super().__init__()
        if storage not in STORAGE_TYPES:
            raise ValueError(f"storage must be one of {STORAGE_TYPES}, not {storage!r}")
        arrow_codec.check_compression(compression)
        self.names = NatsNames(app)
        self.retention = retention or Retention()
        self._dedup_window_s = dedup_window_s
        self._storage = StorageType.FILE if storage == "file" else StorageType.MEMORY
        self._replicas = replicas
        self._compression = compression
        self._timeout = timeout_s
        self._failover = failover_s
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._logs_lock = threading.Lock()
        self._ends: dict[str, tuple[int, list[int]]] = {}
        self._closed = False
        self._loop = LoopThread(f"eddy-bus-{self.names.token}")
        try:
            self._loop.run(self._connect(list(servers)))
        except BaseException:
            self._loop.stop()
            raise

    # -- connection ----------------------------------------------------------------------

    async def _connect(self, servers: list[str]) -> None:
        async def on_error(error: Exception) -> None:
            log.warning("NATS bus %s: %s", self.names.app, error)

        async def on_disconnect() -> None:
            if not self._nc.is_closed:  # not this bus's own close()
                log.warning("NATS bus %s: disconnected; reconnecting", self.names.app)

        async def on_reconnect() -> None:
            url = self._nc.connected_url
            log.warning("NATS bus %s: reconnected to %s", self.names.app,
                        url.netloc if url is not None else "?")

        self._nc: Client = await nats.connect(
            servers=servers, name=f"eddy-bus:{self.names.app}", error_cb=on_error,
            disconnected_cb=on_disconnect, reconnected_cb=on_reconnect,
            connect_timeout=self._timeout, reconnect_time_wait=_RECONNECT_WAIT_S,
            max_reconnect_attempts=_CONNECT_ROUNDS, ping_interval=_PING_INTERVAL_S,
            max_outstanding_pings=_MAX_OUTSTANDING_PINGS)
        # Bounded tries to reach a server at first (a wrong URL fails), then never give up:
        # a long-lived bus must come back when its servers do; requests time out meanwhile.
        self._nc.options["max_reconnect_attempts"] = -1
        self._js: JetStreamContext = self._nc.jetstream(timeout=self._timeout)
        self._streams = StreamLogs(self._nc, self._js, self.names.stream, self._timeout,
                                   failover_s=self._failover, leader_reads=self._replicas > 1)
        self._max_record_bytes = self._nc.max_payload - _HEADER_ROOM
        await self._retrying(self._ensure_stream, "creating the stream")
        self._kv: KeyValue = await self._retrying(self._ensure_bucket, "creating the bucket")

    async def _retrying(self, request: Callable[[], Awaitable[T]], what: str) -> T:
        return await retrying(request, f"NATS bus of app '{self.names.app}': {what}",
                              self._failover)

    async def _ensure_stream(self) -> None:
        config = StreamConfig(
            name=self.names.stream, subjects=[self.names.subjects],
            description=f"eddy bus of app {self.names.app!r}",
            retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD,
            storage=self._storage, num_replicas=self._replicas,
            duplicate_window=self._dedup_window_s, allow_direct=True)
        try:
            await self._js.add_stream(config)
        except APIError as error:
            if error.err_code != _STREAM_CONFIG_DIFFERS:
                raise
            await self._js.update_stream(config)

    async def _ensure_bucket(self) -> KeyValue:
        try:
            return await self._js.key_value(self.names.bucket)
        except BucketNotFoundError:
            return await self._js.create_key_value(KeyValueConfig(
                bucket=self.names.bucket, history=1, storage=self._storage,
                replicas=self._replicas, description=f"eddy bus of app {self.names.app!r}"))

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._submit(coro).result()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coro.close()
            raise BusError(f"NATS bus of app '{self.names.app}' is closed")
        try:
            self._check_process()
        except BusError:
            coro.close()
            raise
        return self._loop.submit(coro)

    def close(self) -> None:
        if self._closed or os.getpid() != self._pid:
            return
        try:
            self._loop.run(self._nc.close(), timeout=self._timeout)
        finally:
            self._closed = True
            self._loop.stop()

    def destroy(self) -> None:
        """Deletes the app's stream and bucket — every topic, event and commit — and closes."""
        async def delete() -> None:
            for name in (self.names.stream, self.names.bucket_stream):
                try:
                    await self._retrying(lambda: self._js.delete_stream(name),
                                         f"deleting {name}")
                except NotFoundError:
                    pass

        self._run(delete())
        self.close()

    def _log(self, spec: TopicSpec, partition: int) -> PartitionLog:
        with self._logs_lock:
            state = self._logs.get((spec.name, partition))
            if state is None:
                state = PartitionLog(self.names.subject(spec.name, partition))
                self._logs[spec.name, partition] = state
            return state

    # -- topics --------------------------------------------------------------------------

    def create_topic(self, spec: TopicSpec) -> None:
        self._run(self._create_topic(spec))
        self._specs[spec.name] = spec

    async def _create_topic(self, spec: TopicSpec) -> None:
        key = self.names.topic_key(spec.name)
        what = f"creating topic '{spec.name}'"
        try:
            await self._retrying(lambda: self._kv.create(key, spec.to_json().encode()), what)
        except KeyWrongLastSequenceError:  # it exists (perhaps created by a lost answer)
            existing = TopicSpec.from_json(
                (await self._retrying(lambda: self._kv.get(key), what)).value or b"")
            if existing != spec:
                raise TopicConflictError(
                    f"topic '{spec.name}' already exists as {existing}, not {spec}") from None

    def _load_topic(self, name: str) -> TopicSpec | None:
        async def load() -> TopicSpec | None:
            try:
                entry = await self._retrying(lambda: self._kv.get(self.names.topic_key(name)),
                                             f"reading topic '{name}'")
            except (KeyNotFoundError, KeyDeletedError):
                return None
            return TopicSpec.from_json(entry.value or b"")

        return self._run(load())

    def topics(self) -> list[TopicSpec]:
        async def load() -> list[TopicSpec]:
            return [TopicSpec.from_json(v) for _, v in await self._kv_values("topic.*")]

        return sorted(self._run(load()), key=lambda s: s.name)

    async def _kv_values(self, pattern: str) -> list[tuple[str, bytes]]:
        """Current (key, value) pairs of the bucket's keys matching ``pattern``."""
        return await self._retrying(lambda: self._kv_values_once(pattern),
                                    f"listing {pattern}")

    async def _kv_values_once(self, pattern: str) -> list[tuple[str, bytes]]:
        """The keys come from the bucket stream's leader (its per-subject counts), and
        each value from the leader too. A KV watcher would not do: its consumer may sit
        on a replica that has not caught up yet, which then reports nothing pending and
        ends the listing empty (seen right after a reopen on a three-node cluster)."""
        prefix = f"$KV.{self.names.bucket}."
        info = await self._js.stream_info(self.names.bucket_stream,
                                          subjects_filter=prefix + pattern)
        values = []
        for subject in sorted(info.state.subjects or {}):
            key = subject[len(prefix):]
            try:
                entry = await self._kv.get(key)
            except (KeyNotFoundError, KeyDeletedError):
                continue
            if entry.value:
                values.append((key, entry.value))
        return values

    # -- writing -------------------------------------------------------------------------

    def _write(self, spec: TopicSpec, parts: list[tuple[int, pa.Table]],
               producer: str | None, batch_id: int | None) -> list[PartitionRange]:
        batch_key = f"{producer}:{batch_id}" if producer is not None else uuid.uuid4().hex
        # Encoding runs on the caller's thread, not on the event loop.
        records = [(p, [(rows, record.to_pybytes()) for rows, record in
                        arrow_codec.encode_records(table, self._max_record_bytes,
                                                   self._compression)])
                   for p, table in parts]
        return self._run(self._publish(spec, records, batch_key))

    async def _publish(self, spec: TopicSpec, records: list[tuple[int, list[tuple[int, bytes]]]],
                       batch_key: str) -> list[PartitionRange]:
        per_partition = await asyncio.gather(*(
            self._publish_partition(spec, partition, encoded, batch_key)
            for partition, encoded in records))
        return [r for ranges in per_partition for r in ranges]

    async def _publish_partition(self, spec: TopicSpec, partition: int,
                                 records: list[tuple[int, bytes]], batch_key: str
                                 ) -> list[PartitionRange]:
        state = self._log(spec, partition)
        ranges = []
        async with state.lock:  # this process's appends to a partition queue, not collide
            for i, (rows, body) in enumerate(records):
                ref = await self._streams.publish(state, body, rows,
                                                  f"{state.subject}:{i}:{batch_key}")
                ranges.append(PartitionRange(partition, ref.first_seq, ref.end_seq - 1))
        return ranges

    # -- reading -------------------------------------------------------------------------

    def end_offsets(self, topic: str) -> list[int]:
        return self._run(self._end_offsets(self.topic(topic)))

    async def _end_offsets(self, spec: TopicSpec) -> list[int]:
        # One small request while nothing was appended to the app; the last message of
        # every partition only when something was.
        last_seq = (await self._streams.stream_info())["state"]["last_seq"]
        cached = self._ends.get(spec.name)
        if cached is not None and cached[0] == last_seq:
            return list(cached[1])
        heads = await asyncio.gather(*(self._streams.head(self._log(spec, p))
                                       for p in range(spec.partitions)))
        ends = [end for _, end in heads]
        self._ends[spec.name] = (last_seq, ends)
        return list(ends)

    def start_offsets(self, topic: str) -> list[int]:
        spec = self.topic(topic)

        async def starts() -> list[int]:
            firsts = await asyncio.gather(*(self._streams.next_message(self._log(spec, p), 1)
                                            for p in range(spec.partitions)))
            ends = await self._end_offsets(spec)
            return [end if first is None else first.ref.first_seq
                    for first, end in zip(firsts, ends)]

        return self._run(starts())

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        spec = self._read_spec(topic, partition, start, end)
        if start == end:
            return iter(())
        state = self._log(spec, partition)
        first = self._run(self._locate(spec, partition, state, start, end))
        return self._events(spec, partition, state, first, start, end)

    async def _locate(self, spec: TopicSpec, partition: int, state: PartitionLog, start: int,
                      end: int) -> Message:
        where = f"topic '{spec.name}' partition {partition}"
        if end > state.known_end:  # else no request: sequences only grow
            _, head = await self._streams.head(state)
            if end > head:
                raise SequenceRangeError(
                    f"{where}: cannot read [{start}, {end}), events end at {head}")
        return await self._streams.locate(state, start, where)

    def _events(self, spec: TopicSpec, partition: int, state: PartitionLog, first: Message,
                start: int, end: int) -> Iterator[pa.RecordBatch]:
        where = f"topic '{spec.name}' partition {partition}"
        message = first
        while True:
            yield from arrow_codec.slice_record(arrow_codec.decode(message.data),
                                                message.ref.first_seq, start, end)
            expected = message.ref.end_seq
            if expected >= end:
                return
            for message in self._walk(state, message, end):
                if message.ref.first_seq != expected:
                    raise SequenceRangeError(f"{where}: events from {expected} on are no "
                                             f"longer stored")
                yield from arrow_codec.slice_record(arrow_codec.decode(message.data),
                                                    message.ref.first_seq, start, end)
                expected = message.ref.end_seq
                if expected >= end:
                    return
            # The walk stopped short: its consumer went with a server, or retention removed
            # the rest. Asking the stream leader for the next event tells which.
            message = self._run(self._streams.locate(state, expected, where))

    def _walk(self, state: PartitionLog, first: Message, end: int) -> Iterator[Message]:
        """Messages after ``first`` towards event ``end``, by the cheaper way for the range."""
        if end - first.ref.end_seq <= _DIRECT_READ_MESSAGES * first.ref.count:
            return self._walk_direct(state, first, end)
        return self._walk_cursor(state, first, end)

    def _walk_direct(self, state: PartitionLog, first: Message, end: int) -> Iterator[Message]:
        """Messages after ``first`` by direct gets, one request ahead of the caller."""
        message: Message | None = first
        ahead: concurrent.futures.Future[Message | None] | None = None
        try:
            while message is not None and message.ref.end_seq < end:
                ahead = self._submit(self._streams.next_message(state, message.ref.ref + 1))
                message, ahead = ahead.result(), None
                if message is not None:
                    yield message
        finally:
            if ahead is not None:
                ahead.cancel()

    def _walk_cursor(self, state: PartitionLog, first: Message, end: int) -> Iterator[Message]:
        """Messages after ``first`` through a pull consumer, fetching ahead of the caller."""
        cursor: Cursor = self._run(self._streams.open_cursor(state, first.ref.ref + 1))
        ahead: concurrent.futures.Future[list[Message]] | None = None
        try:
            ahead = self._submit(self._streams.fetch(
                state, cursor, self._streams.fetch_size(end - first.ref.end_seq, first)))
            while ahead is not None:
                messages, ahead = ahead.result(), None
                if not messages:
                    return
                reached = messages[-1].ref.end_seq
                if reached < end:
                    ahead = self._submit(self._streams.fetch(
                        state, cursor, self._streams.fetch_size(end - reached, messages[-1])))
                yield from messages
        finally:
            if ahead is not None:
                ahead.cancel()
            if not self._closed:
                self._submit(self._streams.close_cursor(cursor))  # no need to wait

    # -- consumers -----------------------------------------------------------------------

    def commit(self, consumer: str, topic: str, partition: int, seq: int) -> None:
        spec = self.topic(topic)
        self._check_partition(spec, partition)
        if seq < 0:
            raise SequenceRangeError(f"topic '{topic}': cannot commit position {seq}")
        key, value = self.names.commit_key(topic, partition, consumer), str(seq).encode()
        self._run(self._retrying(lambda: self._kv.put(key, value), f"committing {key}"))

    def committed(self, consumer: str, topic: str, partition: int) -> int | None:
        spec = self.topic(topic)
        self._check_partition(spec, partition)

        async def get() -> int | None:
            key = self.names.commit_key(topic, partition, consumer)
            try:
                entry = await self._retrying(lambda: self._kv.get(key), f"reading {key}")
            except (KeyNotFoundError, KeyDeletedError):
                return None
            return int(entry.value) if entry.value else None

        return self._run(get())

    def remove_consumer(self, consumer: str) -> None:
        async def remove() -> None:
            for key, _ in await self._kv_values(self.names.consumer_keys(consumer)):
                await self._retrying(lambda: self._kv.purge(key), f"removing {key}")

        self._run(remove())

    # -- retention -----------------------------------------------------------------------

    def trim(self) -> int:
        if self.retention.unlimited:
            return 0
        specs = self.topics()

        async def trim_all() -> int:
            removed = 0
            for spec in specs:
                for partition in range(spec.partitions):
                    removed += await self._trim_partition(spec, partition)
            return removed

        return self._run(trim_all())

    async def _trim_partition(self, spec: TopicSpec, partition: int) -> int:
        state = self._log(spec, partition)
        commits = await self._kv_values(self.names.commit_keys(spec.name, partition))
        protect_from = min((int(v) for _, v in commits), default=None)
        batches = await self._streams.list_batches(state)
        removed = removable_prefix(  # the last message stays: it holds the sequence's head
            batches, self.retention, protect_from=protect_from, now_ms=arrow_codec.now_ms(),
            total_bytes=sum(b.nbytes for b in batches), at_most=len(batches) - 1)
        if not removed:
            return 0
        keep = batches[len(removed)]
        await self._retrying(lambda: self._js.purge_stream(
            self.names.stream, subject=state.subject, seq=keep.ref), f"trimming {state.subject}")
        state.batches = batches[len(removed):]
        state.purged_below = max(state.purged_below, keep.ref)
        state.index.forget_below(keep.first_seq)
        return sum(b.count for b in removed)
