"""Metrics of the worker: the node's CPU, memory and uptime, and each app's figures.

:class:`NodeStats` reads the process and the machine (psutil). :class:`WorkerCollector`
turns them, and what each app's runner measures (per app, and per query under keys
``query/<id>/…``), into Prometheus metrics at scrape time, so nothing is sampled when nobody
reads it. :class:`MetricsReporter` writes the same figures into WSO2's ``METRIC_*`` tables
(:mod:`eddy.store.metrics_tables`) every minute when a ``WSO2_METRICS_DB`` datasource is
configured, under the names a WSO2 SP dashboard reads.
"""

from __future__ import annotations

import logging
import math
import os
import platform
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import psutil
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from eddy.config import WorkerConfig
from eddy.engine.run.group_metrics import split_key  # plain Python: no Spark
from eddy.node.registry import AppRegistry
from eddy.store import connect, jdbc_to_sqlalchemy
from eddy.store.metrics_tables import MetricTables, Rates, Report, Snapshot

log = logging.getLogger("eddy.node.metrics")
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


def metric_name(key: str, level: str = "app") -> str:
    """A runner's figure as a Prometheus name: ``eddy_<level>_<figure in snake case>``."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
    return f"eddy_{level}_" + re.sub(r"[^a-z0-9_]", "_", snake)


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
                query, figure = split_key(key)
                name = metric_name(figure, "app" if query is None else "query")
                labels = [view.name] if query is None else [view.name, query]
                if name not in figures:
                    kind = CounterMetricFamily if name.endswith("_total") else GaugeMetricFamily
                    owner = "app" if query is None else "query"
                    figures[name] = kind(name.removesuffix("_total"),
                                         f"The {owner}'s {figure}, as its runner measures it",
                                         labels=["app", "query"][:len(labels)])
                figures[name].add_metric(labels, value)
        yield status
        yield failures
        yield from figures.values()


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


# -- the METRIC_* tables -----------------------------------------------------------------

METRICS_DATASOURCE = "WSO2_METRICS_DB"
"""The ``wso2.datasources`` entry that, when configured, receives the metrics (as in WSO2)."""
_SIDDHI = "org.wso2.siddhi.SiddhiApps.{app}.Siddhi"


class _Meter:
    """Rates of a growing count between reports: the mean since the first report and the
    1, 5 and 15-minute exponentially weighted averages, as Dropwizard's meters keep them."""

    def __init__(self, count: float, now: float) -> None:
        self._start, self._first = now, count
        self._last = (now, count)
        self._averages = [0.0, 0.0, 0.0]

    def update(self, count: float, now: float) -> Rates:
        elapsed = now - self._last[0]
        if elapsed > 0:
            rate = max(0.0, count - self._last[1]) / elapsed
            for i, minutes in enumerate((1, 5, 15)):
                alpha = 1 - math.exp(-elapsed / (60 * minutes))
                self._averages[i] += alpha * (rate - self._averages[i])
        self._last = (now, count)
        lifetime = now - self._start
        mean = max(0.0, count - self._first) / lifetime if lifetime > 0 else 0.0
        return Rates(mean, *self._averages)


class MetricsReporter:
    """Writes the node's and every app's figures into the ``METRIC_*`` tables every
    ``interval_s`` seconds (Carbon Metrics' JDBC reporter, 60 s by default)."""

    def __init__(self, node_id: str, node: NodeStats, registry: AppRegistry,
                 connect_tables: Callable[[], MetricTables], interval_s: float) -> None:
        self.node_id = node_id
        self.node = node
        self.registry = registry
        self.interval_s = interval_s
        self._connect = connect_tables
        self._tables: MetricTables | None = None
        self._meters: dict[str, _Meter] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eddy-metrics", daemon=True)

    def start(self) -> None:
        """Starts the schedule (the tables are created, when missing, at the first round)."""
        self._thread.start()

    def stop(self) -> None:
        """Stops the schedule; a round in progress finishes."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def report_once(self) -> None:
        """One round: every figure now, in one transaction."""
        if self._tables is None:
            self._tables = self._connect()
        now = time.time()
        self._tables.write(self.node_id, int(now * 1000), self.report(now))

    def report(self, now: float) -> Report:
        """The figures of the node and its apps, with meters updated to ``now``."""
        sample = self.node.sample()
        report = Report(gauges=[
            ("jvm.os.cpu.load.process", repr(sample.process_cpu)),
            ("jvm.os.cpu.load.system", repr(sample.system_cpu)),
            ("jvm.os.system.load.average", repr(sample.load_average)),
            ("jvm.os.physical.memory.total.size", str(sample.total_memory_bytes)),
            ("jvm.os.physical.memory.free.size", str(sample.available_memory_bytes)),
            ("jvm.memory.total.used", str(sample.rss_bytes)),
            ("jvm.memory.total.usage", repr(sample.memory_usage)),
            ("eddy.node.uptime", str(sample.uptime_ms))], counters=[], meters=[], timers=[])
        for view in self.registry.views():
            if view.metrics:  # none while an app deploys or restarts: nothing to report
                self._app(report, view.name, view.metrics, now)
        return report

    def _app(self, report: Report, app: str, metrics: Mapping[str, float],
             now: float) -> None:
        prefix = _SIDDHI.format(app=app)
        queries: dict[str, dict[str, float]] = {}
        figures: dict[str, float] = {}
        for key, value in metrics.items():
            query, figure = split_key(key)
            (figures if query is None else queries.setdefault(query, {}))[figure] = value
        report.counters += [(f"{prefix}.{name}", int(figures.get(key, 0))) for name, key in (
            ("eventsIn", "events_in_total"), ("eventsOut", "events_out_total"),
            ("errors", "errors_total"))]
        report.gauges += [(f"{prefix}.{name}", repr(figures[key])) for name, key in (
            ("stateRows", "state_rows"), ("stateBytes", "state_bytes")) if key in figures]
        latency = _snapshot(figures)
        batches = figures.get("last_batch_id", -1) + 1
        for query, values in sorted(queries.items()):
            for name, key in (("throughput", "events_in_total"),
                              ("output.throughput", "events_out_total")):
                count = values.get(key, 0.0)
                report.meters.append((f"{prefix}.Queries.{query}.{name}", int(count),
                                      self._rates(f"{prefix}.Queries.{query}.{name}", count,
                                                  now)))
            if latency is not None:  # a query runs in its group's micro-batches
                name = f"{prefix}.Queries.{query}.latency"
                report.timers.append((name, int(batches), latency,
                                      self._rates(name, batches, now)))

    def _rates(self, name: str, count: float, now: float) -> Rates:
        meter = self._meters.get(name)
        if meter is None:
            meter = self._meters[name] = _Meter(count, now)
        return meter.update(count, now)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.report_once()
            except Exception:  # a database outage must not stop the worker or the schedule
                log.exception("could not write the metrics to %s", METRICS_DATASOURCE)


def _snapshot(figures: Mapping[str, float]) -> Snapshot | None:
    """The micro-batch latency distribution among an app's figures, if it has one."""
    if "batch_latency_p50_ms" not in figures:
        return None

    def get(name: str) -> float:
        return figures.get(f"batch_latency_{name}_ms", 0.0)

    return Snapshot(get("max"), get("mean"), get("min"), get("stddev"), get("p50"),
                    get("p75"), get("p95"), get("p98"), get("p99"), get("p999"))


def metrics_reporter(config: WorkerConfig, node: NodeStats,
                     registry: AppRegistry) -> MetricsReporter | None:
    """The reporter to the ``METRIC_*`` tables when ``wso2.datasources`` has a
    ``WSO2_METRICS_DB`` entry, else None; ``eddy.metricsIntervalS`` sets its period."""
    found = next((d for d in config.model.datasources.dataSources
                  if d.name == METRICS_DATASOURCE), None)
    if found is None:
        return None
    settings = found.definition.configuration
    url = jdbc_to_sqlalchemy(settings.jdbcUrl, settings.username, settings.password)
    log.info("metrics: written to %s every %g s", METRICS_DATASOURCE,
             config.model.eddy.metricsIntervalS)
    return MetricsReporter(config.node_id, node, registry,
                           lambda: MetricTables(connect(url)),
                           config.model.eddy.metricsIntervalS)
