"""The contract between Spark and eddy's per-event runtime.

Spark moves events in columnar micro-batches; the semantics Spark lacks (windows with
current and expired events, chunk-wise aggregation, rate limiting, joins, patterns, tables,
partitions) run in a Python runtime inside a Spark stateful operator. These types are what
crosses that boundary.

Order (DESIGN.md §3): every input event carries ``seq``, its position in the group's input
order. Every output carries the ``seq`` of the input that caused it and an ``order`` tuple
that sorts the outputs of one input the way the reference engine emits them (timer-driven
outputs first, then the input's cascade through the queries, depth first). Sorting outputs
by ``(seq, order)`` therefore reproduces the reference's total order per stream, however
the input was cut into micro-batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class InputEvent:
    """An event entering an execution group: ``data`` is in the stream's attribute order."""

    seq: int
    ts: int
    stream: str
    data: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class OutputEvent:
    """An event a query emitted.

    ``query`` is the emitting query's id; ``target`` the stream (or table, or ``#inner``
    stream) it was inserted into, None for a query without ``insert into`` effects;
    ``expired`` is the flag as the query emitted it (a query callback sees it; a stream
    always receives events as current).
    """

    seq: int
    order: tuple[int, ...]
    ts: int
    query: str
    target: str | None
    data: tuple[Any, ...]
    expired: bool = False


class GroupRuntime(Protocol):
    """The stateful part of one execution group, for one Spark state key.

    ``process`` takes a micro-batch's events sorted by ``seq``; it must behave exactly as if
    the events had arrived one at a time. ``snapshot``/``restore`` move the whole state in
    and out of Spark's state store between micro-batches.
    """

    def process(self, events: Iterable[InputEvent]) -> list[OutputEvent]: ...

    def advance(self, timestamp: int, seq: int) -> list[OutputEvent]: ...

    def snapshot(self) -> bytes: ...

    def restore(self, state: bytes) -> None: ...

    def store_query(self, query_text: str) -> list[tuple[Any, ...]]: ...


def sort_outputs(events: Sequence[OutputEvent]) -> list[OutputEvent]:
    """Outputs in the reference engine's order."""
    return sorted(events, key=lambda e: (e.seq, e.order))
