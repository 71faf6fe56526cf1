"""Reading an aggregation: on-demand queries (``from A on … within … per … select …``) and
stream joins (``from S join A on … within … per … select …``).

Both evaluate ``within`` (two longs or date strings, or one ``'2017-06-** **:**:**'``
pattern) and ``per`` (``'seconds'`` … ``'years'``, possibly a stream attribute in a join),
fetch the merged buckets from :meth:`AggregationRuntime.find`, and then apply the ``on``
condition to each bucket row; the query's own ``select``, ``group by``, ``having``,
``order by`` and ``limit`` run on top, in the caller's selector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from eddy.lang import ast
from eddy.runtime.aggregation.runtime import AggregationRuntime
from eddy.runtime.aggregation.timeutil import (
    AggregationTimeError,
    normalize_duration,
    within_range,
)
from eddy.runtime.events import CURRENT, Event
from eddy.runtime.expressions import ExpressionCompiler

__all__ = ["AggregationJoinSide", "aggregation_finder", "aggregation_join_unsupported"]

Getter = Callable[[Any], Any]
Row = tuple[Any, ...]


class _Range:
    """Compiled ``within … per …``: ``(granularity, start, end)`` for a probe event."""

    def __init__(self, within: tuple[ast.Expression, ...], per: ast.Expression | None,
                 compiler: ExpressionCompiler) -> None:
        if not within or per is None:
            raise AggregationTimeError("reading an aggregation needs 'within … per …'")
        self.within = [compiler.compile(expr) for expr in within]
        self.per = compiler.compile(per)

    def __call__(self, probe: Event) -> tuple[str, int, int]:
        start, end = within_range(tuple(getter(probe) for getter in self.within))
        per = self.per(probe)
        if per is None:
            raise AggregationTimeError("the 'per' value is null")
        return normalize_duration(per), start, end


def aggregation_finder(aggregation: AggregationRuntime, store: ast.StoreInput,
                       compiler: ExpressionCompiler, width: int, now: Callable[[], int]
                       ) -> Callable[[], list[Event]]:
    """The rows an on-demand query ``from A on … within … per …`` selects from, as current
    events at ``now()``; ``compiler`` reads the aggregation's attributes (``AGG_TIMESTAMP``
    first) by position."""
    bounds = _Range(store.within, store.per, compiler)
    on: Getter = (compiler.compile(store.on, condition=True) if store.on is not None
                  else (lambda event: True))

    def find() -> list[Event]:
        time = now()
        granularity, start, end = bounds((CURRENT, time, (None,) * width))
        events = [(CURRENT, time, row) for row in aggregation.find(granularity, start, end)]
        return [event for event in events if on(event)]
    return find


class AggregationJoinSide:
    """The aggregation side of a join: never triggers; for each event of the other side it
    finds the buckets ``within … per …`` (evaluated on that event) that satisfy ``on``."""

    def __init__(self, aggregation: AggregationRuntime, join: ast.JoinInputStream,
                 compiler: ExpressionCompiler, index: int, width: int) -> None:
        self.aggregation = aggregation
        self.bounds = _Range(join.within, join.per, compiler)
        self.index = index
        self.nulls: Row = (None,) * width

    def find(self, kind: int, ts: int, data: Row, condition: Getter) -> list[Event]:
        """The joined events of the other side's event ``(kind, ts, data)``."""
        probe = (kind, ts, self._pair(data, self.nulls))
        granularity, start, end = self.bounds(probe)
        found = []
        for row in self.aggregation.find(granularity, start, end):
            joined = (kind, ts, self._pair(data, row))
            if condition(joined):
                found.append(joined)
        return found

    def _pair(self, data: Row, row: Row) -> Row:
        return data + row if self.index == 1 else row + data


def aggregation_join_unsupported(kinds: Sequence[str]) -> str | None:
    """Why a join over inputs of these kinds cannot be run, as far as aggregations go."""
    if kinds.count("aggregation") > 1:
        return "a join can read one aggregation only"
    if "aggregation" in kinds and ("table" in kinds or "window" in kinds):
        return "an aggregation joins with a stream only"
    return None
