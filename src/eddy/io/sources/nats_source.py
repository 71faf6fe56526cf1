"""``@source(type='nats', destination='sensors.temp', @map(type='json'))``: a core NATS subject.

Every message on ``destination`` is one payload for the mapper (which may hold several
events). ``queue.group.name`` joins a queue group, so each message goes to one member of
the group (how WSO2 spreads a round-robin stream over instances). Messages are landed on
the bus in batches of whatever arrived since the last batch.

Options (WSO2 siddhi-io-nats): ``destination`` (required), ``bootstrap.servers`` (default
``nats://localhost:4222``, comma-separated), ``queue.group.name``, ``client.id`` (the
connection name), ``cluster.id`` (accepted for NATS Streaming apps and ignored: this is
core NATS).

Guarantee: at-most-once. Core NATS does not wait for an acknowledgement: a message that
arrived but was not yet on the bus when the process died is lost, and a subscriber that
is down misses what is published meanwhile. Use a JetStream-backed bus topic when that
matters. While the bus refuses events the source retries them, so a bus outage loses
nothing that arrived.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from eddy.bus.arrow_codec import now_ms
from eddy.bus.loop_thread import LoopThread
from eddy.io.api import Deliver, Guarantee, Source
from eddy.io.errors import SourceError
from eddy.io.ingest import Ingest
from eddy.io.nats_connect import connect_nats

log = logging.getLogger("eddy.io.nats")

_BATCH_MESSAGES = 10_000
_RETRY_MAX_S = 5.0


class NatsSource(Source):
    """Receives payloads from a core NATS subject (see the module docstring)."""

    type = "nats"
    guarantee: Guarantee = "at-most-once"

    def __init__(self, ingest: Ingest, servers: list[str], subject: str,
                 queue_group: str | None = None, client_name: str | None = None) -> None:
        self.stream = ingest.stream
        self.ingest = ingest
        self.servers = servers
        self.subject = subject
        self.queue_group = queue_group
        self.client_name = client_name or f"eddy-{ingest.stream}"
        self._loop: LoopThread | None = None
        self._client: Client | None = None
        self._subscription: Subscription | None = None
        self._pending: deque[bytes] = deque()
        self._wakeup = threading.Condition()
        self._running = False
        self._worker: threading.Thread | None = None
        self._deliver: Deliver | None = None

    def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._loop = LoopThread(f"eddy-nats-source-{self.stream}")
        try:
            self._client = self._loop.run(self._connect())
        except Exception as error:
            self._loop.stop()
            self._loop = None
            raise SourceError(f"{self.describe()}: cannot connect to NATS at "
                              f"{', '.join(self.servers)}: {error}") from None
        self._running = True
        self._worker = threading.Thread(target=self._deliver_loop, daemon=True,
                                        name=f"eddy-nats-deliver-{self.stream}")
        self._worker.start()

    async def _connect(self) -> Client:
        client = await connect_nats(self.servers, self.client_name, self.describe())
        self._subscription = await client.subscribe(self.subject, queue=self.queue_group or "",
                                                    cb=self._on_message,
                                                    pending_msgs_limit=1_000_000,
                                                    pending_bytes_limit=512 * 1024 * 1024)
        await client.flush()  # the server knows the subscription before start() returns
        return client

    async def _on_message(self, message: Msg) -> None:
        with self._wakeup:
            self._pending.append(message.data)
            self._wakeup.notify()

    def _deliver_loop(self) -> None:
        while True:
            with self._wakeup:
                self._wakeup.wait_for(lambda: bool(self._pending) or not self._running)
                if not self._pending:
                    return
                count = min(len(self._pending), _BATCH_MESSAGES)
                payloads = [self._pending.popleft() for _ in range(count)]
            try:
                self._land(payloads)
            except Exception:  # a bug, not bad data: say what was lost and go on
                log.exception("%s: %d messages could not be landed and are lost",
                              self.describe(), len(payloads))

    def _land(self, payloads: list[bytes]) -> None:
        assert self._deliver is not None
        mapped = self.ingest.map(payloads)
        ts, delay = now_ms(), 0.05
        while True:
            try:
                self.ingest.land(self._deliver, mapped, ts)
                return
            except Exception as error:  # the bus refused: keep the events and retry
                if not self._running:
                    log.error("%s: stopped while the bus refused %d events; they are lost: %s",
                              self.describe(), mapped.events.num_rows, error)
                    return
                log.warning("%s: the bus refused %d events (%s); retrying in %.1f s",
                            self.describe(), mapped.events.num_rows, error, delay)
                time.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)

    def stop(self) -> None:
        if self._loop is None:
            return
        if self._client is not None:
            try:
                self._loop.run(self._client.drain(), timeout=10)
            except Exception as error:  # closing anyway
                log.warning("%s: closing the NATS connection: %s", self.describe(), error)
        with self._wakeup:
            self._running = False
            self._wakeup.notify_all()
        if self._worker is not None:
            self._worker.join(timeout=30)
        self._loop.stop()
        self._loop = None
        self._client = None
