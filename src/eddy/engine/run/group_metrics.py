"""Figures of a running group, per app and per query, as flat numbers keyed by name.

What is counted where:

* **events in** of an input stream: its topic's end offsets after the last completed
  micro-batch (bus positions count every event ever appended, so the figure survives a
  restart); of a query: the events in of its input streams, a stream produced inside the
  group counting the events its producing queries emitted;
* **events out** of a query: the rows it emitted (the ``_query`` column of the group's
  output, counted by the bus sink since the runner started); of the app: the events that
  reached its output topics;
* **rates**: the change of those totals between two readings, per second;
* **micro-batch latency**: over Spark's recent progress reports of batches with input (a
  query runs inside its group's micro-batch, so a query's latency is its group's); none
  in real-time mode, where a batch is a checkpoint interval (:mod:`.real_time`);
* **state**: rows and bytes in Spark's state store, from the last progress report;
* **errors**: on-demand queries that failed while running.

Per-query keys are ``query/<query id>/<figure>``; the node turns them into series labelled
by query.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from eddy.lang import AnalyzedApp

QUERY_PREFIX = "query/"
LATENCY_QUANTILES = (("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p98", 0.98),
                     ("p99", 0.99), ("p999", 0.999))


def query_key(query: str, figure: str) -> str:
    """The key of a per-query figure."""
    return f"{QUERY_PREFIX}{query}/{figure}"


def split_key(key: str) -> tuple[str | None, str]:
    """``(query id or None, figure)`` of a key."""
    if key.startswith(QUERY_PREFIX):
        query, _, figure = key[len(QUERY_PREFIX):].rpartition("/")
        return query, figure
    return None, key


class GroupMetrics:
    """Turns a group's counters and Spark's progress into figures; remembers the previous
    reading for the rates."""

    def __init__(self, analyzed: AnalyzedApp, input_topics: Mapping[str, str]) -> None:
        """``input_topics`` maps each input stream to its topic."""
        self._inputs = dict(input_topics)
        self._queries = {q.id: tuple(q.inputs) for q in analyzed.queries}
        self._producers: dict[str, list[str]] = {}
        for q in analyzed.queries:
            if q.target is not None and q.target_kind == "stream":
                self._producers.setdefault(q.target, []).append(q.id)
        self._last: tuple[float, dict[str, float]] | None = None

    def read(self, offsets: Mapping[str, Sequence[int]] | None, events_out: Mapping[str, int],
             query_events: Mapping[str, int], progress: Sequence[Mapping[str, Any]],
             errors: int) -> dict[str, float]:
        """The figures now; ``offsets`` are the last completed batch's end offsets."""
        stream_in = {stream: float(sum((offsets or {}).get(topic, ())))
                     for stream, topic in self._inputs.items()}
        totals: dict[str, float] = {
            "events_in_total": sum(stream_in.values()),
            "events_out_total": float(sum(events_out.values())),
            "errors_total": float(errors),
        }
        for query, inputs in self._queries.items():
            totals[query_key(query, "events_in_total")] = sum(
                stream_in[s] if s in stream_in
                else float(sum(query_events.get(p, 0) for p in self._producers.get(s, ())))
                for s in inputs)
            totals[query_key(query, "events_out_total")] = float(query_events.get(query, 0))
        figures = dict(totals)
        figures.update(self._rates(totals))
        figures.update(latency_figures(progress))
        if progress:
            operators = progress[-1].get("stateOperators", [])
            figures["state_rows"] = float(sum(op.get("numRowsTotal", 0) for op in operators))
            figures["state_bytes"] = float(sum(op.get("memoryUsedBytes", 0)
                                               for op in operators))
        return figures

    def _rates(self, totals: Mapping[str, float]) -> dict[str, float]:
        now = time.monotonic()
        rates: dict[str, float] = {}
        if self._last is not None and now > self._last[0]:
            elapsed = now - self._last[0]
            for key, value in totals.items():
                if key.endswith("events_in_total") or key.endswith("events_out_total"):
                    before = self._last[1].get(key, value)
                    rates[key.replace("_total", "_per_second")] = \
                        max(0.0, value - before) / elapsed
        self._last = (now, dict(totals))
        return rates


def latency_figures(progress: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Micro-batch latency in ms over the recent batches that had input: count, min, max,
    mean, standard deviation and the quantiles of :data:`LATENCY_QUANTILES`."""
    durations = sorted(float(p.get("durationMs", {}).get("triggerExecution", 0))
                       for p in progress if p.get("numInputRows", 0) > 0)
    if not durations:
        return {}
    mean = sum(durations) / len(durations)
    figures = {"batch_latency_count": float(len(durations)),
               "batch_latency_min_ms": durations[0], "batch_latency_max_ms": durations[-1],
               "batch_latency_mean_ms": mean,
               "batch_latency_stddev_ms": math.sqrt(
                   sum((d - mean) ** 2 for d in durations) / len(durations))}
    for name, q in LATENCY_QUANTILES:
        figures[f"batch_latency_{name}_ms"] = durations[min(len(durations) - 1,
                                                            int(len(durations) * q))]
    return figures
