"""A stateful query fed by a filter: it reads the filter's outputs as if they were input.

``from S[f] select a, b * 2 as c insert into X; from X#window.time(1 min) select a, sum(c)
…`` — the second query's events are the first one's outputs, each at its input event's
place, and the first one (the *head*) keeps no state. So the engine computes ``X``'s events
on the group's input rows in Spark SQL, as the head does (an ``S`` row that passes ``f``
becomes an ``X`` row with ``a`` and ``c``), and the second query's operator reads those rows
as if ``X`` were an input stream; only its outputs' order paths differ, since the reference
reaches it through the head (``(1, head, 0, 1, query, …)`` where a query of an input has
``(1, query, …)``: :func:`entry`). Every other row is unchanged, so the group's clock is too.
The planner says which queries are fed so (:meth:`~eddy.plan.physical.planner.Planning.
fed_through`); a query that also reads ``S`` is not (one row cannot be both events).
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
    """A query fed by ``head``: it reads ``stream``, which ``head`` alone fills from the
    group's input stream ``source``."""

    head: QueryInfo
    stream: str
    source: str


def entry(head: QueryInfo) -> tuple[int, ...]:
    """The order path at which a query fed by ``head`` receives an input's event: the input
    reaching ``head``, its emission ``0``, handed to subscribers (``1``)."""
    return (1, head.index, 0, 1)


def fed_stream(analyzed: AnalyzedApp, info: QueryInfo) -> Fed | None:
    """The one stream ``info`` reads that a query of the app fills, with that query, when
    exactly one query fills it, ``info`` reads no other such stream nor the stream that
    query reads, and that query computes nothing that varies between runs (:data:`VARYING`;
    the planner's conditions on the head are the rest)."""
    produced = [name for name in dict.fromkeys(info.inputs)  # a self join reads one twice
                if any(q.target == name for q in analyzed.queries)]
    if len(produced) != 1:
        return None
    heads = [q for q in analyzed.queries if q.target == produced[0]]
    if len(heads) != 1 or heads[0].id == info.id or len(heads[0].inputs) != 1 or \
            heads[0].inputs[0] in info.inputs or any(
                isinstance(node, ast.FunctionCall) and
                (node.namespace is not None or node.name in VARYING)
                for node in walk_nodes(heads[0].query)):
        return None
    return Fed(heads[0], produced[0], heads[0].inputs[0])
