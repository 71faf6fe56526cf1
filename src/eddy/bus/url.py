"""Opening a bus from a URL.

``sqlite:///<path>`` — the embedded bus in the SQLite file ``<path>``, which is relative
unless it starts with ``/`` (so an absolute path has four slashes, as in SQLAlchemy:
``sqlite:////var/lib/eddy/bus/bus.db``). Parameters: ``synchronous=normal|full``,
``busy_timeout`` (duration).

``nats://host:port[,host:port…]?app=<name>`` — the app's bus on NATS JetStream (``tls://``
for TLS; credentials as ``nats://user:pass@host:port``). Parameters: ``app`` (required),
``dedup_window`` (duration, default 10m), ``storage=file|memory``, ``replicas`` (int),
``timeout`` (duration of one request, default 10s), ``failover`` (duration, default 60s: how
long a request keeps retrying while a server is lost or a stream leader elected). On a
JetStream cluster list several seed servers and replicate the streams, e.g.
``nats://h1:4222,h2:4222,h3:4222?app=A&replicas=3``.

``kafka://host:port[,host:port…]?app=<name>`` — the app's bus on Kafka (or a Kafka-compatible
broker such as Tansu). Parameters: ``app`` (required), ``dedup_window`` (duration, default
10m), ``replication`` (int, default -1: the brokers' default), ``timeout`` (duration,
default 10s), ``delete_records=true|false`` (whether trimming asks Kafka to delete the
records; false for brokers without DeleteRecords, such as Tansu). See
:mod:`eddy.bus.kafka_bus`.

All take ``retention_age`` (duration), ``retention_bytes`` (size, per topic partition) and
``compression=none|lz4|zstd`` (of stored records). Durations are integers with a unit
``ms``, ``s``, ``m``, ``h`` or ``d`` (bare integers are milliseconds); sizes are integers
with an optional ``KB``, ``MB``, ``GB`` (powers of 1000) or ``KiB``, ``MiB``, ``GiB``. An
unknown parameter is an error, so a misspelt option never goes unnoticed.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from eddy.bus.api import Bus
from eddy.bus.errors import BusURLError
from eddy.bus.retention import Retention

_DURATION_UNITS = {"": 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_COMMON = {"retention_age", "retention_bytes", "compression"}
_SQLITE = _COMMON | {"synchronous", "busy_timeout"}
_NATS = _COMMON | {"app", "dedup_window", "storage", "replicas", "timeout", "failover"}
_KAFKA = _COMMON | {"app", "dedup_window", "replication", "timeout", "delete_records"}


def open_bus(url: str, *, retention: Retention | None = None) -> Bus:
    """The bus ``url`` names (see the module docstring); ``retention`` overrides the URL's."""
    parts = urlsplit(url)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    if parts.scheme == "sqlite":
        from eddy.bus.sqlite_bus import SqliteBus

        _check_params(url, params, _SQLITE)
        path = parts.path[1:] if not parts.netloc else None
        if not path:
            raise BusURLError(f"{url}: expected sqlite:///<path to the bus database>")
        return SqliteBus(
            Path(path), retention=retention or _retention(url, params),
            synchronous=params.get("synchronous", "normal"),
            busy_timeout_ms=_duration_ms(url, params, "busy_timeout", 30_000),
            compression=params.get("compression", "none"))
    if parts.scheme in ("nats", "tls"):
        from eddy.bus.nats_bus import NatsBus

        _check_params(url, params, _NATS)
        app = params.get("app")
        if not app:
            raise BusURLError(f"{url}: a NATS bus URL needs ?app=<app name>")
        return NatsBus(
            _servers(url, parts.scheme, parts.netloc), app,
            retention=retention or _retention(url, params),
            dedup_window_s=_duration_ms(url, params, "dedup_window", 600_000) / 1000,
            storage=params.get("storage", "file"),
            replicas=_int(url, params, "replicas", 1),
            compression=params.get("compression", "none"),
            timeout_s=_duration_ms(url, params, "timeout", 10_000) / 1000,
            failover_s=_duration_ms(url, params, "failover", 60_000) / 1000)
    if parts.scheme == "kafka":
        return _kafka(url, parts.netloc, params, retention)
    raise BusURLError(f"{url}: unknown bus scheme {parts.scheme!r}; use sqlite:///<path>, "
                      f"nats://<host>:<port>?app=<name> or kafka://<host>:<port>?app=<name>")


def kafka_url(bootstrap_servers: str | list[str], app: str) -> str:
    """The URL of app ``app``'s bus on the Kafka cluster at ``bootstrap_servers`` (WSO2's
    ``bootstrapURLs``: ``host:port`` entries, comma-separated or as a list)."""
    hosts = bootstrap_servers if isinstance(bootstrap_servers, list) \
        else bootstrap_servers.split(",")
    servers = [h.strip().removeprefix("kafka://").removeprefix("PLAINTEXT://")
               for h in hosts if h.strip()]
    if not servers:
        raise BusURLError("no Kafka bootstrap server given")
    return f"kafka://{','.join(servers)}?{urlencode({'app': app})}"


def nats_url(server_urls: str, app: str) -> str:
    """The URL of app ``app``'s bus on the NATS servers ``server_urls`` (WSO2's
    ``natsServerUrl``: ``nats://host:port``, several comma-separated)."""
    servers = [h.strip().removeprefix("nats://") for h in server_urls.split(",") if h.strip()]
    if not servers:
        raise BusURLError("no NATS server given")
    return f"nats://{','.join(servers)}?{urlencode({'app': app})}"


def _kafka(url: str, netloc: str, params: dict[str, str], retention: Retention | None) -> Bus:
    from eddy.bus.kafka_bus import KafkaBus

    _check_params(url, params, _KAFKA)
    app = params.get("app")
    if not app:
        raise BusURLError(f"{url}: a Kafka bus URL needs ?app=<app name>")
    servers = [host for host in netloc.split(",") if host]
    if not servers:
        raise BusURLError(f"{url}: no Kafka bootstrap server given")
    delete_records = params.get("delete_records", "true")
    if delete_records not in ("true", "false"):
        raise BusURLError(f"{url}: delete_records={delete_records!r} is not true or false")
    replication = params.get("replication", "-1")
    if not re.fullmatch(r"-1|[1-9]\d*", replication):
        raise BusURLError(f"{url}: replication={replication!r} is not -1 or a positive int")
    return KafkaBus(
        servers, app, retention=retention or _retention(url, params),
        dedup_window_s=_duration_ms(url, params, "dedup_window", 600_000) / 1000,
        replication=int(replication), compression=params.get("compression", "none"),
        timeout_s=_duration_ms(url, params, "timeout", 10_000) / 1000,
        delete_records=delete_records == "true")


def sqlite_url(path: str | Path) -> str:
    """The URL of the SQLite bus in file ``path``."""
    return f"sqlite:///{Path(path)}"


def default_url(data_dir: str | Path) -> str:
    """The embedded bus of a data directory: ``<data>/bus/bus.db``."""
    return sqlite_url(Path(data_dir) / "bus" / "bus.db")


def _servers(url: str, scheme: str, netloc: str) -> list[str]:
    credentials, _, hosts = netloc.rpartition("@")
    if not hosts:
        raise BusURLError(f"{url}: no NATS server given")
    prefix = f"{credentials}@" if credentials else ""
    return [f"{scheme}://{prefix}{host}" for host in hosts.split(",") if host]


def _check_params(url: str, params: dict[str, str], known: set[str]) -> None:
    unknown = sorted(set(params) - known)
    if unknown:
        raise BusURLError(f"{url}: unknown parameter(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(known))}")


def _retention(url: str, params: dict[str, str]) -> Retention:
    age = params.get("retention_age")
    size = params.get("retention_bytes")
    return Retention(
        max_age_ms=_parse(url, "retention_age", age, _DURATION_UNITS) if age else None,
        max_bytes=_parse(url, "retention_bytes", size, _SIZE_UNITS) if size else None)


def _duration_ms(url: str, params: dict[str, str], name: str, default: int) -> int:
    value = params.get(name)
    return _parse(url, name, value, _DURATION_UNITS) if value else default


def _int(url: str, params: dict[str, str], name: str, default: int) -> int:
    value = params.get(name)
    return _parse(url, name, value, {"": 1}) if value else default


def _parse(url: str, name: str, text: str, units: dict[str, int]) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in units:
        raise BusURLError(f"{url}: {name}={text!r} is not a number with one of the units "
                          f"{', '.join(u for u in units if u) or '(none)'}")
    return int(match.group(1)) * units[unit]
