"""Splitting an app into execution groups and wiring them with topics.

Follows WSO2 SP's ``@dist`` rules (execGroup, parallel, subscription strategies, what a
parallel group may hold) with two deliberate differences: groups are wired by the real
dataflow graph — a group earlier in the text may consume a stream produced later, and a
cycle between groups is an error instead of silently lost events — and every name is
deterministic (no random group names), so redeploying an app gives the same plan.

Without any ``@dist`` annotation the whole app is one execution group.
"""

from __future__ import annotations

from collections import defaultdict

from eddy.lang import ast
from eddy.lang.errors import AppIssue, SiddhiAppError, Span
from eddy.lang.formatter import format_expression
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.model import AppPlan, Element, ExecutionGroup, Strategy, Subscription, Topic
from eddy.plan.wiring import assign_partitions, find_cycle


class PlanError(Exception):
    """One fault in how the app asks to be deployed (``@dist``, partitions, groups); raised
    inside the planner and reported as a :class:`SiddhiAppError`."""

    def __init__(self, message: str, span: Span, hint: str | None = None) -> None:
        super().__init__(message)
        self.issue = AppIssue("semantic", message, span, hint)


def _dist(annotations: tuple[ast.Annotation, ...]) -> ast.Annotation | None:
    return ast.find_annotation(annotations, "dist")


def parallel_of(annotation: ast.Annotation | None) -> int:
    """The instance count ``@dist(parallel='n')`` asks for; 1 when not given."""
    if annotation is None or (text := annotation.get("parallel")) is None:
        return 1
    if not text.strip().isdigit() or int(text) < 1:
        raise PlanError(f"@dist parallel must be a positive whole number, not '{text}'",
                        annotation.span)
    return int(text)


def _is_stateful(info: QueryInfo) -> bool:
    query = info.query
    if isinstance(query.input, (ast.JoinInputStream, ast.StateInputStream)):
        return True
    if isinstance(query.input, ast.SingleInputStream) and query.input.window is not None:
        return True
    return info.aggregates or query.output_rate is not None or info.target_kind == "table"


def _joined_aggregation(info: QueryInfo, analyzed: AnalyzedApp) -> str | None:
    """The aggregation the query joins with, if any."""
    for name in info.inputs:
        stream = analyzed.streams.get(name)
        if stream is not None and stream.kind == "aggregation":
            return name
    return None


class _Planner:
    """Plans one analysed app; use :func:`build_plan`."""

    def __init__(self, analyzed: AnalyzedApp) -> None:
        self.analyzed = analyzed
        self.app_name = analyzed.name
        self.distributed = _uses_dist(analyzed.app)
        self._groups: list[ExecutionGroup] = []  # the wired groups, while partitions are set

    # -- elements ----------------------------------------------------------------------------
    def elements(self) -> list[tuple[Element, ast.Annotation | None]]:
        """Every query, partition and aggregation with its ``@dist`` annotation: queries
        and partitions in written order, then the aggregations."""
        by_index: dict[int, list[QueryInfo]] = defaultdict(list)
        for info in self.analyzed.queries:
            by_index[info.index].append(info)
        found: list[tuple[Element, ast.Annotation | None]] = []
        partition_no = 0
        for index, element in enumerate(self.analyzed.app.elements):
            infos = by_index[index]
            if isinstance(element, ast.Partition):
                partition_no += 1
                for inner in element.queries:
                    inner_dist = _dist(inner.annotations)
                    if inner_dist is not None:
                        raise PlanError("@dist cannot annotate a query inside a partition",
                                        inner_dist.span, "annotate the partition instead")
                found.append((self._partition(element, partition_no, infos),
                              _dist(element.annotations)))
            else:
                found.append((self._query(infos[0]), _dist(element.annotations)))
        for definition in self.analyzed.app.definitions:
            if isinstance(definition, ast.AggregationDefinition) and definition.input:
                found.append((Element(definition.name, "aggregation", (),
                                      (definition.input.stream,), (definition.name,), True, (),
                                      definition.span), None))
        return found

    def _query(self, info: QueryInfo) -> Element:
        outputs = (info.target,) if info.target and info.target_kind != "inner" else ()
        return Element(info.id, "query", (info.id,), _global_streams(info.inputs), outputs,
                       _is_stateful(info), (), info.query.span)

    def _partition(self, partition: ast.Partition, number: int,
                   infos: list[QueryInfo]) -> Element:
        keys: list[tuple[str, str]] = []
        for ptype in partition.partition_types:
            if isinstance(ptype, ast.ValuePartitionType):
                keys.append((ptype.stream, format_expression(ptype.expression)))
            elif self.distributed:
                raise PlanError("range partitions cannot be distributed; use a value partition "
                                "('<attribute> of <stream>')", ptype.span)
        inputs = _global_streams(tuple(n for i in infos for n in i.inputs))
        outputs = tuple(dict.fromkeys(i.target for i in infos
                                      if i.target and i.target_kind != "inner"))
        return Element(f"partition-{number}", "partition", tuple(i.id for i in infos), inputs,
                       outputs, True, tuple(keys), partition.span)

    # -- groups ------------------------------------------------------------------------------
    def plan(self) -> AppPlan:
        """The app's elements gathered into execution groups, then wired with topics."""
        elements = self.elements()
        if not self.distributed:
            group = ExecutionGroup(self.app_name, 1, tuple(e for e, _ in elements), (), ())
            return self._wire([group])
        explicit = [a.get("execGroup") for _, a in elements if a is not None and a.get("execGroup")]
        default = next(f"group-{k}" for k in range(1, len(elements) + 2)
                       if f"group-{k}" not in explicit)
        members: dict[str, list[Element]] = {}
        parallel: dict[str, tuple[int, ast.Annotation | None]] = {}
        aggregation_of: dict[str, str] = {}
        for element, annotation in elements:
            if element.kind == "aggregation":
                name = f"aggregation-{element.id}"
                aggregation_of[element.id] = name
            else:
                name = (annotation.get("execGroup") if annotation else None) or default
            members.setdefault(name, []).append(element)
            wanted = parallel_of(annotation)
            if name in parallel and parallel[name][0] != wanted:
                where = annotation or parallel[name][1]
                raise PlanError(
                    f"execution group '{name}' is given parallel {parallel[name][0]} and "
                    f"{wanted}; every element of a group must agree",
                    where.span if where else element.span)
            parallel.setdefault(name, (wanted, annotation))
        self._join_in_memory_aggregations(members, aggregation_of)
        groups = [ExecutionGroup(name, parallel[name][0], tuple(items), (), ())
                  for name, items in members.items() if items]
        for group in groups:
            self._check_parallel_group(group)
        return self._wire(groups)

    def _join_in_memory_aggregations(self, members: dict[str, list[Element]],
                                     aggregation_of: dict[str, str]) -> None:
        """Elements that join an in-memory aggregation run in the aggregation's group."""
        by_id = {q.id: q for q in self.analyzed.queries}
        for name, items in list(members.items()):
            for element in list(items):
                for query_id in element.queries:
                    aggregation = _joined_aggregation(by_id[query_id], self.analyzed)
                    if aggregation is None or self._is_stored(aggregation):
                        continue
                    target = aggregation_of[aggregation]
                    if target != name:
                        items.remove(element)
                        members[target].append(element)
                    break

    def _is_stored(self, aggregation: str) -> bool:
        return _has_store(self.analyzed.streams[aggregation].definition)

    def _check_parallel_group(self, group: ExecutionGroup) -> None:
        if group.parallel == 1:
            return
        by_id = {q.id: q for q in self.analyzed.queries}
        for element in group.elements:
            if element.kind == "partition":
                continue
            info = by_id[element.queries[0]]
            if _is_stateful(info) and _joined_aggregation(info, self.analyzed) is None:
                raise PlanError(
                    f"query '{info.id}' keeps state (a window, join, pattern, aggregate, rate "
                    f"limit or table), so it cannot run in {group.parallel} parallel instances "
                    f"of group '{group.name}'", info.query.span,
                    "put it in a partition on its key, or in a group with parallel 1")
            for name in info.inputs:
                stream = self.analyzed.streams.get(name)
                if stream is not None and stream.kind in ("table", "window") and \
                        not _has_store(stream.definition):
                    raise PlanError(f"in-memory {stream.kind} '{name}' can only be used by a "
                                    "group with parallel 1", info.query.span,
                                    "give the table a @store, or lower the parallelism")

    # -- wiring ------------------------------------------------------------------------------
    def _wire(self, groups: list[ExecutionGroup]) -> AppPlan:
        streams = self.analyzed.streams
        producers: dict[str, list[str]] = defaultdict(list)
        for group in groups:
            for element in group.elements:
                for out in element.outputs:
                    if streams[out].kind == "stream" and group.name not in producers[out]:
                        producers[out].append(group.name)
        topics: dict[str, Topic] = {}
        wired: list[ExecutionGroup] = []
        for group in groups:
            subscriptions: list[Subscription] = []
            reads = dict.fromkeys(n for e in group.elements for n in e.inputs)
            for stream in reads:
                if streams[stream].kind != "stream":
                    continue
                made = producers.get(stream, [])
                if made == [group.name]:
                    continue
                strategy, key = self._strategy(group, stream)
                name = f"{self.app_name}.{stream}"
                topic = topics.get(stream) or Topic(name, stream, streams[stream].attributes,
                                                    tuple(made), ())
                grouped = strategy == "field-grouping"
                topic_key = key if grouped else topic.key
                if grouped and topic.key not in (None, key):
                    topic_key = None  # two keys: each consumer splits by its own
                topics[stream] = Topic(topic.name, stream, topic.attributes, topic.producers,
                                       topic.consumers + ((group.name, strategy),), topic_key,
                                       max(topic.partitions, group.parallel if grouped else 1))
                subscriptions.append(Subscription(name, stream, strategy, key))
            wired.append(ExecutionGroup(group.name, group.parallel, group.elements,
                                        tuple(subscriptions), ()))
        self._groups = wired
        wired = [self._with_partitions(g, topics) for g in wired]
        cycle = find_cycle({t.name: (t.producers, tuple(c for c, _ in t.consumers))
                            for t in topics.values()})
        if cycle:
            first = self._group_span(wired, cycle[0])
            raise PlanError("execution groups feed each other in a cycle: " + " -> ".join(cycle),
                            first, "put the queries of the cycle into one execution group")
        consumed = {n for g in wired for e in g.elements for n in e.inputs}
        inputs = tuple(n for n, i in streams.items() if i.kind == "stream" and not producers.get(n))
        outputs = tuple(n for n in producers if n not in consumed)
        leaving = {t.stream for t in topics.values()} | set(outputs)
        wired = [ExecutionGroup(g.name, g.parallel, g.elements, g.inputs, tuple(dict.fromkeys(
            o for e in g.elements for o in e.outputs if o in leaving))) for g in wired]
        return AppPlan(self.app_name, tuple(wired), tuple(topics.values()), inputs, outputs,
                       self.distributed)

    def _strategy(self, group: ExecutionGroup, stream: str) -> tuple[Strategy, str | None]:
        keys = {k for e in group.elements for s, k in e.partition_keys if s == stream}
        if len(keys) > 1:
            raise PlanError(f"group '{group.name}' partitions '{stream}' by {sorted(keys)}; one "
                            "group can read a stream by one key only", group.elements[0].span)
        if group.parallel == 1:
            return "all", next(iter(keys), None) if self.distributed else None
        if keys:
            return "field-grouping", next(iter(keys))
        if any(e.kind == "partition" and stream in e.inputs for e in group.elements):
            return "all", None
        return "round-robin", None

    def _with_partitions(self, group: ExecutionGroup,
                         topics: dict[str, Topic]) -> ExecutionGroup:
        """Which parts of each topic every instance reads: field grouping splits a topic into
        the largest parallelism of the groups reading it by that key (same key, same part,
        for each of them), round-robin into the group's own instances."""
        subscriptions = []
        for sub in group.inputs:
            if sub.strategy == "field-grouping":
                count = max(g.parallel for g in self._groups
                            for s in g.inputs if s.stream == sub.stream and s.key == sub.key
                            and s.strategy == "field-grouping")
            elif sub.strategy == "round-robin":
                count = group.parallel
            else:
                subscriptions.append(sub)
                continue
            subscriptions.append(Subscription(sub.topic, sub.stream, sub.strategy, sub.key,
                                              assign_partitions(count, group.parallel), count))
        return ExecutionGroup(group.name, group.parallel, group.elements, tuple(subscriptions),
                              group.outputs)

    @staticmethod
    def _group_span(groups: list[ExecutionGroup], name: str) -> Span:
        for group in groups:
            if group.name == name:
                return group.elements[0].span
        return Span(1, 0, 1, 0)


def _global_streams(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` once each, in order, without the partition-local ``#`` streams."""
    return tuple(n for n in dict.fromkeys(names) if not n.startswith("#"))


def _has_store(definition: ast.Definition | None) -> bool:
    """Whether a table, window or aggregation lives in an external store (shared by
    every instance) rather than in one process's memory."""
    store = ast.find_annotation(definition.annotations, "store") if definition else None
    return store is not None and (store.get("type") or "").lower() != "in-memory"


def _uses_dist(app: ast.SiddhiApp) -> bool:
    for element in app.elements:
        queries = element.queries if isinstance(element, ast.Partition) else ()
        if _dist(element.annotations) is not None or any(_dist(q.annotations) for q in queries):
            return True
    return False


def build_plan(analyzed: AnalyzedApp) -> AppPlan:
    """The execution groups and topics of an analysed app; faults as SiddhiAppError."""
    try:
        return _Planner(analyzed).plan()
    except PlanError as fault:
        raise SiddhiAppError([fault.issue], analyzed.source, analyzed.filename) from None
