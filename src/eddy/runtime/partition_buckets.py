"""When a group's runtime can be split by partition value over several Spark state keys.

The per-event runtime runs in one Python stateful operator; with one state key all of its
work is one task on one core. A value partition (``partition with (roomNo of TempStream)``)
gives each key its own state and sees only that key's events in their order, so the rows
of different keys may go to different state keys — the partition value is the Spark key
(DESIGN.md §4) — and the output is the same, provided nothing crosses keys:

- every runtime query is inside one value partition whose values are plain attributes;
- every stream those queries read is an input of the group (not an output of a query,
  which the runtime would produce in whichever bucket emitted it) and is partitioned there
  (a stream read but not partitioned reaches every key); inner ``#`` streams stay in their
  key anyway;
- the app holds no table, named window, aggregation or trigger (global state), and the
  runtime has no scheduler (a timer fires on the clock, and a bucket's clock only moves with
  its own rows).

The function returns, per stream, the attribute whose value keys it; the caller hashes that
value (as text, Siddhi's key is the value's string) into the physical planner's hash
buckets (:mod:`eddy.plan.physical.rules.runtime`).
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp


def partition_attributes(analyzed: AnalyzedApp, query_ids: Sequence[str],
                         inputs: Sequence[str]) -> dict[str, str] | None:
    """Stream → partition attribute when queries ``query_ids`` (the runtime's) may run split
    by partition value; None when they must run as one. ``inputs`` are the group's input
    streams."""
    if not query_ids:
        return None
    if any(s.kind in ("table", "window", "aggregation", "trigger")
           for s in analyzed.streams.values()):
        return None
    chosen = set(query_ids)
    infos = [q for q in analyzed.queries if q.id in chosen]
    partitions = {q.partition for q in infos}
    if len(partitions) != 1 or None in partitions:
        return None
    (index,) = partitions
    assert index is not None
    attributes: dict[str, str] = {}
    for ptype in analyzed.partition(index).partition.partition_types:
        if not (isinstance(ptype, ast.ValuePartitionType)
                and isinstance(ptype.expression, ast.Variable)):
            return None
        attributes[ptype.stream] = ptype.expression.attribute
    produced = {q.target for q in analyzed.queries if q.target_kind == "stream" and q.target}
    for info in infos:
        for stream in info.inputs:
            if stream.startswith("#"):
                continue
            if stream not in attributes or stream not in inputs or stream in produced:
                return None
    if _has_schedulers(analyzed, query_ids):
        return None
    return {stream: attributes[stream] for stream in sorted(attributes) if stream in inputs}


def _has_schedulers(analyzed: AnalyzedApp, query_ids: Sequence[str]) -> bool:
    from eddy.runtime.group import build_runtime

    return bool(build_runtime(analyzed, list(query_ids)).context.schedulers)


__all__ = ["partition_attributes"]
