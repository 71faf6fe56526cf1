"""``@source(type='http', receiver.url='http://0.0.0.0:8006/temp', @map(type='json'))``.

Clients POST one event or several (a JSON array, several CSV lines, …) to the receiver URL.
The answer says what became of them, and a 200 means they are durably on the bus:

* **200** ``{"events": n}`` — every event was mapped and is on the bus.
* **400** ``{"error": …, "faults": [{"event": i, "error": …}, …]}`` — the body is not what
  the mapper reads (bad JSON, a wrong type, a missing attribute, a wrong content type);
  nothing of the request is on the bus (faults go to the ``@OnError`` policy), so the
  client can fix and resend the whole request.
* **401** — ``basic.auth.enabled='true'`` and no valid credentials.
* **413** — the body is larger than the limit (``IoConfig.http_max_body_bytes``, or the
  ``request.size.validation`` option).
* **503** with ``Retry-After`` — the stream's consumers are too far behind
  (``IoConfig.behind``), or the bus could not store the events; nothing was stored.

A request with an ``Idempotency-Key`` header (any text up to 200 characters, unique per
request of the client) is stored at most once: sent again with the same key — because the
answer was lost, or eddy was killed before it answered — it is answered 200 again and adds
nothing to the bus (as long as the bus keeps the first copy: its retention, or the NATS
bus's duplicate window). A client that retries with the key gets exactly-once ingestion.

Options (WSO2 siddhi-io-http): ``receiver.url`` (default
``http://0.0.0.0:9763/<app>/<stream>``), ``basic.auth.enabled``,
``request.size.validation.configuration`` (``request.size.validation:true,
request.size.validation.maximum.value:<bytes>``) and ``worker.count`` (accepted; requests
run on a thread pool). TLS (``https://``) is not served: terminate it in front.

Guarantee: at-least-once — an event is acknowledged only once it is on the bus; a client
that retries after a timeout without an ``Idempotency-Key`` may send it twice.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import math
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from eddy.bus.arrow_codec import now_ms
from eddy.io.api import DedupKey, Deliver, Guarantee, Source
from eddy.io.config import Authenticate, Behind
from eddy.io.errors import SourceError
from eddy.io.ingest import Ingest
from eddy.io.mappers.base import Mapped
from eddy.io.metrics import REQUESTS_REJECTED, IoMetrics
from eddy.io.sources.http_server import HttpServerPool

_FAULTS_SHOWN = 20
_MAX_KEY_CHARS = 200
_STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ReceiverUrl:
    """Where an HTTP source listens."""

    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> ReceiverUrl:
        """``http://host:port/path``; ValueError saying what is wrong."""
        parts = urlsplit(url)
        if parts.scheme != "http":
            raise ValueError(f"receiver.url '{url}' must be an http:// URL"
                             + ("; eddy does not serve TLS itself (terminate https in a proxy)"
                                if parts.scheme == "https" else ""))
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"receiver.url '{url}' has an invalid port") from None
        if not parts.hostname:
            raise ValueError(f"receiver.url '{url}' has no host")
        if parts.query or parts.fragment:
            raise ValueError(f"receiver.url '{url}' must not have a query or fragment")
        return cls(parts.hostname, 80 if port is None else port, "/" + parts.path.strip("/"))


@dataclass(frozen=True)
class HttpLimits:
    """What an HTTP source refuses, and whom it asks."""

    max_body_bytes: int
    authenticate: Authenticate | None = None
    behind: Behind | None = None
    max_behind_s: float = 30.0
    max_retry_after_s: int = 60


class HttpSource(Source):
    """Receives events over HTTP POST (see the module docstring)."""

    type = "http"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, ingest: Ingest, receiver: ReceiverUrl, pool: HttpServerPool,
                 limits: HttpLimits, metrics: IoMetrics, *, basic_auth: bool = False) -> None:
        if basic_auth and limits.authenticate is None:
            raise SourceError(f"http source of {ingest.stream} has basic.auth.enabled='true' "
                              f"but eddy was given no way to check credentials")
        self.stream = ingest.stream
        self.ingest = ingest
        self.receiver = receiver
        self.pool = pool
        self.limits = limits
        self.metrics = metrics
        self.basic_auth = basic_auth
        self.port: int | None = None
        self._deliver: Deliver | None = None
        self._in_flight = 0
        self._idle = threading.Condition()

    @property
    def url(self) -> str:
        """The URL clients post to (with the port actually bound)."""
        port = self.port if self.port is not None else self.receiver.port
        return f"http://{self.receiver.host}:{port}{self.receiver.path}"

    def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self.port = self.pool.mount(self.receiver.host, self.receiver.port, self.receiver.path,
                                    self._handle)

    def stop(self) -> None:
        if self.port is None:
            return
        self.pool.unmount(self.port, self.receiver.path)
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=_STOP_TIMEOUT_S)
        self.port = None

    # -- one request ------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        refusal = self._refusal(request)
        if refusal is None:
            body, refusal = await self._body(request)
        dedup = None
        key = request.headers.get("idempotency-key")
        if refusal is None and key is not None:
            if not key.strip() or len(key) > _MAX_KEY_CHARS:
                refusal = _error(400, f"Idempotency-Key must be 1 to {_MAX_KEY_CHARS} "
                                      f"characters")
            dedup = DedupKey(f"http:{self.receiver.path}:{key.strip()}", 0)
        if refusal is not None:
            self.metrics.add(REQUESTS_REJECTED, self.stream)
            return refusal
        with self._idle:
            self._in_flight += 1
        try:
            return await run_in_threadpool(self._receive, body, _charset(request), dedup)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def _refusal(self, request: Request) -> Response | None:
        """The answer to a request refused before its body is read, if it is refused."""
        if request.method != "POST":
            return _error(405, f"send events with POST, not {request.method}",
                          {"Allow": "POST"})
        if self.basic_auth and not self._authorized(request.headers.get("authorization")):
            return _error(401, "valid basic-auth credentials are required",
                          {"WWW-Authenticate": 'Basic realm="eddy"'})
        if self.limits.behind is not None:
            behind = self.limits.behind(self.stream)
            if behind > self.limits.max_behind_s:
                wait = min(self.limits.max_retry_after_s,
                           max(1, math.ceil(behind - self.limits.max_behind_s)))
                return _error(503, f"stream '{self.stream}' is {behind:.0f} s behind; retry "
                                   f"in {wait} s", {"Retry-After": str(wait)})
        media = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        accepted = self.ingest.mapper.content_types
        if media and media not in accepted:
            return _error(400, f"Content-Type '{media}' is not accepted by the "
                               f"{self.ingest.mapper.type} mapper of '{self.stream}'; send "
                               f"{' or '.join(accepted)}")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.limits.max_body_bytes:
            return self._too_large()
        return None

    def _too_large(self) -> Response:
        return _error(413, f"the body is larger than {self.limits.max_body_bytes} bytes; send "
                           f"fewer events per request")

    def _authorized(self, header: str | None) -> bool:
        scheme, _, encoded = (header or "").partition(" ")
        if scheme.lower() != "basic" or self.limits.authenticate is None:
            return False
        try:
            user, sep, password = base64.b64decode(encoded.strip(), validate=True
                                                   ).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return bool(sep) and self.limits.authenticate(user, password)

    async def _body(self, request: Request) -> tuple[bytes, Response | None]:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.limits.max_body_bytes:
                return b"", self._too_large()
        return bytes(body), None

    def _receive(self, body: bytes, charset: str | None,
                 dedup: DedupKey | None = None) -> Response:
        """Maps and lands one request's events (on a pool thread: mapping and the bus block)."""
        assert self._deliver is not None
        ts = now_ms()
        payload: bytes | str = body
        if charset is not None and charset not in ("utf-8", "utf8"):
            try:
                payload = codecs.decode(body, charset)
            except (LookupError, UnicodeDecodeError) as error:
                self.metrics.add(REQUESTS_REJECTED, self.stream)
                return _error(400, f"the body cannot be decoded as {charset}: {error}")
        mapped = self.ingest.map([payload])
        try:
            if mapped.faults:
                self.ingest.reject(self._deliver, mapped, ts, dedup=dedup)
                self.metrics.add(REQUESTS_REJECTED, self.stream)
                return _rejection(mapped)
            self.ingest.land(self._deliver, mapped, ts, dedup=dedup)
        except Exception as error:  # the bus failed: nothing is acknowledged
            self.metrics.add(REQUESTS_REJECTED, self.stream)
            return _error(503, f"the events could not be stored ({error}); nothing was "
                               f"accepted, retry", {"Retry-After": "1"})
        return JSONResponse({"events": mapped.events.num_rows})


def _charset(request: Request) -> str | None:
    for param in (request.headers.get("content-type") or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _rejection(mapped: Mapped) -> Response:
    count = len(mapped.faults) + mapped.events.num_rows
    first = mapped.faults[0]
    summary = first.reason if count == 1 else \
        f"{len(mapped.faults)} of {count} events are malformed (event {first.index}: " \
        f"{first.reason}); none was accepted"
    return JSONResponse({
        "error": summary,
        "faults": [{"event": f.index, "error": f.reason} for f in mapped.faults[:_FAULTS_SHOWN]],
        "rejected": len(mapped.faults),
    }, status_code=400)

