"""The ``@sink`` types eddy knows, their options, and how each is built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from eddy.io.api import Sink
from eddy.io.config import IoConfig
from eddy.io.mappers.base import SinkMapper
from eddy.io.options import Option, Options
from eddy.io.sinks.file_sink import FileSink
from eddy.io.sinks.inmemory_sink import InMemorySink
from eddy.io.sinks.log_sink import PRIORITIES, LogSink
from eddy.io.source_types import DEFAULT_NATS, file_path
from eddy.lang.ast import Attribute


@dataclass(frozen=True)
class SinkSpec:
    """Everything a sink type needs to build one sink (one destination)."""

    app: str
    stream: str
    attributes: tuple[Attribute, ...]
    opts: Options
    mapper: SinkMapper
    config: IoConfig


@dataclass(frozen=True)
class SinkType:
    """One ``@sink(type=…)``."""

    name: str
    options: tuple[Option, ...]
    build: Callable[[SinkSpec], Sink]
    default_mapper: str = "json"
    textual: bool = True
    """Whether it sends text (so passThrough, which yields Python objects, is wrong)."""


def _log(spec: SinkSpec) -> Sink:
    opts = spec.opts
    return LogSink(spec.stream, spec.attributes, spec.mapper, spec.config.metrics,
                   prefix=opts.text("prefix") or f"{spec.app} : {spec.stream}",
                   priority=opts.choice("priority", PRIORITIES))


def _http(spec: SinkSpec) -> Sink:
    from eddy.io.sinks.http_sink import HttpSink, parse_headers

    opts = spec.opts
    url = opts.require("publisher.url")
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise opts.error(f"publisher.url '{url}' must be an http:// or https:// URL")
    user, password = opts.text("basic.auth.username"), opts.text("basic.auth.password")
    if (user is None) != (password is None):
        raise opts.error("give basic.auth.username and basic.auth.password together")
    try:
        headers = parse_headers(opts.text("headers") or "")
    except ValueError as error:
        raise opts.error(str(error)) from None
    return HttpSink(spec.stream, spec.attributes, spec.mapper, spec.config.metrics, url=url,
                    method=opts.choice("method", ("POST", "PUT", "PATCH", "GET", "DELETE")),
                    headers=headers,
                    auth=(user, password) if user is not None and password is not None
                    else None,
                    timeout_s=opts.duration_ms("socket.idle.timeout") / 1000,
                    max_retries=opts.integer("max.retries"),
                    retry_interval_s=opts.duration_ms("retry.interval") / 1000)


def _nats(spec: SinkSpec) -> Sink:
    from eddy.io.sinks.nats_sink import NatsSink

    opts = spec.opts
    servers = [s.strip() for s in (opts.text("bootstrap.servers") or DEFAULT_NATS).split(",")
               if s.strip()]
    return NatsSink(spec.stream, spec.attributes, spec.mapper, spec.config.metrics,
                    servers=servers, subject=opts.require("destination"),
                    jetstream=opts.flag("jetstream"), client_name=opts.text("client.id"))


def _file(spec: SinkSpec) -> Sink:
    opts = spec.opts
    return FileSink(spec.stream, spec.attributes, spec.mapper, spec.config.metrics,
                    path=file_path(opts.require("file.uri")), append=opts.flag("append"),
                    line_separator=opts.flag("add.line.separator"))


def _in_memory(spec: SinkSpec) -> Sink:
    return InMemorySink(spec.stream, spec.attributes, spec.mapper, spec.config.metrics,
                        topic=spec.opts.require("topic"), broker=spec.config.broker)


SINK_TYPES: dict[str, SinkType] = {t.name.lower(): t for t in (
    SinkType("log", (Option("prefix"), Option("priority", "INFO")), _log,
             default_mapper="passThrough", textual=False),
    SinkType("http", (Option("publisher.url", required=True), Option("method", "POST"),
                      Option("headers"), Option("basic.auth.username"),
                      Option("basic.auth.password"), Option("socket.idle.timeout", "6000"),
                      Option("max.retries", "5"), Option("retry.interval", "100")), _http),
    SinkType("nats", (Option("destination", required=True), Option("bootstrap.servers"),
                      Option("client.id"), Option("cluster.id"), Option("jetstream", "false")),
             _nats),
    SinkType("file", (Option("file.uri", required=True), Option("append", "true"),
                      Option("add.line.separator", "true")), _file),
    SinkType("inMemory", (Option("topic", required=True),), _in_memory,
             default_mapper="passThrough", textual=False),
)}
