"""Riding out a lost NATS server or a JetStream leader election, for idempotent requests.

On a JetStream cluster a node can die at any moment: the client reconnects to another seed
server, and every stream or consumer it led gets a new leader a few seconds later. Until
then requests time out, find no responders, or are answered "temporarily unavailable".
The bus retries such a request — only a request that is safe to repeat: reads, a put of the
same value, and appends, which carry a message id that JetStream deduplicates — with a
growing pause, for at most the bus's fail-over budget; past it the last error surfaces as a
:class:`BusError` that says what was being done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import nats.errors
from nats.js.errors import NoStreamResponseError, ServerError, ServiceUnavailableError

from eddy.bus.errors import BusError

log = logging.getLogger(__name__)

T = TypeVar("T")
TRANSIENT: tuple[type[BaseException], ...] = (
    nats.errors.TimeoutError,  # the request or its answer was lost with a server
    nats.errors.NoRespondersError,  # no leader yet for the stream, consumer or API
    NoStreamResponseError,  # the same, for a publish
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    ServiceUnavailableError,  # 503: JetStream has no meta or stream leader right now
    ServerError,  # 500: "stream is offline" while a replica takes over
    asyncio.TimeoutError,
)
_FIRST_PAUSE_S = 0.05
_MAX_PAUSE_S = 1.0
_QUIET_S = 10.0  # a leader election takes a few seconds; longer is logged as a warning


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is what a lost server or a leader election looks like."""
    return isinstance(error, TRANSIENT)


async def retrying(request: Callable[[], Awaitable[T]], what: str, budget_s: float) -> T:
    """``await request()``, repeated after transient failures for up to ``budget_s``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + budget_s
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return await request()
        except TRANSIENT as error:
            if loop.time() + pause > deadline:
                raise BusError(f"{what}: NATS did not answer within the fail-over budget "
                               f"of {budget_s:g} s: {error!r}") from error
            # Past a normal election the retries are worth seeing in a node's log.
            level = logging.WARNING if loop.time() - started > _QUIET_S else logging.INFO
            log.log(level, "%s: %r; retrying in %.2f s", what, error, pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, _MAX_PAUSE_S)
