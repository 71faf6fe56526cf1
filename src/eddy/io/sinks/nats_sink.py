"""``@sink(type='nats', destination='alerts', @map(type='json'))``: one NATS message per event.

Options (WSO2 siddhi-io-nats): ``destination`` (required), ``bootstrap.servers`` (default
``nats://localhost:4222``, comma-separated), ``client.id`` (the connection name),
``cluster.id`` (accepted for NATS Streaming apps and ignored), and eddy's ``jetstream``
(default false).

* Core NATS (``jetstream='false'``): ``publish`` returns once the server has every message
  (a flush). At-least-once towards the server; as always with core NATS, subscribers that
  are not connected do not get the messages.
* JetStream (``jetstream='true'``): each message is published to the JetStream stream that
  captures ``destination`` (it must exist) and acknowledged by it. With event ids, each
  message carries ``Nats-Msg-Id`` = its id, so a batch published again is dropped by
  JetStream within its duplicate window: exactly-once.

The connection opens on the first publish, so building a sink does not need the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.js.errors import Error as JetStreamError

from eddy.bus.loop_thread import LoopThread
from eddy.io.api import Event, Guarantee
from eddy.io.errors import PublishError
from eddy.io.mappers.base import SinkMapper
from eddy.io.metrics import IoMetrics
from eddy.io.nats_connect import connect_nats
from eddy.io.sinks.base import MappedSink
from eddy.lang.ast import Attribute

_TIMEOUT_S = 10.0
_IN_FLIGHT = 4000


class NatsSink(MappedSink):
    """Publishes each event as a NATS message (see the module docstring)."""

    type = "nats"

    def __init__(self, stream: str, attributes: Sequence[Attribute], mapper: SinkMapper,
                 metrics: IoMetrics, *, servers: list[str], subject: str,
                 jetstream: bool = False, client_name: str | None = None) -> None:
        super().__init__(stream, attributes, mapper, metrics)
        self.servers = servers
        self.subject = subject
        self.jetstream = jetstream
        self.guarantee: Guarantee = "exactly-once" if jetstream else "at-least-once"
        self.client_name = client_name or f"eddy-sink-{stream}"
        self._loop: LoopThread | None = None
        self._client: Client | None = None

    def _send(self, events: list[Event], ids: Sequence[str] | None) -> None:
        payloads = [self.mapper.text(e).encode("utf-8") for e in events]
        if self._loop is None:
            self._loop = LoopThread(f"eddy-nats-sink-{self.stream}")
        try:
            self._loop.run(self._publish(payloads, ids), timeout=_TIMEOUT_S * 6)
        except (NatsError, JetStreamError, OSError, TimeoutError) as error:
            raise PublishError(f"{self.describe()}: publishing to '{self.subject}' failed: "
                               f"{type(error).__name__}: {error}") from None

    async def _connected(self) -> Client:
        if self._client is None or self._client.is_closed:
            self._client = await connect_nats(self.servers, self.client_name, self.describe())
        return self._client

    async def _publish(self, payloads: list[bytes], ids: Sequence[str] | None) -> None:
        client = await self._connected()
        if not self.jetstream:
            for payload in payloads:
                await client.publish(self.subject, payload)
            await client.flush(timeout=int(_TIMEOUT_S))
            return
        # Pipelined: every message goes out at once with its own reply inbox, and the
        # acknowledgements are awaited together (1.5x the rate of a request per message).
        js = client.jetstream(timeout=_TIMEOUT_S, publish_async_max_pending=_IN_FLIGHT)
        acks = [await js.publish_async(
                    self.subject, payload, wait_stall=_TIMEOUT_S,
                    headers={"Nats-Msg-Id": ids[i]} if ids is not None else None)
                for i, payload in enumerate(payloads)]
        await asyncio.wait_for(asyncio.gather(*acks), timeout=_TIMEOUT_S)

    def close(self) -> None:
        if self._loop is None:
            return
        if self._client is not None:
            try:
                self._loop.run(self._client.close(), timeout=_TIMEOUT_S)
            except Exception:  # closing: nothing left to save
                pass
        self._loop.stop()
        self._loop = None
        self._client = None
