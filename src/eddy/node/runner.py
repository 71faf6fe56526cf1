"""What the worker needs from a running app, and the engine's runner behind it.

The registry (:mod:`eddy.node.registry`) starts, stops and watches apps only through the
:class:`AppRunner` protocol, so the control plane does not depend on how the engine runs an
app. :func:`spark_runner_factory` makes the real one: the engine's ``GroupRunner``, one Spark
streaming query per app from its input topics on the bus to its output topics, with its
checkpoint in the folder the registry gives it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


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


class EngineUnavailable(RuntimeError):
    """The Spark engine (pyspark, or the engine's group runner) is not installed."""


class GroupRunnerAdapter:
    """:class:`AppRunner` over the engine's ``GroupRunner``; the app's topics are
    ``<app>.<stream>``, as ``eddy explain`` names them, so apps on one bus stay apart."""

    def __init__(self, spec: AppSpec) -> None:
        try:
            from eddy.engine.group_runner import GroupRunner
        except ImportError as error:
            raise EngineUnavailable(f"the Spark engine cannot run apps here: {error}") from None
        self._runner = GroupRunner(spec.text, spec.bus_url, spec.checkpoint_dir,
                                   topic_prefix=topic_prefix(spec.name),
                                   filename=f"{spec.name}.siddhi")
        self._rates = _Rates()

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
        """The engine's status, with figures from the query's recent progress."""
        raw = self._runner.status()
        metrics: dict[str, float] = {
            "events_in_total": float(sum(sum(p) for p in (raw.input_offsets or {}).values())),
            "events_out_total": float(sum(raw.events_out.values()))}
        if raw.last_batch_id is not None:
            metrics["last_batch_id"] = float(raw.last_batch_id)
        metrics.update(self._rates.update(metrics))
        if raw.query_id is not None and raw.state == "running":
            metrics.update(progress_metrics(raw.query_id))
        return RunnerStatus(running=raw.state == "running", error=raw.error, metrics=metrics)


def topic_prefix(app: str) -> str:
    """The prefix of an app's topic names on a worker's bus."""
    return f"{app}."


class _Rates:
    """Events per second of the ``*_total`` counters, between two readings."""

    def __init__(self) -> None:
        self._last: tuple[float, dict[str, float]] | None = None

    def update(self, totals: Mapping[str, float]) -> dict[str, float]:
        now = time.monotonic()
        rates: dict[str, float] = {}
        if self._last is not None and now > self._last[0]:
            elapsed = now - self._last[0]
            for key in ("events_in_total", "events_out_total"):
                before = self._last[1].get(key, totals[key])
                rates[key.replace("_total", "_per_second")] = max(0.0, totals[key] - before) \
                    / elapsed
        self._last = (now, dict(totals))
        return rates


def progress_metrics(query_id: str) -> dict[str, float]:
    """Micro-batch latency (p50, p99 over Spark's recent batches) and state rows."""
    from eddy.engine.session import get_spark

    query = get_spark().streams.get(query_id)
    recent: list[Any] = list(query.recentProgress) if query is not None else []
    if not recent:
        return {}
    durations = sorted(float(p["durationMs"].get("triggerExecution", 0)) for p in recent)
    last = recent[-1]
    return {
        "batch_latency_p50_ms": durations[len(durations) // 2],
        "batch_latency_p99_ms": durations[min(len(durations) - 1,
                                              int(len(durations) * 0.99))],
        "state_rows": float(sum(op.get("numRowsTotal", 0)
                                for op in last.get("stateOperators", []))),
    }


def forget_query_identity(checkpoint_dir: Path) -> None:
    """Gives a restored checkpoint's query a new Spark query id.

    The bus sink deduplicates outputs by (query id, batch id). After a restore, Spark plans
    new batches from the revision's offsets with batch ids the abandoned run already used,
    for other events; under the old id the bus would drop their outputs as duplicates.
    Spark keeps the id in ``<checkpoint>/metadata`` (JSON with ``id``), which must exist when
    the offset log does. (This knowledge of the layout belongs in the engine; it lives here
    until ``GroupRunner`` offers a restore.)
    """
    path = checkpoint_dir / "spark" / "metadata"
    if path.is_file():
        metadata = json.loads(path.read_text(encoding="utf-8"))
        metadata["id"] = str(uuid.uuid4())
        path.write_text(json.dumps(metadata), encoding="utf-8")


def spark_runner_factory() -> RunnerFactory:
    """The factory of real runners: every app on the process's one SparkSession."""
    return GroupRunnerAdapter
