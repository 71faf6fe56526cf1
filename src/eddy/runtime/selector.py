"""The query selector: projection, aggregation per chunk, group by, having, order/limit/offset.

This is the reference's ``QuerySelector`` and its chunk semantics. Batching is on unless the
query uses ``output snapshot`` (the reference always marks chunks as batches), so:

- with ``group by`` (aggregating or not) only the last event of each group in a chunk is
  emitted, groups in first-appearance order (``processInBatchGroupBy``);
- with an aggregate function and no ``group by`` only the chunk's last event is emitted
  (``processInBatchNoGroupBy``), and ``order by`` is ignored; ``offset``/``limit`` only
  decide whether that one event is emitted at all;
- without either, every event is emitted (``processNoGroupBy``); reset events stay in the
  chunk (rate limiters see them, callbacks drop them) and ``order by`` sorts each run of
  same-kind events separately.

Quirks kept: ``limit`` keeps every expired event when expired events are selected (an
operator-precedence slip in ``limitEventChunk``); ``having`` is never evaluated on reset
events, so aggregates that only ``having`` uses are never reset; the non-batch group-by path
(snapshot rate limiting) applies ``limit`` while collecting and ignores ``order by`` and
``offset``; ``order by`` puts nulls last whatever the direction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from eddy.runtime.events import CURRENT, EXPIRED, RESET, Event, OutEvent, java_compare
from eddy.runtime.java import wrap_int
from eddy.runtime.javahash import java_hash

Projector = Callable[[Event], tuple[Any, ...]]
Condition = Callable[[tuple[Any, ...]], Any]
KeyFn = Callable[[Event], Any]


class Frame:
    """Mutable context the compiled aggregate closures read: the current group's key and
    the aggregate state tables. Not state itself: it points into the selector's state."""

    __slots__ = ("key", "aggs")

    def __init__(self) -> None:
        self.key: Any = None
        self.aggs: list[dict[Any, list[Any]]] = []


@dataclass
class OrderKey:
    """One ``order by`` attribute: its position in the projected row, direction and Siddhi
    type name. The position may be past the visible outputs (see ``SelectorPlan.visible``)."""

    position: int
    ascending: bool
    type_name: str


@dataclass
class SelectorPlan:
    """Everything compiled from a query's selection; no state."""

    project: Projector
    having: Condition | None
    group_key: KeyFn | None
    order_by: list[OrderKey]
    limit: int | None
    offset: int | None
    current_on: bool
    expired_on: bool
    aggregates: bool
    aggregate_slots: int
    batching: bool = True
    aggregate_positions: list[int] = field(default_factory=list)
    # How many projected values are outputs when ``project`` also computes hidden ``order
    # by`` values after them (an input attribute of a join or pattern that is not
    # selected); None when every projected value is an output.
    visible: int | None = None


class Selector:
    """Runs a :class:`SelectorPlan` over chunks; holds the aggregate states."""

    def __init__(self, plan: SelectorPlan, frame: Frame) -> None:
        self.plan = plan
        self.frame = frame
        self.state: list[dict[Any, list[Any]]] = self.fresh_state()
        comparator = _comparator(plan.order_by) if plan.order_by else None
        self._sort_key = cmp_to_key(comparator) if comparator else None
        # The reference's four paths; picked once, so a chunk costs no dispatch.
        self.process: Callable[[list[Event]], list[OutEvent] | None]
        if plan.batching and plan.group_key is not None:
            self.process = self._batch_group_by
        elif plan.batching and plan.aggregates:
            self.process = self._batch_no_group_by
        elif plan.group_key is not None:
            self.process = self._group_by
        else:
            self.process = self._no_group_by
        if plan.visible is not None:
            self.process = _without_hidden(self.process, plan.visible)

    def fresh_state(self) -> list[dict[Any, list[Any]]]:
        return [{} for _ in range(self.plan.aggregate_slots)]

    def get_state(self) -> Any:
        return self.state

    def set_state(self, state: Any) -> None:
        self.state = state

    # -- the four reference paths ----------------------------------------------------------
    def _selected(self, kind: int) -> bool:
        return (kind == CURRENT and self.plan.current_on) or \
            (kind == EXPIRED and self.plan.expired_on)

    def _batch_no_group_by(self, chunk: list[Event]) -> list[OutEvent] | None:
        plan, frame = self.plan, self.frame
        frame.aggs = self.state
        frame.key = None
        project, having = plan.project, plan.having
        current_on, expired_on = plan.current_on, plan.expired_on
        last: OutEvent | None = None
        for event in chunk:
            kind = event[0]
            if kind == CURRENT or kind == EXPIRED:
                out = project(event)
                if having is None or having((kind, event[1], event[2], out)):
                    if (kind == CURRENT and current_on) or (kind == EXPIRED and expired_on):
                        last = (kind, event[1], out, None)
            elif kind == RESET:
                project(event)
        if last is None:
            return None
        if (plan.offset is None or plan.offset == 0) and (plan.limit is None or plan.limit > 0):
            return [last]
        return None

    def _batch_group_by(self, chunk: list[Event]) -> list[OutEvent] | None:
        plan, frame = self.plan, self.frame
        frame.aggs = self.state
        project, having, group_key = plan.project, plan.having, plan.group_key
        assert group_key is not None
        current_on, expired_on = plan.current_on, plan.expired_on
        groups: dict[Any, OutEvent] = {}
        for event in chunk:
            kind = event[0]
            if kind == CURRENT or kind == EXPIRED:
                key = group_key(event)
                frame.key = key
                out = project(event)
                if having is None or having((kind, event[1], event[2], out)):
                    if (kind == CURRENT and current_on) or (kind == EXPIRED and expired_on):
                        groups[key] = (kind, event[1], out, key)
            elif kind == RESET:
                frame.key = None
                project(event)
        if not groups:
            return None
        result = list(groups.values())
        return self._order_offset_limit(result)

    def _no_group_by(self, chunk: list[Event]) -> list[OutEvent] | None:
        plan, frame = self.plan, self.frame
        frame.aggs = self.state
        frame.key = None
        project, having = plan.project, plan.having
        result: list[OutEvent] = []
        for event in chunk:
            kind = event[0]
            if kind == CURRENT or kind == EXPIRED:
                out = project(event)
                if not self._selected(kind):
                    continue
                if having is not None and not having((kind, event[1], event[2], out)):
                    continue
                result.append((kind, event[1], out, None))
            elif kind == RESET:
                result.append((RESET, event[1], project(event) if plan.aggregates else None,
                               None))
        if not result:
            return None
        return self._order_offset_limit(result) or None

    def _group_by(self, chunk: list[Event]) -> list[OutEvent] | None:
        """Non-batch group by (snapshot rate limiting only)."""
        plan, frame = self.plan, self.frame
        frame.aggs = self.state
        project, having, group_key = plan.project, plan.having, plan.group_key
        assert group_key is not None
        result: list[OutEvent] = []
        for event in chunk:
            kind = event[0]
            if kind == CURRENT or kind == EXPIRED:
                key = group_key(event)
                frame.key = key
                out = project(event)
                if self._selected(kind) and (having is None or
                                             having((kind, event[1], event[2], out))):
                    if plan.limit is None or len(result) < plan.limit:
                        result.append((kind, event[1], out, key))
            elif kind == RESET:
                frame.key = None
                project(event)
        return result or None

    # -- order by / offset / limit ---------------------------------------------------------
    def _order_offset_limit(self, events: list[OutEvent]) -> list[OutEvent]:
        plan = self.plan
        if self._sort_key is not None:
            events = _order_runs(events, self._sort_key)
        if plan.offset is not None:
            events = self._apply_offset(events, plan.offset)
        if plan.limit is not None:
            events = self._apply_limit(events, plan.limit)
        return events

    def _apply_offset(self, events: list[OutEvent], offset: int) -> list[OutEvent]:
        """``offsetEventChunk``: drop data events until ``offset`` selected ones are gone."""
        kept: list[OutEvent] = []
        dropped = 0
        done = False
        for event in events:
            kind = event[0]
            if not done and (kind == CURRENT or kind == EXPIRED):
                if offset > dropped:
                    if self._selected(kind):
                        dropped += 1
                    continue
                done = True
            kept.append(event)
        return kept

    def _apply_limit(self, events: list[OutEvent], limit: int) -> list[OutEvent]:
        """``limitEventChunk``, precedence slip included: expired events are always kept
        when selected (and still counted)."""
        plan = self.plan
        kept: list[OutEvent] = []
        count = 0
        for event in events:
            kind = event[0]
            if kind == CURRENT or kind == EXPIRED:
                if (limit > count and kind == CURRENT and plan.current_on) or \
                        (kind == EXPIRED and plan.expired_on):
                    count += 1
                else:
                    continue
            kept.append(event)
        return kept


def _without_hidden(process: Callable[[list[Event]], list[OutEvent] | None],
                    width: int) -> Callable[[list[Event]], list[OutEvent] | None]:
    """``process`` with the hidden ``order by`` values cut off its output rows, once the
    chunk is ordered: the reference sorts the joined events by an input attribute but emits
    only the selected ones."""

    def visible_only(chunk: list[Event]) -> list[OutEvent] | None:
        events = process(chunk)
        if events is None:
            return None
        return [(kind, ts, out[:width] if out is not None else None, key)
                for kind, ts, out, key in events]

    return visible_only


def _order_runs(events: list[OutEvent], sort_key: Any) -> list[OutEvent]:
    """``orderEventChunk``: sort each run of same-kind events on its own (stable)."""
    result: list[OutEvent] = []
    run: list[OutEvent] = []
    run_kind = events[0][0]
    for event in events:
        if event[0] != run_kind:
            run.sort(key=sort_key)
            result.extend(run)
            run = []
            run_kind = event[0]
        run.append(event)
    run.sort(key=sort_key)
    result.extend(run)
    return result


def _comparator(keys: list[OrderKey]) -> Callable[[OutEvent, OutEvent], int]:
    """``OrderByEventComparator``: non-null before null in both directions; OBJECT values
    compare by hash code, as the reference does."""

    def compare(a: OutEvent, b: OutEvent) -> int:
        out_a, out_b = a[2], b[2]
        for key in keys:
            v1, v2 = out_a[key.position], out_b[key.position]
            if v1 is not None and v2 is not None:
                if key.type_name == "OBJECT":
                    diff = wrap_int(java_hash(v1) - java_hash(v2))  # an int subtraction
                    result = (diff > 0) - (diff < 0)
                else:
                    result = java_compare(v1, v2)
                if not key.ascending:
                    result = -result
                if result != 0:
                    return result
            elif v1 is not None:
                return -1
            elif v2 is not None:
                return 1
        return 0

    return compare
