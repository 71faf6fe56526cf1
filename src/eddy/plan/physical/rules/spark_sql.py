"""Rule 1 — JVM Spark SQL for queries that only filter and project.

Applies to a query over one stream (not an inner stream, not in a partition) whose handlers
are filters, with no aggregate, ``group by``, ``having``, ``order by``, ``limit``/``offset``
or rate limit, inserting current events into a stream; when every filter and selected
expression compiles to Spark SQL; and when every producer of its input and every consumer
of its output is placed here too, and no aggregation of the app (which the runtime keeps)
reads its output (the runtime only sees the group's source rows, so a stream between the
runtime and Spark SQL would be lost: an aggregation over a stream a filter fills got no
events at all).

Exact because such a query keeps no state: each event's output depends on that event
alone, and the Spark SQL compiler implements Siddhi's (Java's) expression semantics
(:mod:`eddy.engine.compile.expressions`); outputs carry the runtime's ``_order`` path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical.facts import OperatorFacts
from eddy.plan.physical.model import STATELESS, QueryChoice
from eddy.plan.physical.planner import Planning, aggregation_inputs

NAME = "spark-sql"


def stateless_shape(info: QueryInfo) -> bool:
    """Whether the query only filters and projects one stream into a stream."""
    query, selector = info.query, info.query.selector
    source = query.input
    return (info.partition is None
            and isinstance(source, ast.SingleInputStream)
            and not source.inner
            and all(isinstance(h, ast.Filter) for h in source.handlers)
            and not info.aggregates and not selector.group_by and selector.having is None
            and not selector.order_by and selector.limit is None and selector.offset is None
            and query.output_rate is None
            and isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind == "stream" and query.output.event_type != "expired")


def expressions(info: QueryInfo) -> list[ast.Expression]:
    """The filters and selected expressions of a stateless query."""
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    found: list[ast.Expression] = [h.expression for h in source.handlers
                                   if isinstance(h, ast.Filter)]
    found += [a.expression for a in info.query.selector.attributes or ()]
    return found


def native_queries(analyzed: AnalyzedApp, candidates: Sequence[QueryInfo],
                   streams: Sequence[str], facts: OperatorFacts, notes: dict[str, str],
                   through: Callable[[QueryInfo], bool] = lambda info: False
                   ) -> dict[str, QueryInfo]:
    """The largest set of ``candidates`` of the stateless shape whose expressions compile
    and whose inputs and consumers are all in the set (or consumers ``through`` says read
    through it: :meth:`~eddy.plan.physical.planner.Planning.fed_through`); ``notes`` get why
    others are not."""
    inputs = set(streams)
    aggregated = aggregation_inputs(analyzed)
    native: dict[str, QueryInfo] = {}
    for info in candidates:
        if not stateless_shape(info):
            continue
        problem = facts.spark_sql_problem(analyzed, expressions(info))
        if problem is None:
            native[info.id] = info
        else:
            notes[info.id] = problem
    producers: dict[str, list[QueryInfo]] = {}
    consumers: dict[str, list[QueryInfo]] = {}
    for info in analyzed.queries:
        if info.target:
            producers.setdefault(info.target, []).append(info)
        for name in info.inputs:
            consumers.setdefault(name, []).append(info)
    changed = True
    while changed:
        changed = False
        for qid, info in list(native.items()):
            stream = info.inputs[0]
            fed = all(p.id in native for p in producers.get(stream, ())) and \
                (stream in inputs or stream in producers)
            drained = all(c.id in native or through(c)
                          for c in consumers.get(info.target or "", ())) \
                and info.target not in aggregated
            if not (fed and drained):
                del native[qid]
                notes[qid] = (f"its input {stream} does not come from Spark SQL" if not fed
                              else f"its output {info.target} feeds an aggregation, which "
                              "the runtime keeps" if info.target in aggregated
                              else f"its output {info.target} feeds the runtime")
                changed = True
    return native


def apply(planning: Planning) -> None:
    """Places the largest set of stateless queries whose inputs and consumers are all here."""
    native = native_queries(planning.analyzed, planning.pending, planning.sources.streams,
                            planning.facts, planning.notes,
                            lambda info: planning.fed_through(info) is not None)
    for info in planning.pending:
        if info.id in native:
            planning.choose(QueryChoice(
                info.id, "spark-sql", STATELESS, NAME,
                "it only filters and projects, in expressions Spark SQL evaluates"))
