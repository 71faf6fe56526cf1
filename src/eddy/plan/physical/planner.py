"""The physical planner: ordered rules (:mod:`.rules`) applied to an execution group.

Each rule looks at the queries no earlier rule has placed and may place some of them (or
the group's runtime operator); the first rule to place a query wins. The rules, in order:
Spark SQL for stateless queries, the vectorised window aggregate, followed-by and window
join for each stateful query that stands alone in its group (:meth:`Planning.standalone`;
also one that filters feed: :meth:`Planning.fed_through`), each in its own operator with its
own state, Spark SQL after such an operator for the stateless queries that read its output
(:meth:`Planning.tails`), and the per-event runtime (or the aggregation step) for the rest.
A stateful query reading what a stateful query inserts may read that query's Java operator
in the same micro-batch (:meth:`Planning.producer_of`: a chain of operators in one
streaming query).
The result is deterministic for the same app and :class:`Sources`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import walk_nodes
from eddy.plan.physical.facts import OperatorFacts
from eddy.plan.physical.heads import Fed, fed_stream, fills
from eddy.plan.physical.model import GroupPhysicalPlan, QueryChoice, Sources


@dataclass
class Planning:
    """The working state the rules share while planning one group."""

    analyzed: AnalyzedApp
    sources: Sources
    facts: OperatorFacts
    queries: tuple[QueryInfo, ...]
    chosen: dict[str, QueryChoice] = field(default_factory=dict)
    runtime: QueryChoice | None = None
    notes: dict[str, str] = field(default_factory=dict)
    """Why an earlier rule passed a query over, for the reason of the rule that takes it."""
    fed: dict[str, Fed | None] = field(default_factory=dict)
    """:meth:`fed_through`'s answers, by query."""
    producers: dict[str, QueryInfo | None] = field(default_factory=dict)
    """:meth:`producer_of`'s answers, by query."""

    @property
    def pending(self) -> list[QueryInfo]:
        """The queries no rule has placed yet, in written order."""
        return [q for q in self.queries if q.id not in self.chosen]

    def choose(self, choice: QueryChoice) -> None:
        """Places a query; a second placement is a bug in the rules."""
        assert choice.query not in self.chosen, f"{choice.query} placed twice"
        self.chosen[choice.query] = choice

    def keeps_global_state(self) -> bool:
        """Whether the app has tables, named windows or aggregations: state any query may
        read, which only the runtime holds."""
        return any(s.kind in ("table", "window", "aggregation")
                   for s in self.analyzed.streams.values())

    def touches_global_state(self, info: QueryInfo) -> bool:
        """Whether ``info`` reads or writes a table, named window or aggregation (an
        ``in`` condition included)."""
        kinds = {name: s.kind for name, s in self.analyzed.streams.items()}
        kept = ("table", "window", "aggregation")
        return info.target_kind in kept or any(kinds.get(name) in kept for name in info.inputs) \
            or any(isinstance(node, ast.In) for node in walk_nodes(info.query))

    def standalone(self, info: QueryInfo) -> bool:
        """Whether ``info`` can run in an operator of its own beside the group's others: it
        reads only the group's input streams (no query of the group produces them; or the
        stream its head fills: :meth:`fed_through`) and no table (not even by ``in``), and
        no other query of the group (nor an aggregation) reads what it inserts, but for its
        :meth:`tails`.

        Such a query's outputs depend on the group's input rows alone, and each operator
        sees all of those rows, so running it apart gives the outputs the per-event runtime
        gives, with the same ``_seq`` and ``_order`` (the order path starts with the
        query's place in the app); the writer merges the operators' outputs in that order.
        A query inside any other chain stays with the runtime, which feeds one query's
        outputs to the next within the micro-batch in the reference order."""
        return self._standalone_over(info, self.streams_of(info))

    def _standalone_over(self, info: QueryInfo, streams: Sequence[str]) -> bool:
        """:meth:`standalone`, with ``streams`` the streams ``info`` may read."""
        produced = {q.output_stream for q in self.analyzed.queries if q.target}
        if any(name not in streams or (name in produced and name in self.sources.streams)
               for name in info.inputs):
            return False
        if self.touches_global_state(info) or info.output_stream in self.aggregation_inputs():
            return False
        return self.tails(info) is not None

    def streams_of(self, info: QueryInfo) -> tuple[str, ...]:
        """The streams ``info``'s operator reads: the group's inputs, and the stream its
        head fills when it is :meth:`fed_through` one, or its producer when it is chained
        to one (:meth:`producer_of`)."""
        producer = self.producer_of(info)
        if producer is not None:
            assert producer.output_stream is not None
            return (producer.output_stream,)
        fed = self.fed_through(info)
        return self.sources.streams + ((fed.stream,) if fed is not None else ())

    def through(self, info: QueryInfo) -> str:
        """What a rule's reason adds for a query fed through its head or chained to its
        producer."""
        producer = self.producer_of(info)
        if producer is not None:
            return f", reading the outputs of {producer.id}'s operator in its micro-batch"
        fed = self.fed_through(info)
        return "" if fed is None else f", read through {fed.head.id}'s filter"

    def producer_of(self, info: QueryInfo) -> QueryInfo | None:
        """The stateful query whose Java operator's outputs ``info``'s operator reads, in
        the same micro-batch, when ``info`` reads only the stream that query alone fills
        and the two form a chain (:meth:`_chains`), the producer standing alone (over the
        group's input streams, fed through its filters or chained in turn); else None.

        Exact because such a producer emits at most one current event per input row, at
        that row's place and time, and the reference hands each to its subscribers before
        the next row: the consumer sees the producer's outputs in ``_seq`` order, one per
        ``_seq``, each reaching it at the path the runtime gives a subscriber
        (:func:`~eddy.engine.operators.operator_part.order_prefix`, then ``1``). The
        consumer reads no clock (no timer, no expired event), so the group's other rows,
        which it does not see, change nothing."""
        if info.id not in self.producers:
            self.producers[info.id] = self._producer_of(info)
        return self.producers[info.id]

    def producer_id(self, info: QueryInfo) -> str | None:
        """The id of :meth:`producer_of`, for the query's :class:`QueryChoice`."""
        producer = self.producer_of(info)
        return None if producer is None else producer.id

    def _producer_of(self, info: QueryInfo) -> QueryInfo | None:
        producer = self._filler(info)
        if producer is None or not self._chains(producer, info) or \
                not self.standalone(producer):
            return None
        return producer

    def _chains(self, producer: QueryInfo, consumer: QueryInfo,
                seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``consumer`` may read ``producer``'s outputs in a chain of operators
        (the engine's :meth:`~eddy.plan.physical.facts.OperatorFacts.chains`): the producer
        keeps state (a filter feeds its readers through :meth:`fed_through` or has them as
        :meth:`tails`) and reads the group's input streams, what filters of them insert
        (:meth:`_heads`) or what the query before it in a chain inserts; the consumer is no
        tail (Spark SQL runs those after the producer's operator), touches no table and
        feeds no aggregation. Checked on the shapes alone, without asking whether a query
        stands alone, which asks this in turn (``seen``: the chain's queries so far)."""
        from eddy.plan.physical.rules.spark_sql import stateless_shape

        if producer.target_kind not in ("stream", "inner") or producer.id in seen or \
                stateless_shape(self.analyzed, producer) or \
                self.touches_global_state(consumer) or \
                self.filters_in_spark(consumer, tail=True) or \
                consumer.output_stream in self.aggregation_inputs():
            return False
        streams = self.sources.streams
        if not set(producer.inputs) <= set(streams):
            heads = self._heads(producer)
            before = self._filler(producer)
            if heads is not None:
                streams = (*streams, heads.stream)
            elif before is not None and self._chains(before, producer, seen | {producer.id}):
                streams = (producer.inputs[0],)
            else:
                return False
        return self.facts.chains(self.analyzed, producer, streams, consumer)

    def _filler(self, info: QueryInfo) -> QueryInfo | None:
        """The one query of the group filling the one stream ``info`` reads, when no query
        outside the group fills it too."""
        streams = set(info.inputs)
        if len(streams) != 1 or streams <= set(self.sources.streams):
            return None
        (stream,) = streams
        fillers = [q for q in self.analyzed.queries if fills(q, stream, info)]
        if len(fillers) != 1 or fillers[0].id == info.id or fillers[0] not in self.queries:
            return None
        return fillers[0]

    def fed_through(self, info: QueryInfo) -> Fed | None:
        """How ``info`` runs on an operator of its own although a query of the group fills
        one of its inputs (:mod:`eddy.plan.physical.heads`): when that query (its head)
        only filters and projects, in Spark SQL, one of the group's input streams or what
        such queries fill from one, nothing else fills those streams, no aggregation reads
        them, and a rule's operator takes ``info`` reading the head's as an input stream;
        else None."""
        if info.id not in self.fed:
            self.fed[info.id] = self._fed_through(info)
        return self.fed[info.id]

    def _fed_through(self, info: QueryInfo) -> Fed | None:
        from eddy.plan.physical.rules import STATEFUL

        fed = self._heads(info)
        if fed is None:
            return None
        streams = (*self.sources.streams, fed.stream)
        if not self._standalone_over(info, streams) or \
                not any(rule.takes(self, info, streams) for rule in STATEFUL):
            return None
        return fed

    def _heads(self, info: QueryInfo) -> Fed | None:
        """The heads ``info`` would be :meth:`fed_through`, when each only filters and
        projects in Spark SQL, from one of the group's input streams, feeding no
        aggregation; whether ``info`` stands alone over them is the rest."""
        fed = fed_stream(self.analyzed, info)
        if fed is None or fed.source not in self.sources.streams:
            return None
        aggregated = self.aggregation_inputs()
        if any(not self.filters_in_spark(head) or head.output_stream in aggregated
               for head in fed.heads):
            return None
        return fed

    def tails(self, info: QueryInfo) -> list[QueryInfo] | None:
        """The queries that read what ``info`` inserts, when each is a *tail* of it, else
        None: a query that only filters and projects ``info``'s stream (which ``info``
        alone fills, with no ``object`` attribute) in expressions Spark SQL evaluates,
        touches no table, and whose own output only tails read in turn.

        A tail's events are ``info``'s outputs, each taken as it is emitted, so Spark SQL
        computes them from the rows of ``info``'s operator, after it, with the order path
        the runtime gives a subscriber (:mod:`eddy.engine.compile.native_queries`)."""
        stream = info.output_stream
        others = [q for q in self.analyzed.queries if q.id != info.id]
        readers = [q for q in others if stream in q.inputs and fills(info, stream, q)]
        if not readers or stream is None:
            return []
        if info.target_kind not in ("stream", "inner") or \
                stream in self.aggregation_inputs() or \
                any(fills(q, stream, info) for q in others) or \
                any(a.type is ast.AttrType.OBJECT for a in info.outputs):
            return None
        found: list[QueryInfo] = []
        for reader in readers:
            if self._chains(info, reader) and self.tails(reader) is not None:
                continue  # a consumer chained to ``info`` (:meth:`producer_of`)
            if reader.inputs != (stream,) or not self.filters_in_spark(reader, tail=True):
                return None
            further = self.tails(reader)
            if further is None:
                return None
            found += [reader, *further]
        return found

    def filters_in_spark(self, info: QueryInfo, *, tail: bool = False) -> bool:
        """Whether ``info`` only filters and projects one stream, touching no table, in
        expressions Spark SQL evaluates (what a head and a tail must be); ``tail``: a query
        of a partition reading an inner stream of it too."""
        from eddy.plan.physical.rules.spark_sql import expressions, stateless_shape

        return stateless_shape(self.analyzed, info, tail=tail) and \
            not self.touches_global_state(info) and \
            self.facts.spark_sql_problem(self.analyzed, expressions(self.analyzed, info)) is None

    def aggregation_inputs(self) -> set[str]:
        """The streams the app's aggregations read (:func:`aggregation_inputs`)."""
        return aggregation_inputs(self.analyzed)


def aggregation_inputs(analyzed: AnalyzedApp) -> set[str]:
    """The streams that ``define aggregation … from S`` reads (the runtime aggregates them
    even when no query reads them)."""
    return {info.definition.input.stream for info in analyzed.streams.values()
            if isinstance(info.definition, ast.AggregationDefinition)
            and info.definition.input is not None}


def plan_group(analyzed: AnalyzedApp, name: str, sources: Sources, facts: OperatorFacts,
               queries: Sequence[str] | None = None) -> GroupPhysicalPlan:
    """The physical plan of the group ``name`` running ``queries`` (default: all the app's).

    Raises ``AssertionError`` when the rules leave a query unplaced (a bug, not an input
    fault: the last rule takes every remaining query)."""
    from eddy.plan.physical.rules import RULES

    wanted = None if queries is None else set(queries)
    planning = Planning(analyzed, sources, facts,
                        tuple(q for q in analyzed.queries if wanted is None or q.id in wanted))
    for rule in RULES:
        rule.apply(planning)
    assert not planning.pending, f"no rule placed {[q.id for q in planning.pending]}"
    return GroupPhysicalPlan(name, sources,
                             tuple(planning.chosen[q.id] for q in planning.queries),
                             planning.runtime)
