"""What the worker needs from a running app, and the engine's runner behind it.

The registry (:mod:`eddy.node.registry`) starts, stops and watches apps only through the
:class:`AppRunner` protocol, so the control plane does not depend on how the engine runs an
app. :func:`spark_runner_factory` makes the real one: the engine's ``AppGroups``, one Spark
streaming query per execution group instance of the app (:mod:`eddy.engine.run.app_groups`)
from its input topics on the bus to its output topics, with its
checkpoint in the folder the registry gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from eddy.plan.bus_binding import bus_bindings, topic_of

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
    before_write: Callable[[int], None] | None = None
    """Minimum HA: called with each micro-batch's id when it starts, before it is computed
    (table writes) and before any of its outputs is written; raising fails the query with
    nothing written (fencing)."""
    after_output: Callable[[int, int], None] | None = None
    """Minimum HA: called with a micro-batch's id and the number of events it appended,
    once they are on the bus (a failover's first output is measured with it)."""


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
    """The factory of real connectors: topics ``<app>.<stream>`` on the app's bus (a child
    app's ``@bus`` topics for its crossing streams), source
    and sink state (file positions, sink-id tokens) under ``io_dir``; ``config`` gives the
    node's other settings (credentials, lag bound). Sources learn the lag of the app's query
    (:class:`~eddy.io.lag.ConsumerLag`)."""
    from dataclasses import replace

    from eddy.io import IoConfig
    from eddy.io.app_connectors import AppConnectors, query_consumer

    config = replace(config or IoConfig(), state_dir=io_dir)

    def make(spec: AppSpec, analyzed: AnalyzedApp) -> AppIo:
        prefix = topic_prefix(spec.name)
        bindings = bus_bindings(analyzed.app)  # a child app's streams are its parent's topics
        watched = lag_app(spec.text, analyzed)
        return AppConnectors(analyzed, spec.bus_url, config,
                             topic_of=lambda stream: topic_of(bindings, prefix, stream),
                             lag_consumer=None if watched is None else query_consumer(watched))

    return make


def lag_app(text: str, analyzed: AnalyzedApp) -> str | None:
    """The app (or child app) whose query's lag the app's sources watch: the app's own
    query; for a ``@dist`` app run on this worker as its groups, the first group with
    queries; None for a receiver child, which runs no query (the groups reading its topics
    run elsewhere)."""
    from eddy.plan.children import PASSTHROUGH, split_app

    children = split_app(text, f"{analyzed.name}.siddhi")
    computing = [c for c in children if not c.group.startswith(PASSTHROUGH)]
    if len(children) == 1:
        return analyzed.name if analyzed.queries or not bus_bindings(analyzed.app) else None
    return computing[0].name if computing else None


class EngineUnavailable(RuntimeError):
    """The Spark engine (pyspark, or the engine's group runner) is not installed."""


MAX_ROWS_PER_BATCH = 100_000
"""The most input events one micro-batch takes: a backlog (HTTP bursts, a restart) is worked
off in bounded batches, as one batch of a million events exhausted the driver's heap."""


class GroupRunnerAdapter:
    """:class:`AppRunner` over the engine's ``AppGroups`` (one ``GroupRunner`` per
    execution group instance of the app); the app's topics are ``<app>.<stream>``, as
    ``eddy explain`` names them, so apps on one bus stay apart."""

    def __init__(self, spec: AppSpec, real_time_batch_ms: int | None = None) -> None:
        try:
            from eddy.engine.run.app_groups import AppGroups
        except ImportError as error:
            raise EngineUnavailable(f"the Spark engine cannot run apps here: {error}") from None
        self._runner = AppGroups(spec.text, spec.bus_url, spec.checkpoint_dir,
                                   topic_prefix=topic_prefix(spec.name),
                                   filename=f"{spec.name}.siddhi",
                                   max_rows_per_batch=MAX_ROWS_PER_BATCH,
                                   real_time_batch_ms=real_time_batch_ms,
                                   before_write=spec.before_write,
                                   on_output=_counting(spec.after_output))

    def start(self) -> None:
        """Starts the app's streaming query."""
        self._runner.start()

    def plan(self) -> None:
        """Plans the app's queries ahead of :meth:`start` (an HA passive does, so that its
        takeover only starts them)."""
        self._runner.plan()

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

    def input_topics(self) -> list[str]:
        """The topics the app's queries read."""
        return [r.input_topic(s) for r in self._runner.runners for s in r.topics.inputs]


WARM_UP_S = 60.0
"""The longest the passive's warm-up run of an app waits for its one event."""


def warm_up(spec: AppSpec, analyzed: AnalyzedApp, scratch: Path) -> str | None:
    """Minimum HA's passive: runs the app once, on a scratch bus and checkpoint under
    ``scratch``, through one event of nulls per input stream, and stops it. A takeover then
    finds Spark's streaming classes loaded and compiled and the app's code imported, so the
    query starts and its first micro-batches run in a fraction of the cold time (the time the
    failover waits). Nothing leaves the scratch folder: no sources, no sinks, no hook; an app
    with tables or aggregations (which write to databases) is not warmed. Returns why it was
    not warmed, None when it was; a failure of the run is raised for the caller to log."""
    import shutil

    import pyarrow as pa

    from eddy.bus import TS, open_bus
    from eddy.bus.arrow_codec import stored_schema

    kinds = {d.kind for d in analyzed.streams.values()}
    if kinds & {"table", "aggregation"}:
        return "it has tables or aggregations, which a warm-up run would write to"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    bus_url = f"sqlite:///{scratch / 'bus.db'}"
    runner = GroupRunnerAdapter(AppSpec(spec.name, spec.text, scratch / "checkpoint", bus_url))
    try:
        runner.start()
        with open_bus(bus_url) as bus:
            for topic in runner.input_topics():
                schema = pa.schema([f for f in stored_schema(bus.topic(topic)) if f.name != TS])
                bus.append(topic, pa.Table.from_pylist([{n: None for n in schema.names}],
                                                       schema=schema))
        runner.await_idle(WARM_UP_S)
    finally:
        try:
            runner.stop()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return None


def _counting(after_output: Callable[[int, int], None] | None
              ) -> Callable[[int, Mapping[str, Any]], None] | None:
    """The engine's output callback (batch id, appended tables) as ``after_output`` wants
    it: the batch id and how many events it appended."""
    if after_output is None:
        return None
    return lambda batch_id, tables: after_output(
        batch_id, sum(t.num_rows for t in tables.values()))


def topic_prefix(app: str) -> str:
    """The prefix of an app's topic names on a worker's bus."""
    return f"{app}."


def forget_query_identity(checkpoint_dir: Path) -> None:
    """Readies a revision's copy of a checkpoint to go live (the engine knows how:
    ``GroupRunner.prepare_restore``)."""
    from eddy.engine.run.app_groups import AppGroups

    AppGroups.prepare_restore(checkpoint_dir)


def spark_runner_factory(real_time_batch_s: float | None = None) -> RunnerFactory:
    """The factory of real runners: every app on the process's one SparkSession; stateless
    apps in real-time mode when ``real_time_batch_s`` is set (``eddy.realTimeBatchS``)."""
    if real_time_batch_s is None:
        return GroupRunnerAdapter
    batch_ms = max(1, round(real_time_batch_s * 1000))
    return lambda spec: GroupRunnerAdapter(spec, batch_ms)
