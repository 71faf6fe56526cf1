"""Partition logs on a JetStream stream: the subject operations the NATS bus is built from.

One subject holds one topic partition; each message is a stored record whose headers
``Eddy-First-Seq`` and ``Eddy-Count`` give the event sequences in its Arrow body. This
module appends records with optimistic sequence allocation, finds the record holding an
event, and walks a subject — with direct gets for a message or two, with an ephemeral pull
consumer (no acks, in memory) for longer ranges, where pipelining beats a round trip per
message.

**On a replicated stream** (R3 on a JetStream cluster) every request here survives the loss
of a server and the election of a new stream leader (:mod:`eddy.bus.nats_retry`), and
single messages are read from the stream leader (``STREAM.MSG.GET``) rather than by direct
gets, which any replica answers and a replica a few messages behind would answer wrongly:
a partition's head would look older than it is, an event just appended elsewhere absent.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

import nats.errors
from nats.aio.client import Client
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.errors import APIError

from eddy.bus.errors import BusError, SequenceRangeError
from eddy.bus.nats_retry import TRANSIENT, is_transient, retrying
from eddy.bus.record_index import RecordIndex, RecordRef
from eddy.bus.retention import StoredBatch

_log = logging.getLogger(__name__)

FIRST_SEQ_HEADER = "Eddy-First-Seq"
COUNT_HEADER = "Eddy-Count"
WRONG_LAST_SEQUENCE = 10071  # JetStream: Nats-Expected-Last-Subject-Sequence did not hold
_PUBLISH_ATTEMPTS = 1000  # contention retries are cheap; this only bounds a livelock
_FIRST_PAUSE_S = 0.05  # after a lost ack or a missing leader, before the same message again
_MAX_PAUSE_S = 1.0
_MAX_FETCH_MESSAGES = 256
_MAX_FETCH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Message:
    """A stored record as fetched: where it is and its Arrow IPC body."""

    ref: RecordRef
    data: bytes


@dataclass
class PartitionLog:
    """What this process knows about one partition's subject (used on the loop thread)."""

    subject: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    head: tuple[int, int] | None = None
    """(stream sequence of the subject's last message, next event sequence); None: unknown."""
    index: RecordIndex = field(default_factory=RecordIndex)
    known_end: int = 0
    """Events below this sequence are known to exist (sequences only ever grow)."""
    batches: list[StoredBatch] = field(default_factory=list)
    """Messages listed for retention, oldest first, up to stream sequence ``scanned_to``."""
    scanned_to: int = 0
    purged_below: int = 1
    """Stream sequence this process purged the subject below: on a cluster a replica can
    still list those messages for a moment after the purge was acknowledged."""


@dataclass
class Cursor:
    """An ephemeral pull consumer over one subject."""

    subscription: JetStreamContext.PullSubscription
    consumer: str


class StreamLogs:
    """The partition logs of one JetStream stream."""

    def __init__(self, nc: Client, js: JetStreamContext, stream: str, timeout_s: float, *,
                 failover_s: float, leader_reads: bool) -> None:
        self.nc, self.js, self.stream, self.timeout = nc, js, stream, timeout_s
        self.failover = failover_s
        """How long a request keeps retrying through a lost server or a leader election."""
        self.leader_reads = leader_reads
        """Read single messages from the stream leader (a replicated stream)."""

    # -- appending -----------------------------------------------------------------------

    async def publish(self, log: PartitionLog, body: bytes, rows: int, msg_id: str) -> RecordRef:
        """Stores one record at the partition's next sequence; the original on a duplicate.

        A lost acknowledgement (a timeout, a server gone, no stream leader yet) is answered
        by sending the same message again, with the same id, until the fail-over budget is
        spent: JetStream checks the id before the expected-sequence condition, so a message
        that had landed is reported as a duplicate of itself, never stored twice.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.failover
        pause = _FIRST_PAUSE_S
        for _ in range(_PUBLISH_ATTEMPTS):
            if log.head is None:
                log.head = await self.head(log)
            last_stream_seq, next_seq = log.head
            headers = {
                "Nats-Msg-Id": msg_id,
                "Nats-Expected-Last-Subject-Sequence": str(last_stream_seq),
                FIRST_SEQ_HEADER: str(next_seq),
                COUNT_HEADER: str(rows),
            }
            try:
                ack = await self.js.publish(log.subject, body, timeout=self.timeout,
                                            stream=self.stream, headers=headers)
            except APIError as error:
                if error.err_code == WRONG_LAST_SEQUENCE:
                    log.head = None  # another writer appended; learn where it left off
                    continue
                if not is_transient(error):
                    raise
                failure: BaseException = error
            except TRANSIENT as error:
                failure = error
            else:
                return await self._stored(log, ack.seq, ack.duplicate, next_seq, rows)
            if loop.time() + pause > deadline:
                raise BusError(f"{log.subject}: no acknowledgement within the fail-over budget "
                               f"of {self.failover:g} s: {failure!r}") from failure
            _log.info("%s: append of %s not acknowledged (%r); sending it again in %.2f s",
                      log.subject, msg_id, failure, pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE_S)
        raise BusError(f"{log.subject}: gave up appending after {_PUBLISH_ATTEMPTS} "
                       f"attempts lost to concurrent writers")

    async def _stored(self, log: PartitionLog, stream_seq: int, duplicate: bool | None,
                      next_seq: int, rows: int) -> RecordRef:
        """Where an acknowledged record is: the original message's place for a duplicate."""
        if duplicate:
            original = await self.get(log, {"seq": stream_seq})
            if original is None:
                raise BusError(f"{log.subject}: duplicate of message {stream_seq}, "
                               f"which is gone")
            return original.ref
        ref = RecordRef(next_seq, rows, stream_seq)
        log.head = (stream_seq, ref.end_seq)
        log.index.add(ref)
        log.known_end = max(log.known_end, ref.end_seq)
        return ref

    async def head(self, log: PartitionLog) -> tuple[int, int]:
        """(stream sequence of the last message, next event sequence) of the subject."""
        last = await self.get(log, {"last_by_subj": log.subject})
        return (0, 0) if last is None else (last.ref.ref, last.ref.end_seq)

    # -- single messages -----------------------------------------------------------------

    async def get(self, log: PartitionLog, request: dict[str, Any]) -> Message | None:
        """One message of the subject (``seq``, ``last_by_subj`` or ``next_by_subj`` with
        ``seq``); None when there is none."""
        once = self._leader_get if self.leader_reads else self._direct_get
        return await retrying(lambda: once(log, request), f"{log.subject}: get {request}",
                              self.failover)

    async def _direct_get(self, log: PartitionLog, request: dict[str, Any]) -> Message | None:
        """A direct get, answered by any replica: current only on a stream of one."""
        reply = await self.nc.request(f"$JS.API.DIRECT.GET.{self.stream}",
                                      json.dumps(request).encode(), timeout=self.timeout)
        headers = reply.headers or {}
        status = headers.get("Status")
        if status == "404":
            return None
        if status:
            raise BusError(f"{log.subject}: direct get {request} failed: {status} "
                           f"{headers.get('Description', '')}")
        if headers.get("Nats-Subject") != log.subject:
            return None  # a sequence that belongs to another subject's message
        return self._message(log, headers, headers.get("Nats-Sequence"), reply.data)

    async def _leader_get(self, log: PartitionLog, request: dict[str, Any]) -> Message | None:
        """A get answered by the stream leader, which holds every acknowledged message."""
        reply = await self.nc.request(f"$JS.API.STREAM.MSG.GET.{self.stream}",
                                      json.dumps(request).encode(), timeout=self.timeout)
        answer: dict[str, Any] = json.loads(reply.data)
        error = answer.get("error")
        if error is not None:
            if error.get("code") == 404:
                return None
            APIError.from_error(error)  # raises: 503 and 500 are retried, others surface
        message = answer["message"]
        if message.get("subject") != log.subject:
            return None
        headers = _parse_headers(base64.b64decode(message.get("hdrs") or ""))
        return self._message(log, headers, message.get("seq"),
                             base64.b64decode(message.get("data") or ""))

    async def next_message(self, log: PartitionLog, stream_seq: int) -> Message | None:
        """The subject's first message at or after ``stream_seq``."""
        return await self.get(log, {"seq": max(stream_seq, 1), "next_by_subj": log.subject})

    def _message(self, log: PartitionLog, headers: dict[str, str], stream_seq: object,
                 data: bytes) -> Message:
        try:
            ref = RecordRef(int(headers[FIRST_SEQ_HEADER]), int(headers[COUNT_HEADER]),
                            int(str(stream_seq)))
        except (KeyError, ValueError):
            raise BusError(f"{log.subject}: message {stream_seq} has no {FIRST_SEQ_HEADER}/"
                           f"{COUNT_HEADER} headers; it was not written by eddy") from None
        log.index.add(ref)
        log.known_end = max(log.known_end, ref.end_seq)
        return Message(ref, data)

    # -- locating an event ---------------------------------------------------------------

    async def locate(self, log: PartitionLog, start: int, where: str) -> Message:
        """The message holding event ``start`` (known to be below the partition's end)."""
        found = await self._from_index(log, start)
        if found is not None:
            return found
        first = await self.next_message(log, 1)
        if first is None or first.ref.first_seq > start:
            oldest = "all events" if first is None else f"events before {first.ref.first_seq}"
            raise SequenceRangeError(f"{where}: {oldest} were removed by retention; cannot "
                                     f"read from {start}")
        if first.ref.holds(start):
            return first
        last = await self.get(log, {"last_by_subj": log.subject})
        if last is not None and last.ref.holds(start):
            return last
        upper = last.ref.ref if last is not None else first.ref.ref
        found = await self._search(log, start, first.ref.ref + 1, upper - 1)
        if found is None:
            raise SequenceRangeError(f"{where}: event {start} is no longer stored")
        return found

    async def _from_index(self, log: PartitionLog, start: int) -> Message | None:
        known = log.index.holding(start)
        if known is not None:
            message = await self.get(log, {"seq": known.ref})
            if message is not None and message.ref == known:
                return message
            log.index.forget(known)
        before = log.index.floor(start - 1)
        if before is not None and before.end_seq == start:  # the range after the last one read
            message = await self.next_message(log, before.ref + 1)
            if message is not None and message.ref.holds(start):
                return message
        return None

    async def _search(self, log: PartitionLog, start: int, lo: int, hi: int) -> Message | None:
        """Binary search of stream sequences [lo, hi] for the message holding ``start``."""
        below, above = log.index.floor(start), log.index.after(start)
        if below is not None:
            lo = max(lo, below.ref + 1)
        if above is not None:
            hi = min(hi, above.ref - 1)
        while lo <= hi:
            mid = (lo + hi) // 2
            probe = await self.next_message(log, mid)
            if probe is None or probe.ref.ref > hi or probe.ref.first_seq > start:
                hi = mid - 1
            elif probe.ref.holds(start):
                return probe
            else:
                lo = probe.ref.ref + 1
        return None

    # -- walking a subject ---------------------------------------------------------------

    async def open_cursor(self, log: PartitionLog, from_stream_seq: int, *,
                          headers_only: bool = False) -> Cursor:
        """A pull consumer delivering the subject from ``from_stream_seq`` on.

        Each attempt names a new consumer: right after a server dies, the meta leader may
        still place a consumer on it, and asking for that same name again would wait on the
        dead server until the budget ends. An abandoned attempt's consumer expires on its
        own (``inactive_threshold``)."""
        names: list[str] = []

        async def create() -> None:
            names.append(f"eddy_{uuid.uuid4().hex}")
            await self.js.add_consumer(self.stream, ConsumerConfig(
                name=names[-1], filter_subject=log.subject,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=max(from_stream_seq, 1), ack_policy=AckPolicy.NONE,
                headers_only=headers_only, inactive_threshold=60.0, mem_storage=True,
                num_replicas=1))

        await retrying(create, f"{log.subject}: a reader's consumer", self.failover)
        subscription = await self.js.pull_subscribe_bind(consumer=names[-1], stream=self.stream)
        return Cursor(subscription, names[-1])

    async def fetch(self, log: PartitionLog, cursor: Cursor, count: int) -> list[Message]:
        """Up to ``count`` next messages of the cursor; fewer when the subject ends, none
        when the consumer was lost with its server (the caller asks the stream which)."""
        try:
            msgs = await cursor.subscription.fetch(count, timeout=self.timeout)
        except nats.errors.Error:  # timed out, no responders, consumer gone with its node
            return []
        return [self._message(log, msg.headers or {}, msg.metadata.sequence.stream, msg.data)
                for msg in msgs]

    async def close_cursor(self, cursor: Cursor) -> None:
        await cursor.subscription.unsubscribe()
        try:
            await self.js.delete_consumer(self.stream, cursor.consumer)
        except (APIError, nats.errors.Error):
            pass  # it expires on its own after inactive_threshold

    @staticmethod
    def fetch_size(remaining_events: int, sample: Message) -> int:
        """How many messages to ask for to cover ``remaining_events``, judged by ``sample``."""
        wanted = math.ceil(remaining_events / max(sample.ref.count, 1))
        return max(1, min(wanted, _MAX_FETCH_MESSAGES,
                          _MAX_FETCH_BYTES // max(len(sample.data), 1)))

    async def list_batches(self, log: PartitionLog) -> list[StoredBatch]:
        """Every message of the subject, oldest first (headers only; new ones fetched)."""
        info = await self.stream_info(subjects_filter=log.subject)
        stored = int(info["state"].get("subjects", {}).get(log.subject, 0))
        log.batches += await self._scan(log, max(log.scanned_to + 1, log.purged_below))
        if len(log.batches) != stored:  # another process trimmed (or a replica lags): afresh
            log.batches = await self._scan(log, log.purged_below)
        log.batches = [b for b in log.batches if b.ref >= log.purged_below]
        if log.batches:
            log.scanned_to = log.batches[-1].ref
        return list(log.batches)

    async def _scan(self, log: PartitionLog, from_stream_seq: int) -> list[StoredBatch]:
        cursor = await self.open_cursor(log, from_stream_seq, headers_only=True)
        batches: list[StoredBatch] = []
        try:
            info = await cursor.subscription.consumer_info()
            pending = info.num_pending or 0
            while len(batches) < pending:
                msgs = await cursor.subscription.fetch(min(1000, pending - len(batches)),
                                                       timeout=self.timeout)
                for msg in msgs:
                    headers = msg.headers or {}
                    first, count = int(headers[FIRST_SEQ_HEADER]), int(headers[COUNT_HEADER])
                    batches.append(StoredBatch(
                        first_seq=first, last_seq=first + count - 1,
                        appended_at_ms=int(msg.metadata.timestamp.timestamp() * 1000),
                        nbytes=int(headers.get("Nats-Msg-Size", 0)),
                        ref=msg.metadata.sequence.stream))
        finally:
            await self.close_cursor(cursor)
        return batches

    async def stream_info(self, subjects_filter: str | None = None) -> dict[str, Any]:
        """The stream's info as JSON (a raw request: nats-py's parsing costs more than it)."""
        body = json.dumps({"subjects_filter": subjects_filter}).encode() if subjects_filter \
            else b""

        async def once() -> dict[str, Any]:
            reply = await self.nc.request(f"$JS.API.STREAM.INFO.{self.stream}", body,
                                          timeout=self.timeout)
            info: dict[str, Any] = json.loads(reply.data)
            error = info.get("error")
            if error is not None:
                if error.get("code") in (500, 503):
                    APIError.from_error(error)  # raises a transient error: retried
                raise BusError(f"stream {self.stream}: {error}")
            return info

        return await retrying(once, f"stream {self.stream}: info", self.failover)


def _parse_headers(block: bytes) -> dict[str, str]:
    """The headers of a ``NATS/1.0`` header block, as ``STREAM.MSG.GET`` returns them."""
    headers = {}
    for line in block.decode().split("\r\n")[1:]:
        key, colon, value = line.partition(":")
        if colon:
            headers[key.strip()] = value.strip()
    return headers
