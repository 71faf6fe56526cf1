"""The physical plan of an execution group: per query, the operator that runs it, its state
key and why (DESIGN.md §4). Frozen and Spark-free, so ``eddy explain`` shows exactly what
the engine will run, and every entry point can be checked to build the same plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Operator = Literal["spark-sql", "spark-sql-tail", "jvm-window-aggregate", "jvm-followed-by",
                   "jvm-absent", "window-aggregate", "followed-by", "window-join", "sequence",
                   "counting", "cycle", "logical", "aggregation-step", "runtime"]
"""``spark-sql``: Catalyst expressions in the JVM (``spark-sql-tail``: over another operator's
outputs); ``jvm-window-aggregate``, ``jvm-followed-by``, ``jvm-absent``: eddy's own Java operators (each a
stateful operator of its own, no Python); ``window-aggregate``, ``followed-by``,
``window-join``, ``sequence``, ``counting``, ``cycle``, ``logical``: vectorised Python
operators (numpy over a micro-batch); ``aggregation-step``: the runtime's aggregations fed a
column batch at a time; ``runtime``: the per-event runtime."""

VECTORISED: tuple[Operator, ...] = ("window-aggregate", "followed-by", "window-join",
                                    "sequence", "counting", "cycle", "logical")
"""The operators that run one query each in a Python operator of their own."""

OPERATOR_NAMES: dict[Operator, str] = {
    "spark-sql": "JVM Spark SQL", "spark-sql-tail": "JVM Spark SQL after another operator",
    "jvm-window-aggregate": "JVM window aggregate",
    "jvm-followed-by": "JVM followed-by",
    "jvm-absent": "JVM absent pattern",
    "window-aggregate": "vectorised window aggregate",
    "followed-by": "vectorised followed-by", "window-join": "vectorised window join",
    "sequence": "vectorised sequence", "counting": "vectorised counting pattern",
    "cycle": "vectorised pattern cycle", "logical": "vectorised logical pattern",
    "aggregation-step": "vectorised aggregation step", "runtime": "per-event runtime",
}


@dataclass(frozen=True)
class StateKey:
    """How an operator's state is keyed in Spark's state store: ``none`` (stateless),
    ``one`` (a single key: the semantics are global, as one Siddhi thread), or ``buckets``
    hash buckets of the values of ``attributes`` (``(stream, attribute)`` pairs)."""

    kind: Literal["none", "one", "buckets"]
    attributes: tuple[tuple[str, str], ...] = ()
    buckets: int = 1

    def describe(self) -> str:
        """``keyed by roomNo in 16 buckets``, ``on one key`` or ``stateless``."""
        if self.kind == "none":
            return "stateless"
        if self.kind == "one":
            return "on one key"
        names = ", ".join(dict.fromkeys(attribute for _, attribute in self.attributes))
        return f"keyed by {names} in {self.buckets} buckets"


ONE_KEY = StateKey("one")
STATELESS = StateKey("none")


@dataclass(frozen=True)
class QueryChoice:
    """One query's operator, state key, the rule that chose them and why."""

    query: str
    operator: Operator
    key: StateKey
    rule: str
    reason: str
    producer: str | None = None
    """The query whose operator's outputs this query's operator reads in the same
    micro-batch (a chain of stateful operators: :meth:`~eddy.plan.physical.planner.
    Planning.producer_of`), else None: it reads the group's input rows."""

    def describe(self) -> str:
        """``query-2: vectorised followed-by, keyed by roomNo in 4 buckets, because …``."""
        return (f"{self.query}: {OPERATOR_NAMES[self.operator]}, {self.key.describe()}, "
                f"because {self.reason}")


@dataclass(frozen=True)
class Sources:
    """What the planner is told about the group's input, the same from every entry point:
    the streams it reads, whether each row carries its stream's clock (``_clock``), and
    whether on-demand queries may arrive (which keeps a runtime in the plan)."""

    streams: tuple[str, ...]
    clock: bool = False
    on_demand: bool = True


@dataclass(frozen=True)
class GroupPhysicalPlan:
    """The operators of one execution group. ``queries`` in written order; ``runtime`` the
    choice for the runtime operator itself when the group has one (its queries, if any, are
    those whose operator is ``runtime``/``aggregation-step``; it may have none, only
    tables or aggregations to keep for on-demand queries)."""

    group: str
    sources: Sources
    queries: tuple[QueryChoice, ...]
    runtime: QueryChoice | None

    def choice(self, query: str) -> QueryChoice:
        """The choice for ``query``; KeyError if it is not in the group."""
        for choice in self.queries:
            if choice.query == query:
                return choice
        raise KeyError(query)

    def ids(self, *operators: Operator) -> tuple[str, ...]:
        """The queries that run in any of ``operators``, in written order."""
        return tuple(c.query for c in self.queries if c.operator in operators)

    def python_operators(self) -> tuple[str, ...]:
        """The group's Python operators: each vectorised query's (by query), then the
        runtime's (``runtime``). Spark runs one stateful Python operator per streaming
        query, so when there are several they run fused in one, each keeping its own
        state keys (the engine's ``fused_operator``)."""
        own = tuple(c.query for c in self.queries if c.operator in VECTORISED)
        return own + (("runtime",) if self.runtime is not None else ())
