"""Connecting to NATS the way sources and sinks need: a bounded first attempt, then
reconnecting forever, with connection trouble logged as one line, not a traceback."""

from __future__ import annotations

import asyncio
import logging

import nats
from nats.aio.client import Client

log = logging.getLogger("eddy.io.nats")

CONNECT_TIMEOUT_S = 2.0


async def connect_nats(servers: list[str], name: str, owner: str,
                       timeout_s: float = CONNECT_TIMEOUT_S) -> Client:
    """A connected client; raises (TimeoutError or the connection error) when no server
    answers within ``timeout_s``. Once connected it reconnects for as long as it lives."""

    async def on_error(error: Exception) -> None:
        log.warning("%s: NATS connection: %s", owner, error or type(error).__name__)

    async def on_disconnect() -> None:
        log.warning("%s: disconnected from NATS; reconnecting", owner)

    async def on_reconnect() -> None:
        log.info("%s: reconnected to NATS", owner)

    try:
        return await asyncio.wait_for(
            nats.connect(servers=servers, name=name, connect_timeout=timeout_s,
                         max_reconnect_attempts=-1, reconnect_time_wait=0.5,
                         error_cb=on_error, disconnected_cb=on_disconnect,
                         reconnected_cb=on_reconnect),
            timeout=timeout_s)
    except TimeoutError:
        raise TimeoutError(f"no answer within {timeout_s:.0f} s") from None
