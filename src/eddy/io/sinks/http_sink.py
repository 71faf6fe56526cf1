"""``@sink(type='http', publisher.url='http://host/path', @map(type='json'))``: one HTTP
request per event, with retries (siddhi-io-http; httpx).

Options: ``publisher.url`` (required), ``method`` (default POST), ``headers``
(``"'Name:value','Name2:value2'"``, as WSO2 writes them), ``basic.auth.username`` and
``basic.auth.password``, ``socket.idle.timeout`` (ms, default 6000: the timeout of one
request), and eddy's ``max.retries`` (default 5) and ``retry.interval`` (ms, default 100).

A request that fails to connect, times out, or is answered 5xx or 429 is retried after
``retry.interval``, doubling each time up to 30 s (a ``Retry-After`` of a 429/503 answer is
honoured up to that cap); other 4xx answers mean the request itself is wrong and fail at
once. When retries run out, ``publish`` raises :class:`~eddy.io.errors.PublishError` and
the events after the failing one are not sent.

Guarantee: at-least-once — a request whose answer was lost is sent again. When the caller
passes event ids, each request carries one as ``Idempotency-Key`` so a server can drop
repeats.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import httpx

from eddy.io.api import Event, Guarantee
from eddy.io.errors import PublishError
from eddy.io.mappers.base import SinkMapper
from eddy.io.metrics import IoMetrics
from eddy.io.sinks.base import MappedSink
from eddy.lang.ast import Attribute

log = logging.getLogger("eddy.io.http_sink")

_MAX_BACKOFF_S = 30.0


def parse_headers(text: str) -> dict[str, str]:
    """WSO2's ``headers`` option, ``"'Name:value','Other:value'"``, as a dict; ValueError
    naming an entry without a colon."""
    headers: dict[str, str] = {}
    for entry in text.split("','"):
        entry = entry.strip().strip("'").strip()
        if not entry:
            continue
        name, sep, value = entry.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"header '{entry}' is not Name:value")
        headers[name.strip()] = value.strip()
    return headers


class HttpSink(MappedSink):
    """Sends each event as an HTTP request (see the module docstring)."""

    type = "http"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, stream: str, attributes: Sequence[Attribute], mapper: SinkMapper,
                 metrics: IoMetrics, *, url: str, method: str = "POST",
                 headers: dict[str, str] | None = None, auth: tuple[str, str] | None = None,
                 timeout_s: float = 6.0, max_retries: int = 5, retry_interval_s: float = 0.1
                 ) -> None:
        super().__init__(stream, attributes, mapper, metrics)
        self.url = url
        self.method = method.upper()
        self.max_retries = max_retries
        self.retry_interval_s = retry_interval_s
        self.headers = {"Content-Type": mapper.content_type, **(headers or {})}
        self._client = httpx.Client(timeout=timeout_s, auth=auth)

    def _send(self, events: list[Event], ids: Sequence[str] | None) -> None:
        for index, event in enumerate(events):
            headers = self.headers if ids is None else \
                {**self.headers, "Idempotency-Key": ids[index]}
            self._request(self.mapper.text(event).encode("utf-8"), headers)

    def _request(self, body: bytes, headers: dict[str, str]) -> None:
        delay = self.retry_interval_s
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            try:
                response = self._client.request(self.method, self.url, content=body,
                                                 headers=headers)
            except httpx.TransportError as error:
                problem = f"{type(error).__name__}: {error}"
            else:
                if response.status_code < 400:
                    return
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in (429,) and response.status_code < 500:
                    raise PublishError(f"{self.describe()}: {self.url} refused the event "
                                       f"({problem})")
                wait = _retry_after(response)
            if attempt == self.max_retries:
                raise PublishError(f"{self.describe()}: {self.url} failed after "
                                   f"{attempt + 1} attempts ({problem})")
            pause = min(wait if wait is not None else delay, _MAX_BACKOFF_S)
            log.warning("%s: %s (%s); retrying in %.2f s", self.describe(), self.url, problem,
                        pause)
            time.sleep(pause)
            delay = min(delay * 2, _MAX_BACKOFF_S)

    def close(self) -> None:
        self._client.close()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    return float(value) if value.isdigit() else None
