"""Metrics of the worker: the node's CPU, memory and uptime, and each app's figures.

:class:`NodeStats` reads the process and the machine (psutil). :class:`WorkerCollector`
turns them, and what each app's runner measures, into Prometheus metrics at scrape time, so
nothing is sampled when nobody reads it.
"""

from __future__ import annotations

import os
import platform
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from eddy.node.registry import AppRegistry

_STATES = ("active", "inactive", "faulty")


@dataclass(frozen=True)
class NodeSample:
    """One reading of the node: CPU as fractions of 1, memory in bytes, uptime in ms."""

    process_cpu: float
    system_cpu: float
    load_average: float
    memory_usage: float
    rss_bytes: int
    total_memory_bytes: int
    available_memory_bytes: int
    uptime_ms: int
    os_name: str


class NodeStats:
    """The worker process and its machine."""

    def __init__(self) -> None:
        self.started = time.time()
        self._process = psutil.Process(os.getpid())
        # The first cpu_percent() call only sets the baseline.
        self._process.cpu_percent(None)
        psutil.cpu_percent(None)

    def sample(self) -> NodeSample:
        """CPU since the previous sample, memory now, and the uptime."""
        memory = psutil.virtual_memory()
        cores = psutil.cpu_count() or 1
        children_rss = 0
        for child in self._process.children(recursive=True):
            try:  # Spark's JVM and Python workers are children: the node is all of them.
                children_rss += child.memory_info().rss
            except psutil.Error:
                continue
        rss = self._process.memory_info().rss + children_rss
        return NodeSample(
            process_cpu=self._process.cpu_percent(None) / 100 / cores,
            system_cpu=psutil.cpu_percent(None) / 100,
            load_average=os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0,
            memory_usage=rss / memory.total if memory.total else 0.0,
            rss_bytes=rss, total_memory_bytes=memory.total,
            available_memory_bytes=memory.available,
            uptime_ms=int((time.time() - self.started) * 1000),
            os_name=f"{platform.system()} {platform.release()}")


def metric_name(key: str) -> str:
    """A runner's metric key as a Prometheus name: ``eddy_app_<key in snake case>``."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
    return "eddy_app_" + re.sub(r"[^a-z0-9_]", "_", snake)


class WorkerCollector(Collector):
    """Prometheus metrics of the node and of every deployed app."""

    def __init__(self, node_id: str, node: NodeStats, registry: AppRegistry,
                 last_persisted: Callable[[], float | None]) -> None:
        self.node_id = node_id
        self.node = node
        self.registry = registry
        self._last_persisted = last_persisted

    def collect(self) -> Iterable[Metric]:
        """The metrics, read now."""
        sample = self.node.sample()
        yield _gauge("eddy_node_process_cpu_ratio", "CPU of the worker and its children, "
                     "as a fraction of all cores", sample.process_cpu)
        yield _gauge("eddy_node_system_cpu_ratio", "CPU of the machine", sample.system_cpu)
        yield _gauge("eddy_node_load_average", "1-minute load average", sample.load_average)
        yield _gauge("eddy_node_memory_rss_bytes", "Resident memory of the worker and its "
                     "children (Spark's JVM and Python workers)", sample.rss_bytes)
        yield _gauge("eddy_node_memory_usage_ratio", "Resident memory as a fraction of the "
                     "machine's", sample.memory_usage)
        yield _gauge("eddy_node_uptime_seconds", "Seconds since the worker started",
                     sample.uptime_ms / 1000)
        persisted = self._last_persisted()
        if persisted is not None:
            yield _gauge("eddy_node_last_persisted_timestamp_seconds",
                         "When state was last persisted", persisted)
        yield from self._apps()

    def _apps(self) -> Iterable[Metric]:
        status = GaugeMetricFamily("eddy_app_status", "1 for the app's current status",
                                   labels=["app", "status"])
        failures = CounterMetricFamily("eddy_app_failures", "Times the app was found faulty "
                                       "since the worker started", labels=["app"])
        figures: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}
        for view in self.registry.views():
            for state in _STATES:
                status.add_metric([view.name, state], 1.0 if view.state == state else 0.0)
            failures.add_metric([view.name], view.failures)
            for key, value in sorted(view.metrics.items()):
                name = metric_name(key)
                if name not in figures:
                    kind = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
                    figures[name] = kind(name.removesuffix("_total"),
                                         f"The app's {key}, as its runner measures it",
                                         labels=["app"])
                figures[name].add_metric([view.name], value)
        yield status
        yield failures
        yield from figures.values()


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)
