"""A stateful query fed by a filter, read as one query over the filter's input.

``from S[f] select a, b * 2 as c insert into X; from X[g]#window.time(1 min) select a,
sum(c) as total …`` — the second query's events are the first one's outputs, each at its
input event's place, and the first one keeps no state. So the second query gives the same
outputs as ``from S[f][g']#window.time(1 min) select a, sum(b * 2) as total …`` with every
reference to ``X``'s attributes replaced by the expression the filter selects for it
(``g'``), read from ``S`` directly; only its outputs' order paths differ, since the
reference reaches it through the filter (``(1, filter, 0, 1, query, …)`` where a query of
``S`` has ``(1, query, …)``). :func:`compose` builds that app (Spark-free, so ``eddy
explain`` shows what runs), the planner places the composed query on the window aggregate
(:mod:`eddy.plan.physical.rules.window_aggregate`), and the engine compiles it from the same
app with the filter's path in front of its order (:data:`entry`).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from eddy.lang import SiddhiAppError, ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import walk_expression


def entry(head: QueryInfo) -> tuple[int, ...]:
    """The order path at which the query fed by ``head`` receives an input's event: the
    input reaching ``head``, its emission ``0``, handed to subscribers (``1``)."""
    return (1, head.index, 0, 1)


def producer(analyzed: AnalyzedApp, info: QueryInfo) -> QueryInfo | None:
    """The one query inserting into the stream ``info`` reads, if exactly one does."""
    source = info.query.input
    if not isinstance(source, ast.SingleInputStream) or source.inner or source.fault:
        return None
    found = [q for q in analyzed.queries if q.target == source.stream and q.id != info.id]
    return found[0] if len(found) == 1 else None


def compose(analyzed: AnalyzedApp, info: QueryInfo, head: QueryInfo) -> AnalyzedApp | None:
    """The app with ``info`` (one stream, outside any partition) reading ``head``'s input
    through ``head``'s filters, each reference to an attribute of ``head``'s output replaced
    by the expression ``head`` selects for it, its output names kept; None when that is not
    a valid app (a ``group by`` of a computed attribute, say) or ``head`` selects a function
    call, which computed again might not give what ``head`` emitted."""
    source, head_source = info.query.input, head.query.input
    if info.partition is not None or head.partition is not None or \
            not isinstance(source, ast.SingleInputStream) or \
            not isinstance(head_source, ast.SingleInputStream):
        return None
    selected = head.query.selector.attributes
    values: dict[str, ast.Expression] = (
        {out.name: ast.Variable(out.name) for out in head.outputs} if selected is None else
        {out.name: item.expression for out, item in zip(head.outputs, selected)})
    if any(isinstance(node, ast.FunctionCall) for value in values.values()
           for node in walk_expression(value)):
        return None  # a function (``UUID()``, ``currentTimeMillis()``) may not recompute alike
    names = {None, source.stream, source.alias}

    def replace(node: Any) -> Any:
        if isinstance(node, ast.Variable):
            if node.stream in names and node.attribute in values and not node.inner \
                    and not node.fault and node.stream_index is None:
                return copy.deepcopy(values[node.attribute])
            return node
        if isinstance(node, (list, tuple)):
            return type(node)(replace(item) for item in node)
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            changes = {f.name: replace(getattr(node, f.name)) for f in dataclasses.fields(node)}
            return dataclasses.replace(node, **changes)
        return node

    query, selector = info.query, info.query.selector
    attributes = tuple(ast.OutputAttribute(replace(item.expression), out.name)
                       for item, out in zip(selector.attributes or _all(info), info.outputs))
    group_by = tuple(replace(v) for v in selector.group_by)
    if not all(isinstance(v, ast.Variable) for v in group_by):
        return None
    rewritten = dataclasses.replace(
        query,
        input=ast.SingleInputStream(head_source.stream,
                                    (*copy.deepcopy(head_source.handlers),
                                     *replace(source.handlers)),
                                    head_source.alias),
        selector=dataclasses.replace(selector, attributes=attributes, group_by=group_by))
    elements = tuple(rewritten if element is query else element
                     for element in analyzed.app.elements)
    from eddy.lang.analyzer import analyze

    try:
        return analyze(dataclasses.replace(analyzed.app, elements=elements), analyzed.source,
                       analyzed.filename)
    except SiddhiAppError:
        return None


def _all(info: QueryInfo) -> tuple[ast.OutputAttribute, ...]:
    """``select *`` written out: each of the input's attributes."""
    return tuple(ast.OutputAttribute(ast.Variable(out.name)) for out in info.outputs)
