"""What the physical planner asks the layers that own the operators.

The rules (:mod:`.rules`) decide; but some facts they decide on belong to code above
``plan``: whether an expression compiles to Spark SQL (the engine's compiler), whether a
vectorised operator can build its kernel for a query (its columnar evaluator, its
selection), whether the per-event runtime of some queries keeps timers. The planner takes
them through this protocol, so it stays Spark-free and below the engine, and the answers
come from the very code that later runs the query — the engine's implementation
(:mod:`eddy.engine.compile.operator_facts`) is itself Spark-free, so ``eddy explain`` gets the
same answers as a worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo


class OperatorFacts(Protocol):
    """Answers about one app's queries; every method is deterministic."""

    def spark_sql_problem(self, analyzed: AnalyzedApp,
                          expressions: Sequence[ast.Expression]) -> str | None:
        """None when every expression compiles to Spark SQL, else why one does not."""

    def window_aggregate(self, analyzed: AnalyzedApp, info: QueryInfo,
                         streams: Sequence[str]) -> bool:
        """Whether the vectorised window aggregate builds its kernel for ``info``."""

    def jvm_window_aggregate(self, analyzed: AnalyzedApp, info: QueryInfo,
                             streams: Sequence[str]) -> bool:
        """Whether eddy's Java window operator runs ``info`` on one key (its classes are
        built on this machine, and the query has its shape)."""

    def followed_by(self, analyzed: AnalyzedApp, info: QueryInfo,
                    streams: Sequence[str]) -> bool:
        """Whether the vectorised followed-by builds its kernel for ``info`` (its filters
        compiling to Spark SQL included)."""

    def jvm_followed_by(self, analyzed: AnalyzedApp, info: QueryInfo,
                        streams: Sequence[str]) -> bool:
        """Whether eddy's Java followed-by runs ``info`` (its classes are built on this
        machine, and the followed-by takes the query)."""

    def chains(self, analyzed: AnalyzedApp, producer: QueryInfo,
               streams: Sequence[str], consumer: QueryInfo) -> bool:
        """Whether ``consumer``'s Java operator can read what ``producer``'s Java window
        aggregate (reading ``streams``) inserts, in the same micro-batch: the producer
        emits at most one current event per input row, at that row's place, and the
        consumer reads no clock, only those events (both outside partitions)."""

    def jvm_absent(self, analyzed: AnalyzedApp, info: QueryInfo,
                   streams: Sequence[str]) -> bool:
        """Whether eddy's Java absent operator runs ``info`` (its classes are built on this
        machine, and the query has its shape, its filters compiling to Spark SQL)."""

    def sequence(self, analyzed: AnalyzedApp, info: QueryInfo,
                 streams: Sequence[str]) -> bool:
        """Whether the vectorised sequence operator builds its kernel for ``info`` (its
        filters compiling to Spark SQL included)."""

    def counting(self, analyzed: AnalyzedApp, info: QueryInfo,
                 streams: Sequence[str]) -> bool:
        """Whether the vectorised counting operator builds its kernel for ``info`` (its
        filters compiling to Spark SQL included)."""

    def cycle(self, analyzed: AnalyzedApp, info: QueryInfo,
              streams: Sequence[str]) -> bool:
        """Whether the vectorised cycle operator builds its kernel for ``info`` (its filters
        compiling to Spark SQL included)."""

    def logical(self, analyzed: AnalyzedApp, info: QueryInfo,
                streams: Sequence[str]) -> bool:
        """Whether the vectorised logical operator builds its kernel for ``info`` (its
        filters compiling to Spark SQL included)."""

    def window_join(self, analyzed: AnalyzedApp, info: QueryInfo,
                    streams: Sequence[str]) -> bool:
        """Whether the vectorised window join builds its kernel for ``info`` (its filters
        compiling to Spark SQL included)."""

    def runtime_partition(self, analyzed: AnalyzedApp, queries: Sequence[str],
                          streams: Sequence[str]) -> dict[str, str] | None:
        """Stream → attribute when the runtime of ``queries`` may be split by partition
        value, None when it must run as one."""

    def aggregations_vectorise(self, analyzed: AnalyzedApp) -> bool:
        """Whether the app's aggregations run in the column-batch aggregation step."""
