"""Running a runtime the way Spark does, without Spark: micro-batches with a snapshot between.

Spark's stateful operator restores the group's state at the start of each micro-batch and
stores it at the end; :func:`run_in_batches` does exactly that with a fresh runtime per
batch, so a test (or ``eddy replay`` without Spark) exercises the same state round trip.
:func:`collect` turns the outputs into the per-stream and per-query event lists that the
conformance cases compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, OutputEvent, sort_outputs


def run_in_batches(analyzed: AnalyzedApp, events: Sequence[InputEvent],
                   batch_size: int | None = None,
                   query_ids: Sequence[str] | None = None) -> list[OutputEvent]:
    """Processes ``events`` in batches of ``batch_size`` (all at once when None), each in a
    freshly built runtime restored from the previous batch's snapshot; returns the outputs
    in the reference's order."""
    state = build_runtime(analyzed, query_ids).snapshot()
    size = batch_size or max(len(events), 1)
    outputs: list[OutputEvent] = []
    for start in range(0, len(events), size):
        runtime = build_runtime(analyzed, query_ids)
        runtime.restore(state)
        outputs += runtime.process(events[start:start + size])
        state = runtime.snapshot()
    return sort_outputs(outputs)


def collect(analyzed: AnalyzedApp, outputs: Sequence[OutputEvent]
            ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """``(streams, queries)`` as the conformance cases list them: events of every stream a
    query inserts into (always current), and of every ``@info``-named query outside
    partitions (with its expired flag)."""
    stream_targets = {q.target for q in analyzed.queries
                      if q.target_kind == "stream" and q.target is not None}
    named = {q.id for q in analyzed.queries if q.query.name and q.partition is None}
    streams: dict[str, list[dict[str, Any]]] = {}
    queries: dict[str, list[dict[str, Any]]] = {}
    for out in outputs:
        if out.target in stream_targets:
            streams.setdefault(out.target, []).append(
                {"timestamp": out.ts, "data": list(out.data), "expired": False})
        if out.query in named:
            queries.setdefault(out.query, []).append(
                {"timestamp": out.ts, "data": list(out.data), "expired": out.expired})
    return streams, queries
