"""Rule 1 — JVM Spark SQL for queries that only filter and project.

Applies to a query over one stream whose handlers are filters, with no aggregate, ``group
by``, ``having``, ``order by``, ``limit``/``offset`` or rate limit, inserting current events
into a stream (a query of a partition: reading a stream the partition splits by value, into
a stream or an inner stream of the partition); when every filter and selected
expression compiles to Spark SQL; and when every producer of its input and every consumer
of its output is placed here too, and no aggregation of the app (which the runtime keeps)
reads its output (the runtime only sees the group's source rows, so a stream between the
runtime and Spark SQL would be lost: an aggregation over a stream a filter fills got no
events at all).

Exact because such a query keeps no state: each event's output depends on that event
alone (in a value partition each event reaches one key, or none when its key is null, which
the query's filter adds), and the Spark SQL compiler implements Siddhi's (Java's) expression
semantics (:mod:`eddy.engine.compile.expressions`); outputs carry the runtime's ``_order``
path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical.facts import OperatorFacts
from eddy.plan.physical.model import STATELESS, QueryChoice
from eddy.plan.physical.planner import Planning, aggregation_inputs

NAME = "spark-sql"


def stateless_shape(analyzed: AnalyzedApp, info: QueryInfo, *, tail: bool = False) -> bool:
    """Whether the query only filters and projects one stream into a stream. A query of a
    partition (inserting into a stream or an inner stream of the partition) must read a
    stream the partition splits by value (:func:`partition_key`: each event reaches one
    key, none when its key is null, so the query sees it at most once, as outside), or with
    ``tail`` an inner stream of the partition (which stays with the key that filled it)."""
    query, selector = info.query, info.query.selector
    source = query.input
    if not isinstance(source, ast.SingleInputStream):
        return False
    kinds: tuple[str, ...] = ("stream",)
    if info.partition is not None:
        kinds = ("stream", "inner")
        if not (source.inner if tail else partition_key(analyzed, info) is not None):
            return False
    elif source.inner:
        return False
    return (all(isinstance(h, ast.Filter) for h in source.handlers)
            and not info.aggregates and not selector.group_by and selector.having is None
            and not selector.order_by and selector.limit is None and selector.offset is None
            and query.output_rate is None
            and isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind in kinds and query.output.event_type != "expired")


def partition_key(analyzed: AnalyzedApp, info: QueryInfo) -> ast.Expression | None:
    """The expression the value partition of ``info`` keys its input stream by; None
    outside partitions, for an inner stream, and for a stream the partition splits by
    ranges (an event may reach several keys) or not at all (it reaches every key)."""
    source = info.query.input
    if info.partition is None or not isinstance(source, ast.SingleInputStream) or \
            source.inner:
        return None
    for ptype in analyzed.partition(info.partition).partition.partition_types:
        if ptype.stream == source.stream and isinstance(ptype, ast.ValuePartitionType):
            return ptype.expression
    return None


def expressions(analyzed: AnalyzedApp, info: QueryInfo) -> list[ast.Expression]:
    """The filters and selected expressions of a stateless query, and the key of its
    partition (:func:`partition_key`)."""
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    found: list[ast.Expression] = [h.expression for h in source.handlers
                                   if isinstance(h, ast.Filter)]
    found += [a.expression for a in info.query.selector.attributes or ()]
    key = partition_key(analyzed, info)
    return found if key is None else [*found, key]


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
        if not stateless_shape(analyzed, info):
            continue
        problem = facts.spark_sql_problem(analyzed, expressions(analyzed, info))
        if problem is None:
            native[info.id] = info
        else:
            notes[info.id] = problem
    # by name, and an inner stream also by partition (each partition has its own ``#T``)
    producers: dict[tuple[str, int | None], list[QueryInfo]] = {}
    consumers: dict[tuple[str, int | None], list[QueryInfo]] = {}
    for info in analyzed.queries:
        if info.output_stream:
            producers.setdefault(_scoped(info.output_stream, info), []).append(info)
        for name in info.inputs:
            consumers.setdefault(_scoped(name, info), []).append(info)
    changed = True
    while changed:
        changed = False
        for qid, info in list(native.items()):
            stream = info.inputs[0]  # not an inner stream (:func:`stateless_shape`)
            fed = all(p.id in native for p in producers.get((stream, None), ())) and \
                (stream in inputs or (stream, None) in producers)
            target = info.output_stream or ""
            drained = all(c.id in native or through(c)
                          for c in consumers.get(_scoped(target, info), ())) \
                and target not in aggregated
            if not (fed and drained):
                del native[qid]
                notes[qid] = (f"its input {stream} does not come from Spark SQL" if not fed
                              else f"its output {target} feeds an aggregation, which "
                              "the runtime keeps" if target in aggregated
                              else f"its output {target} feeds the runtime")
                changed = True
    return native


def _scoped(name: str, info: QueryInfo) -> tuple[str, int | None]:
    """A stream ``info`` reads or fills as ``name``, told apart from another partition's
    inner stream of the same name."""
    return name, info.partition if name.startswith("#") else None


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
