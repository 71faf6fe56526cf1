"""What the worker needs from a running app, and the engine's runner behind it.

The registry (:mod:`eddy.node.registry`) starts, stops and watches apps only through the
:class:`AppRunner` protocol, so the control plane does not depend on how the engine runs an
app. :func:`spark_runner_factory` makes the real one: the engine's ``GroupRunner``, one Spark
streaming query per app from its input topics on the bus to its output topics, with its
checkpoint in the folder the registry gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from eddy.io import IoConfig
    from eddy.lang.semantic import AnalyzedApp


@dataclass(frozen=True)
class AppSpec:
    """Everything needed to run one app: its text, where its checkpoint lives, the bus."""

    name: str
    text: str
    checkpoint_dir: Path
    bus_url: str


@dataclass(frozen=True)
class RunnerStatus:
    """A runner's health: ``error`` is why it stopped on its own, None while it is healthy.

    ``metrics`` holds whatever the engine measures (events in/out per second, micro-batch
    latency, state rows), as flat numbers keyed by name.
    """

    running: bool
    error: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)


class AppRunner(Protocol):
    """One app, running continuously. ``start`` raises when the app cannot start."""

    def start(self) -> None:
        """Starts the app from its checkpoint (or from the beginning without one)."""

    def stop(self) -> None:
        """Stops the app after its current micro-batch; its checkpoint stays consistent."""

    def status(self) -> RunnerStatus:
        """Whether the app runs, and why not when it failed."""

    def await_idle(self, timeout: float) -> bool:
        """Waits until the events on the app's inputs now are processed; False on timeout."""


RunnerFactory = Callable[[AppSpec], AppRunner]


class AppIo(Protocol):
    """An app's own sources and sinks (:class:`~eddy.io.app_connectors.AppConnectors`),
    started with the app and stopped when it is undeployed — not when its query restarts
    for a backup or restore, so its ports stay open meanwhile."""

    def start(self) -> None:
        """Creates the app's source and sink topics, starts its sinks, then its sources."""

    def stop(self) -> None:
        """Stops the sources, then the sinks; their bus positions stay committed."""


IoFactory = Callable[[AppSpec, "AnalyzedApp"], AppIo]


def connector_factory(io_dir: Path, config: IoConfig | None = None) -> IoFactory:
    """The factory of real connectors: topics ``<app>.<stream>`` on the app's bus, source
    and sink state (file positions, sink-id tokens) under ``io_dir``; ``config`` gives the
    node's other settings (credentials, lag bound). Sources learn the lag of the app's query
    (:class:`~eddy.io.lag.ConsumerLag`)."""
    from dataclasses import replace

    from eddy.io import IoConfig
    from eddy.io.app_connectors import AppConnectors, query_consumer

    config = replace(config or IoConfig(), state_dir=io_dir)

    def make(spec: AppSpec, analyzed: AnalyzedApp) -> AppIo:
        prefix = topic_prefix(spec.name)
        return AppConnectors(analyzed, spec.bus_url, config,
                             topic_of=lambda stream: prefix + stream,
                             lag_consumer=query_consumer(analyzed.name))

    return make


class EngineUnavailable(RuntimeError):
    """The Spark engine (pyspark, or the engine's group runner) is not installed."""


MAX_ROWS_PER_BATCH = 100_000
"""The most input events one micro-batch takes: a backlog (HTTP bursts, a restart) is worked
off in bounded batches, as one batch of a million events exhausted the driver's heap."""


class GroupRunnerAdapter:
    """:class:`AppRunner` over the engine's ``GroupRunner``; the app's topics are
    ``<app>.<stream>``, as ``eddy explain`` names them, so apps on one bus stay apart."""

    def __init__(self, spec: AppSpec, real_time_batch_ms: int | None = None) -> None:
        try:
            from eddy.engine.group_runner import GroupRunner
        except ImportError as error:
            raise EngineUnavailable(f"the Spark engine cannot run apps here: {error}") from None
        self._runner = GroupRunner(spec.text, spec.bus_url, spec.checkpoint_dir,
                                   topic_prefix=topic_prefix(spec.name),
                                   filename=f"{spec.name}.siddhi",
                                   max_rows_per_batch=MAX_ROWS_PER_BATCH,
                                   real_time_batch_ms=real_time_batch_ms)

    def start(self) -> None:
        """Starts the app's streaming query."""
        self._runner.start()

    def stop(self) -> None:
        """Stops the app's streaming query."""
        self._runner.stop()

    def await_idle(self, timeout: float) -> bool:
        """Waits for the app's query to catch up with its inputs."""
        return self._runner.await_idle(timeout)

    def status(self) -> RunnerStatus:
        """The engine's status, with its figures per app and per query."""
        raw = self._runner.status()
        metrics = self._runner.metrics() if raw.state == "running" else {}
        if raw.last_batch_id is not None:
            metrics["last_batch_id"] = float(raw.last_batch_id)
        return RunnerStatus(running=raw.state == "running", error=raw.error, metrics=metrics)

    def store_query(self, query: str) -> list[list[Any]]:
        """Runs an on-demand query against the app's live state."""
        return self._runner.store_query(query)


def topic_prefix(app: str) -> str:
    """The prefix of an app's topic names on a worker's bus."""
    return f"{app}."


def forget_query_identity(checkpoint_dir: Path) -> None:
    """Readies a revision's copy of a checkpoint to go live (the engine knows how:
    ``GroupRunner.prepare_restore``)."""
    from eddy.engine.group_runner import GroupRunner

    GroupRunner.prepare_restore(checkpoint_dir)


def spark_runner_factory(real_time_batch_s: float | None = None) -> RunnerFactory:
    """The factory of real runners: every app on the process's one SparkSession; stateless
    apps in real-time mode when ``real_time_batch_s`` is set (``eddy.realTimeBatchS``)."""
    if real_time_batch_s is None:
        return GroupRunnerAdapter
    batch_ms = max(1, round(real_time_batch_s * 1000))
    return lambda spec: GroupRunnerAdapter(spec, batch_ms)
