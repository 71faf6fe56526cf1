"""A stateful query fed by a filter: it reads the filter's outputs as if they were input.

``from S[f] select a, b * 2 as c insert into X; from X#window.time(1 min) select a, sum(c)
…`` — the second query's events are the first one's outputs, each at its input event's
place, and the first one (the *head*) keeps no state. So the engine computes ``X``'s events
on the group's input rows in Spark SQL, as the head does (an ``S`` row that passes ``f``
becomes an ``X`` row with ``a`` and ``c``), and the second query's operator reads those rows
as if ``X`` were an input stream; only its outputs' order paths differ, since the reference
reaches it through the head (``(1, head, 0, 1, query, …)`` where a query of an input has
``(1, query, …)``). Every other row is unchanged, so the group's clock is too. A chain of
such heads (``S -> A -> X``) feeds a query alike.
The planner says which queries are fed so (:meth:`~eddy.plan.physical.planner.Planning.
fed_through`); a query that also reads ``S`` is not (one row cannot be both events). In a
value partition, a head of the partition may fill an inner stream ``#X`` from a stream the
partition splits; the row keeps ``S``'s attributes, so the fed query reads each ``#X``
event's key (its cause's) there.
"""

from __future__ import annotations

from dataclasses import dataclass

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import walk_nodes

VARYING = ("UUID", "currentTimeMillis")
"""Functions that give another value each time they run: a head calling one (or any
namespaced or script function, which may) is computed again for the fed query, so it is
not read through."""


@dataclass(frozen=True)
class Fed:
    """A query fed by ``heads``: it reads ``stream``, which the last of them alone fills,
    each from the one before it, the first from the group's input stream ``source``."""

    heads: tuple[QueryInfo, ...]
    stream: str
    source: str

    @property
    def head(self) -> QueryInfo:
        """The query filling the fed query's input."""
        return self.heads[-1]


def fed_stream(analyzed: AnalyzedApp, info: QueryInfo) -> Fed | None:
    """The one stream ``info`` reads that a query of the app fills, with the chain of
    queries filling it (each the only one filling its stream) back to a stream none fills;
    None when there is no such one stream, ``info`` reads a stream of the chain besides, or a
    query of the chain computes something that varies between runs (:data:`VARYING`). The
    planner's conditions on the heads are the rest."""
    produced = [name for name in dict.fromkeys(info.inputs)  # a self join reads one twice
                if any(fills(q, name, info) for q in analyzed.queries)]
    if len(produced) != 1:
        return None
    chain: list[QueryInfo] = []
    stream, reader = produced[0], info
    while True:
        fillers = [q for q in analyzed.queries if fills(q, stream, reader)]
        if len(fillers) != 1:
            return None
        head = fillers[0]
        if head.id == info.id or head in chain or len(head.inputs) != 1 or \
                head.inputs[0] in info.inputs or _varies(head):
            return None
        chain.insert(0, head)
        stream, reader = head.inputs[0], head
        if not any(fills(q, stream, reader) for q in analyzed.queries):
            return Fed(tuple(chain), produced[0], stream)


def inner_key(analyzed: AnalyzedApp, reader: QueryInfo, stream: str) -> str | None:
    """The attribute of the inner stream ``stream`` (``#T``) that holds the partition key of
    each of its events, as ``reader`` (a query of the partition) reads them: the one query
    filling ``#T`` reads one stream the partition splits by a plain attribute and selects
    that attribute as it is (an event of ``#T`` stays with the key of the event that caused
    it, whose attribute that is); None when no attribute is known to hold the key (or
    ``stream`` is no inner stream)."""
    fillers = [q for q in analyzed.queries if fills(q, stream, reader)]
    if not stream.startswith("#") or reader.partition is None or len(fillers) != 1 or \
            len(set(fillers[0].inputs)) != 1:
        return None
    filler, source = fillers[0], fillers[0].inputs[0]
    key = next((p.expression.attribute
                for p in analyzed.partition(reader.partition).partition.partition_types
                if p.stream == source and isinstance(p, ast.ValuePartitionType)
                and isinstance(p.expression, ast.Variable)), None)
    if key is None:
        return None
    selected = filler.query.selector.attributes
    if selected is None:  # select *
        return key if key in (a.name for a in filler.outputs) else None
    return next((out.name for item, out in zip(selected, filler.outputs)
                 if isinstance(item.expression, ast.Variable)
                 and item.expression.attribute == key and item.expression.stream_index is None),
                None)


def fills(query: QueryInfo, name: str, reader: QueryInfo) -> bool:
    """Whether ``query`` inserts into the stream ``reader`` reads as ``name`` (an inner
    stream ``#T`` is its partition's own)."""
    return query.output_stream == name and \
        (not name.startswith("#") or query.partition == reader.partition)


def _varies(info: QueryInfo) -> bool:
    """Whether ``info`` calls a function that may give another value each time."""
    return any(isinstance(node, ast.FunctionCall) and
               (node.namespace is not None or node.name in VARYING)
               for node in walk_nodes(info.query))
