"""Rule 11 — the per-event runtime (or the aggregation step) for everything left.

Applies to every query no earlier rule placed, and adds the group's runtime operator also
when no query is left for it but the app defines aggregations (fed whether queried or
not), keeps tables, named windows or aggregations that on-demand queries may read, or
nothing else would produce output. The runtime is the exact fallback: it is the reference
semantics, event by event, in input order.

Its state key is, in order:

1. hash buckets of the aggregations' ``group by`` values (the *aggregation split*) when no
   query is left, the aggregations run in the column-batch step, read one stream, group by
   the same non-floating attributes, keep their rows in an RDBMS, no on-demand query may
   arrive and each row carries its stream's clock — exact because a group's rows are only
   written from its bucket, in input order, with the stream's clock as arrival time
   (:mod:`eddy.engine.operators.aggregation_step`);
2. hash buckets of the partition value when every runtime query is in one value partition
   by plain attributes of the group's input streams, with no global state and no timers —
   exact because partition keys never see each other's events
   (:mod:`eddy.runtime.partition_buckets`);
3. else one key: the queries share a clock, timers or state, as one Siddhi thread does.
"""

from __future__ import annotations

from eddy.lang import ast
from eddy.plan.physical.model import ONE_KEY, Operator, QueryChoice, StateKey
from eddy.plan.physical.planner import Planning

NAME = "runtime"
SPLIT_BUCKETS = 16
"""State keys of the aggregation split: fixed, since a checkpoint's state is keyed by them."""
PARTITION_BUCKETS = 8
"""State keys of a runtime split by partition value: a few per core; fixed likewise."""
_UNSPLIT_TYPES = (ast.AttrType.FLOAT, ast.AttrType.DOUBLE, ast.AttrType.OBJECT)


def apply(planning: Planning) -> None:
    """Places the remaining queries in the runtime and chooses the runtime's key."""
    rest = planning.pending
    analyzed = planning.analyzed
    aggregations = planning.aggregation_inputs()
    if not (rest or aggregations or not planning.chosen
            or (planning.sources.on_demand and planning.keeps_global_state())):
        return
    vectorised = not rest and any(
        isinstance(s.definition, ast.AggregationDefinition) for s in analyzed.streams.values()
    ) and planning.facts.aggregations_vectorise(analyzed)
    operator: Operator = "aggregation-step" if vectorised else "runtime"
    key, why_key = _key(planning, vectorised)
    ids = [q.id for q in rest]
    reasons = {info.id: _reason(planning, info.id) for info in rest}
    for info in rest:
        planning.choose(QueryChoice(info.id, operator, key, NAME, reasons[info.id]))
    what = (f"it runs {', '.join(ids)}" if ids else
            "it keeps the app's aggregations" if aggregations else
            "it keeps the app's tables and windows for on-demand queries")
    planning.runtime = QueryChoice("runtime", operator, key, NAME, f"{what}; {why_key}")


def _key(planning: Planning, vectorised: bool) -> tuple[StateKey, str]:
    split = _aggregation_split(planning) if vectorised else None
    if split is not None:
        return split, "split by the aggregations' group-by values"
    if vectorised:
        return ONE_KEY, ("one key: a split by group needs RDBMS-stored aggregations of one "
                         "stream and group-by, each row's stream clock and no on-demand queries")
    ids = [q.id for q in planning.pending]
    attributes = planning.facts.runtime_partition(planning.analyzed, ids,
                                                  planning.sources.streams)
    if attributes is not None:
        return (StateKey("buckets", tuple(sorted(attributes.items())), PARTITION_BUCKETS),
                "split by partition value")
    return ONE_KEY, ("one key: its queries are not all in one value partition of the group's "
                     "input streams free of timers and global state")


def _aggregation_split(planning: Planning) -> StateKey | None:
    """The aggregation split's key (rule 11.1), or None when it does not apply."""
    if planning.sources.on_demand or not planning.sources.clock:
        return None
    definitions = [s.definition for s in planning.analyzed.streams.values()
                   if isinstance(s.definition, ast.AggregationDefinition)]
    inputs = {d.input.stream for d in definitions if d.input is not None}
    groups = {tuple(v.attribute for v in d.selector.group_by) for d in definitions}
    if len(inputs) != 1 or len(groups) != 1:
        return None
    (stream,), (group,) = inputs, groups
    types = {a.name: a.type for a in planning.analyzed.streams[stream].attributes}
    if not group or any(types[name] in _UNSPLIT_TYPES for name in group):
        return None  # a double's hash tells 0.0 from -0.0, its group key does not
    for definition in definitions:
        store = ast.find_annotation(definition.annotations, "store")
        if store is None or (store.get("type") or "").lower() != "rdbms":
            return None  # in memory, a bucket's rows would be seen by no other bucket
    return StateKey("buckets", tuple((stream, name) for name in group), SPLIT_BUCKETS)


def _reason(planning: Planning, query: str) -> str:
    """Why ``query`` is left to the runtime, as precisely as the earlier rules said."""
    if query in planning.notes:
        return planning.notes[query]
    info = next(q for q in planning.queries if q.id == query)
    if planning.touches_global_state(info):
        return "it reads or writes tables, named windows or aggregations, which only the " \
            "runtime holds"
    if not planning.standalone(info):
        return ("it is part of a chain inside the group (it reads or feeds another query of "
                "it), which the runtime runs in the reference order")
    return "no vectorised operator runs its shape"
