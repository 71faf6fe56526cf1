"""An app's own sources and sinks, running around its query (DESIGN.md §2).

:class:`AppConnectors` is what a process that runs an app (the worker, ``eddy run``) starts
beside the app's Spark query:

* it creates the topics the sources deliver to — ``<app>.<S>`` for every stream with a
  ``@source``, and ``<app>.!S`` when ``S`` has ``@OnError(action='STREAM')`` — and the
  topics of every stream with a ``@sink``, with the definitions the query's runner uses;
* it starts one :class:`~eddy.io.sink_follower.SinkFollower` per sink, which publishes the
  stream's topic from the sink's committed bus position (see that module for the
  guarantees: exactly-once for a JetStream NATS sink, at-least-once for the others);
* then it starts the sources, which land events on the bus through
  :class:`~eddy.io.delivery.BusDeliver` and acknowledge them only once they are durable.

Given the bus consumer of the app's query (``lag_consumer``), the sources also learn how far
the query is behind their topics (:class:`~eddy.io.lag.ConsumerLag`), and an HTTP source
refuses requests with 503 and ``Retry-After`` while that exceeds ``IoConfig.max_behind_s``.

The query itself (bus in → Spark → bus out) is not started here, so stopping the
connectors while the query restarts for a backup is never needed, and a query restart does
not close the app's HTTP ports.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Callable
from pathlib import Path

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.io.api import Sink, Source
from eddy.io.config import IoConfig
from eddy.io.delivery import BusDeliver
from eddy.io.factory import build_sinks, build_sources, delivery_streams
from eddy.io.lag import ConsumerLag
from eddy.io.sink_follower import SinkFollower
from eddy.lang.semantic import AnalyzedApp

log = logging.getLogger("eddy.io.connectors")


def query_consumer(app: str, group: str = "main") -> str:
    """The bus consumer of an app's query on its input topics: ``<app>/<group>``, the name
    :class:`~eddy.engine.run.group_runner.GroupRunner` reads under (one group, ``main``, for
    now)."""
    return f"{app}/{group}"


def app_topic(app: str, stream: str) -> str:
    """The bus topic of an app's stream: ``<app>.<stream>`` (as :mod:`eddy.plan` names it)."""
    return f"{app}.{stream}"


class AppConnectors:
    """The sources and sinks of one app over one bus (see the module docstring).

    Building checks every ``@source``/``@sink``/``@map`` (SiddhiAppError listing the faults)
    but opens nothing; :meth:`start` binds ports and connects.
    """

    def __init__(self, analyzed: AnalyzedApp, bus: Bus | str, config: IoConfig, *,
                 partitions: int = 1,
                 topic_of: Callable[[str], str] | None = None,
                 lag_consumer: str | None = None) -> None:
        self.analyzed = analyzed
        self.partitions = partitions
        self.topic_of = topic_of or (lambda stream: app_topic(analyzed.name, stream))
        if lag_consumer is not None and config.behind is None:
            config = dataclasses.replace(config, behind=ConsumerLag(
                lambda: self.bus, lag_consumer, self.topic_of))
        self.config = config
        self.sources: list[Source] = build_sources(analyzed, config)
        self.sinks: dict[str, list[Sink]] = build_sinks(analyzed, config)
        self.followers: list[SinkFollower] = []
        self._bus_url = bus if isinstance(bus, str) else None
        self._bus: Bus | None = None if isinstance(bus, str) else bus
        self._started: list[Source] = []

    @property
    def bus(self) -> Bus:
        """The bus the connectors use (opened on :meth:`start` when given as a URL)."""
        if self._bus is None:
            assert self._bus_url is not None
            self._bus = open_bus(self._bus_url)
        return self._bus

    def create_topics(self) -> None:
        """The topics of the sources (and their fault streams) and of the sinks."""
        streams = dict(delivery_streams(self.analyzed))
        for stream in self.sinks:
            streams.setdefault(stream, self.analyzed.streams[stream].attributes)
        for stream, attributes in streams.items():
            self.bus.create_topic(TopicSpec(self.topic_of(stream), attributes,
                                            partitions=self.partitions))

    def start(self) -> None:
        """Creates the topics, starts the sinks' followers, then the sources; on a failure
        stops what it started and raises."""
        try:
            self.create_topics()
            token = self._token()
            for stream, sinks in self.sinks.items():
                for index, sink in enumerate(sinks):
                    consumer = f"{self.analyzed.name}/sink/{stream}/{index}"
                    follower = SinkFollower(self.bus, self.topic_of(stream), sink, consumer,
                                            token)
                    follower.start()
                    self.followers.append(follower)
                    log.info("%s of app %s: %s", sink.describe(), self.analyzed.name,
                             sink.guarantee)
            deliver = BusDeliver(self.bus, self.topic_of)
            for source in self.sources:
                source.start(deliver)
                self._started.append(source)
                log.info("%s of app %s: listening (%s)", source.describe(), self.analyzed.name,
                         source.guarantee)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stops the sources (waiting for deliveries in flight), then the sinks; safe to call
        twice. Sink positions stay committed for the next start."""
        for source in reversed(self._started):
            try:
                source.stop()
            except Exception:
                log.exception("%s did not stop cleanly", source.describe())
        self._started = []
        for follower in self.followers:
            follower.stop()
        self.followers = []
        for sinks in self.sinks.values():
            for sink in sinks:
                try:
                    sink.close()
                except Exception:
                    log.exception("%s did not close cleanly", sink.describe())
        if self._bus is not None and self._bus_url is not None:
            self._bus.close()
            self._bus = None

    def wait_until_published(self, timeout: float) -> bool:
        """Whether every sink caught up with its topic within ``timeout`` s (for tests)."""
        return all(f.wait_until_published(timeout) for f in self.followers)

    def _token(self) -> str:
        """The app's sink-id token: the node's shared one (``IoConfig.sink_token``), else a
        random one created once and kept under ``state_dir``."""
        if self.config.sink_token is not None:
            return self.config.sink_token(self.analyzed.name)
        path = Path(self.config.state_dir) / f"{self.analyzed.name}.sink-token"
        if path.exists():
            return path.read_text(encoding="utf-8").strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(8)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(token, encoding="utf-8")
        temporary.replace(path)
        return token

    def __enter__(self) -> AppConnectors:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
