"""The ``@source`` types eddy knows, their options, and how each is built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eddy.io.api import Source
from eddy.io.config import IoConfig
from eddy.io.ingest import Ingest
from eddy.io.options import Option, Options
from eddy.io.sources.file_source import FileSource
from eddy.io.sources.inmemory_source import InMemorySource

DEFAULT_NATS = "nats://localhost:4222"


@dataclass(frozen=True)
class SourceSpec:
    """Everything a source type needs to build one source."""

    app: str
    stream: str
    index: int
    """The position of this ``@source`` among the stream's, from 0."""
    opts: Options
    ingest: Ingest
    config: IoConfig


@dataclass(frozen=True)
class SourceType:
    """One ``@source(type=…)``."""

    name: str
    options: tuple[Option, ...]
    build: Callable[[SourceSpec], Source]
    default_mapper: str = "json"
    textual: bool = True
    """Whether its payloads are bytes (so passThrough, which needs Python rows, is wrong)."""


def file_path(uri: str) -> Path:
    """``file:/a/b``, ``file:///a/b`` or a plain path, as a path."""
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    if uri.startswith("file:"):
        return Path(uri[len("file:"):])
    return Path(uri)


def _http(spec: SourceSpec) -> Source:
    from eddy.io.sources.http_server import default_pool
    from eddy.io.sources.http_source import HttpLimits, HttpSource, ReceiverUrl

    opts, config = spec.opts, spec.config
    url = opts.text("receiver.url") or f"http://0.0.0.0:9763/{spec.app}/{spec.stream}"
    try:
        receiver = ReceiverUrl.parse(url)
    except ValueError as error:
        raise opts.error(str(error)) from None
    basic_auth = opts.flag("basic.auth.enabled")
    if basic_auth and config.authenticate is None:
        raise opts.error("basic.auth.enabled='true', but eddy has no credentials to check "
                         "them against", hint="configure the users of the worker "
                         "(IoConfig.authenticate)")
    max_body = config.http_max_body_bytes
    size_rule = opts.text("request.size.validation.configuration")
    if size_rule:
        max_body = _request_size_limit(opts, size_rule, max_body)
    limits = HttpLimits(max_body, config.authenticate, config.behind, config.max_behind_s,
                        config.max_retry_after_s)
    return HttpSource(spec.ingest, receiver, config.http_servers or default_pool(), limits,
                      config.metrics, basic_auth=basic_auth)


def _request_size_limit(opts: Options, rule: str, default: int) -> int:
    """WSO2's ``request.size.validation:true,request.size.validation.maximum.value:N``."""
    settings = dict(entry.strip().partition(":")[::2] for entry in rule.split(",") if entry)
    if settings.get("request.size.validation", "false").strip().lower() != "true":
        return default
    value = settings.get("request.size.validation.maximum.value", "").strip()
    if not value.isdigit():
        raise opts.error("request.size.validation.configuration needs "
                         "request.size.validation.maximum.value:<bytes>")
    return int(value)


def _nats(spec: SourceSpec) -> Source:
    from eddy.io.sources.nats_source import NatsSource

    opts = spec.opts
    servers = [s.strip() for s in (opts.text("bootstrap.servers") or DEFAULT_NATS).split(",")
               if s.strip()]
    return NatsSource(spec.ingest, servers, opts.require("destination"),
                      opts.text("queue.group.name"), opts.text("client.id"))


def _file(spec: SourceSpec) -> Source:
    opts = spec.opts
    mode = opts.choice("mode", ("line", "text.full"))
    position = spec.config.state_dir / f"{spec.app}.{spec.stream}.{spec.index}.position.json"
    return FileSource(spec.ingest, file_path(opts.require("file.uri")), position,
                      tailing=opts.flag("tailing"), whole_file=mode == "text.full",
                      poll_interval_s=opts.duration_ms("file.polling.interval") / 1000)


def _in_memory(spec: SourceSpec) -> Source:
    return InMemorySource(spec.ingest, spec.opts.require("topic"), spec.config.broker)


def _kafka(spec: SourceSpec) -> Source:
    from eddy.io.sources.kafka_source import KafkaSource, parse_optional_configuration

    opts = spec.opts
    opts.choice("threading.option", ("single.thread", "topic.wise", "partition.wise"))
    partitions = opts.text("partition.no.list")
    try:
        settings = parse_optional_configuration(opts.text("optional.configuration") or "")
        numbers = None if partitions is None else \
            [int(p) for p in partitions.split(",") if p.strip()]
    except ValueError as error:
        raise opts.error(str(error)) from None
    topics = [t.strip() for t in opts.require("topic.list").split(",") if t.strip()]
    return KafkaSource(spec.ingest, opts.require("bootstrap.servers"), topics,
                       opts.require("group.id"), partitions=numbers,
                       commit_offsets=opts.flag("enable.offsets.commit"), settings=settings)


SOURCE_TYPES: dict[str, SourceType] = {t.name.lower(): t for t in (
    SourceType("http", (Option("receiver.url"), Option("basic.auth.enabled", "false"),
                        Option("worker.count", "1"),
                        Option("request.size.validation.configuration")), _http),
    SourceType("nats", (Option("destination", required=True), Option("bootstrap.servers"),
                        Option("queue.group.name"), Option("client.id"), Option("cluster.id")),
               _nats),
    SourceType("file", (Option("file.uri", required=True), Option("mode", "line"),
                        Option("tailing", "true"), Option("file.polling.interval", "1000")),
               _file),
    SourceType("inMemory", (Option("topic", required=True),), _in_memory,
               default_mapper="passThrough", textual=False),
    SourceType("kafka", (Option("topic.list", required=True), Option("group.id", required=True),
                         Option("bootstrap.servers", required=True),
                         Option("threading.option", "single.thread"),
                         Option("partition.no.list"), Option("enable.offsets.commit", "true"),
                         Option("optional.configuration")), _kafka),
)}
