"""Time series the dashboard keeps in memory: the last hour of every figure it polls.

Counters (a node's ``…_total`` figures) become rates per second between two polls; gauges
are kept as read. A series is named by ``(node, app, query, figure)``, with ``""`` for the
parts that do not apply (a node figure has no app).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

KEEP_MS = 3_600_000
Point = tuple[int, float]


@dataclass(frozen=True)
class SeriesKey:
    node: str
    app: str
    query: str
    figure: str


@dataclass(frozen=True)
class Sample:
    """One sample of a Prometheus text page: its name and labels, and its value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")


def parse_metrics(text: str) -> list[Sample]:
    """Every sample of a Prometheus text page."""
    return [Sample(s.name, tuple(sorted(s.labels.items())), float(s.value))
            for family in text_string_to_metric_families(text) for s in family.samples]


class SeriesStore:
    """The last hour of every series, and the last reading of every counter."""

    def __init__(self, keep_ms: int = KEEP_MS) -> None:
        self.keep_ms = keep_ms
        self._series: dict[SeriesKey, deque[Point]] = {}
        self._totals: dict[SeriesKey, Point] = {}

    def gauge(self, key: SeriesKey, at_ms: int, value: float) -> None:
        """Adds a reading as it is."""
        points = self._series.setdefault(key, deque())
        points.append((at_ms, value))
        while points and points[0][0] < at_ms - self.keep_ms:
            points.popleft()

    def counter(self, key: SeriesKey, at_ms: int, total: float) -> None:
        """Adds the rate per second since the previous reading of a total (none at first;
        a total that went down — a restarted node — starts over)."""
        previous = self._totals.get(key)
        self._totals[key] = (at_ms, total)
        if previous is None or at_ms <= previous[0]:
            return
        rate = max(0.0, total - previous[1]) * 1000 / (at_ms - previous[0])
        self.gauge(SeriesKey(key.node, key.app, key.query, f"{key.figure}_rate"), at_ms, rate)

    def get(self, key: SeriesKey) -> list[Point]:
        return list(self._series.get(key, ()))

    def latest(self, key: SeriesKey) -> float | None:
        points = self._series.get(key)
        return points[-1][1] if points else None

    def total(self, key: SeriesKey) -> float | None:
        """The last reading of a counter."""
        found = self._totals.get(key)
        return found[1] if found else None

    def select(self, node: str, app: str, query: str = "") -> dict[str, list[Point]]:
        """Every series of one node, app and query, by figure."""
        return {k.figure: list(v) for k, v in self._series.items()
                if k.node == node and k.app == app and k.query == query}

    def queries(self, node: str, app: str) -> list[str]:
        """The queries of an app that have series."""
        return sorted({k.query for k in self._series if k.node == node and k.app == app
                       and k.query})

    def forget(self, node: str) -> None:
        for store in (self._series, self._totals):
            for key in [k for k in store if k.node == node]:
                del store[key]


APP_FIGURES = ("batch_latency_p50_ms", "batch_latency_p99_ms", "state_rows", "state_bytes")


def record_samples(store: SeriesStore, node: str, at_ms: int,
                   samples: Iterable[Sample]) -> None:
    """Adds a node's ``/metrics`` page to the store: node gauges, and per app and query the
    events in, out and errors (as rates), latency and state."""
    for sample in samples:
        if sample.name.startswith("eddy_node_"):
            store.gauge(SeriesKey(node, "", "", sample.name.removeprefix("eddy_node_")),
                        at_ms, sample.value)
            continue
        for level in ("app", "query"):
            prefix = f"eddy_{level}_"
            if not sample.name.startswith(prefix) or sample.name == "eddy_app_status":
                continue
            figure = sample.name.removeprefix(prefix)
            key = SeriesKey(node, sample.label("app"), sample.label("query"), figure)
            if figure.endswith("_total"):
                store.counter(key, at_ms, sample.value)
            elif figure in APP_FIGURES:
                store.gauge(key, at_ms, sample.value)


def chart_series(series: Mapping[str, list[Point]], figures: Iterable[str]) -> dict[str, list[Point]]:
    """The named figures among ``series`` (empty lists for those with no points yet)."""
    return {figure: series.get(figure, []) for figure in figures}
