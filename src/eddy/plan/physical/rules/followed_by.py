"""Rule 3 — the vectorised followed-by, one operator per pattern query it takes.

Applies to each query left after rules 1–2 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), and the query is
``from every e1=S1[f] -> e2=S2[c] within t`` (or without ``every``: the first match only;
or ``-> (e2=S2[c] or e3=S3[d])``) selecting attributes of its states
into a stream, optionally the only query of a value partition by plain integral, string or
bool attributes of its streams
(:mod:`eddy.engine.operators.followed_by` builds the kernel and says whether it can: ``c`` must
split into equality keys, Spark SQL filters and numpy columns).

Exact because each ``e1`` (without ``every``: the instance's first) starts one partial
match that the first later matching ``S2`` (or ``S3``) event completes unless ``within``
expired it, which the kernel computes per key in input order; a standalone query's outputs
depend on the group's input rows alone. State: hash buckets of the partition value (a key's
instance lives in one bucket, as in Siddhi each key has its own pattern), or one key for an
unpartitioned pattern. When eddy's JVM classes are built on this machine (the engine's
facts say so) the same plan runs in eddy's Java operator
(:mod:`eddy.engine.operators.followed_by.jvm`: the reference's steps event by event,
matches indexed by key, and no crossing into a Python worker), which restarts with every
``e1`` and completes through one state: other patterns run in the NumPy one. The Java
operator also runs a pattern over what one stateful query of the group inserts, reading that
query's Java operator in the same micro-batch
(:meth:`~eddy.plan.physical.planner.Planning.producer_of`: its expiry reads the events' own
timestamps, no clock).
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang import ast
from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.heads import inner_key
from eddy.plan.physical.model import ONE_KEY, QueryChoice, StateKey
from eddy.plan.physical.planner import Planning

NAME = "followed-by"
BUCKETS = 4
"""State keys of a partitioned pattern: a couple per core (fewer keys, less per-key work
per micro-batch: 4 measured ~10 % faster than 16); fixed, since a checkpoint's state is
keyed by them."""


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the followed-by runs ``info`` reading ``streams``."""
    return planning.facts.followed_by(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone pattern query the followed-by runs, each in its own operator."""
    for info in planning.pending:
        if planning.standalone(info) and takes(planning, info, planning.streams_of(info)):
            _place(planning, info)


def instance_key(planning: Planning, info: QueryInfo) -> StateKey:
    """The state key of a pattern's or sequence's instances: :data:`BUCKETS` hash buckets of
    its value partition's attributes, or one key when it is not partitioned."""
    if info.partition is None:
        return ONE_KEY
    streams = set(info.inputs)
    attributes = {p.stream: p.expression.attribute
                  for p in planning.analyzed.partition(info.partition).partition.partition_types
                  if isinstance(p, ast.ValuePartitionType)
                  and isinstance(p.expression, ast.Variable) and p.stream in streams}
    for stream in streams - set(attributes):  # an inner stream: where its filler put the key
        key = inner_key(planning.analyzed, info, stream)
        if key is not None:
            attributes[stream] = key
    return StateKey("buckets", tuple(sorted(attributes.items())), BUCKETS)


def _place(planning: Planning, info: QueryInfo) -> None:
    analyzed = planning.analyzed
    key = instance_key(planning, info)
    pattern = info.query.input
    assert isinstance(pattern, ast.StateInputStream) and \
        isinstance(pattern.state, ast.NextStateElement)
    completing = "(e2 or e3)" if isinstance(pattern.state.next, ast.LogicalStateElement) \
        else "e2"
    shape = f"every e1 -> {completing}" \
        if isinstance(pattern.state.element, ast.EveryStateElement) \
        else f"e1 -> {completing} (its first match only)"
    why = f"it is an '{shape}' pattern whose condition is keyed by equalities" + \
        planning.through(info)
    if planning.facts.jvm_followed_by(analyzed, info, planning.streams_of(info)):
        planning.choose(QueryChoice(info.id, "jvm-followed-by", key, NAME,
                                    why + ": eddy's Java operator, no crossing into Python",
                                    planning.producer_id(info)))
    else:
        planning.choose(QueryChoice(info.id, "followed-by", key, NAME, why))
