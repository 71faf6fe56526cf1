"""Joins: ``from L[…]#window.x(…) [unidirectional] join R#window.y(…) on cond select …``.

This is the reference's ``JoinProcessor`` pair per side. Each side runs its stream handlers,
then its window (a side without one holds nothing: the reference's ``EmptyWindowProcessor``
passes each event on, followed by its expired copy when the query outputs expired events,
and a reset); every event the window emits, expired ones included, is then joined with what
the *other* side's window holds at that moment:

- a match gives one event per matching row, with the triggering event's kind and timestamp;
- no match gives, for an outer side (``left outer`` for the left, ``right outer`` for the
  right, ``full outer`` for both), one event with nulls for the other side;
- a reset event resets the aggregates (it joins with nothing).

A side triggers unless it is a table, or the other side is ``unidirectional``. The matches
of one triggering event form one selector chunk (so an aggregate without ``group by`` emits
the chunk's last row); everything one arrival produced then reaches the rate limiter and the
output together. Joined events carry both sides' attributes side by side (left first), which
is the data every compiled expression of the query reads.

A side may also be a named window (probed through its window, fed by the window's output) or
a table (probed with its ``on`` condition, never triggering); filters written on either are
dropped, as the reference replaces their processor chain. In a self join (``from S as a
join S as b``) the left side processes each event before the right one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import Scope, Source
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.runtime.aggregation.retrieval import (
    AggregationJoinSide,
    aggregation_join_unsupported,
)
from eddy.runtime.aggregation.runtime import AggregationRuntime
from eddy.runtime.context import Context, Path
from eddy.runtime.events import EXPIRED, RESET, TIMER, Event
from eddy.runtime.expressions import CompileError, ExpressionCompiler
from eddy.runtime.join_window import ProbeIndex, findable, window_contents
from eddy.runtime.junction import NamedWindow
from eddy.runtime.pattern.index import conjuncts
from eddy.runtime.query import QueryRuntime, Stage
from eddy.runtime.query_builder import (
    STREAM_FUNCTIONS,
    QueryBuilder,
    SchedulerIndex,
    UnsupportedQuery,
    _combine_mode,
    uses_scheduler,
)
from eddy.runtime.ratelimit_snapshot import output_event_type, snapshot_conflict
from eddy.runtime.selector import Frame, Selector
from eddy.runtime.table import Condition, Table
from eddy.runtime.table_query import TableExpressions
from eddy.runtime.windows import Window, WindowArgs, window_class

Getter = Callable[[Any], Any]
Receiver = Callable[[list[Event], Path], None]

__all__ = ["JoinQueryRuntime", "build_join", "join_unsupported_reason"]


def join_unsupported_reason(info: QueryInfo) -> str | None:
    """Why the runtime cannot run the join ``info``, or None if it can."""
    join = info.query.input
    assert isinstance(join, ast.JoinInputStream)
    kinds = [source.kind for source in info.scope.sources]
    aggregation_reason = aggregation_join_unsupported(kinds)
    if aggregation_reason is not None:
        return aggregation_reason
    if kinds == ["table", "table"]:
        return "both inputs of the join are tables; one side must be a stream or a window"
    for side in (join.left, join.right):
        seen_window = False
        for handler in side.handlers:
            if seen_window:
                return (f"'{side.reference}' has a handler after its window; the reference "
                        "cannot join it either")
            if isinstance(handler, ast.Window):
                cls = window_class(handler.namespace, handler.name)
                if cls is None:
                    return f"window '{handler.name}' has no eddy implementation"
                if cls.__name__ == "CronWindow":
                    return "a cron window cannot be joined (the reference cannot find in it)"
                seen_window = True
            elif isinstance(handler, ast.StreamFunction) and (
                    handler.namespace is not None or handler.name not in STREAM_FUNCTIONS):
                return f"stream function '{handler.name}' has no eddy implementation"
    if info.target_kind not in ("stream", "window", "return", "table", "inner"):
        return f"inserting into a {info.target_kind} is not supported by this runtime yet"
    return snapshot_conflict(info.query)


class JoinSide:
    """One input of a join: its handlers, its window, and what the other side probes."""

    def __init__(self, index: int, stream: ast.SingleInputStream, source: Source) -> None:
        self.index = index
        self.name = stream.key
        self.source = source
        self.width = len(source.attributes)
        self.pre: list[Stage] = []
        self.window: Window | None = None
        self.named: NamedWindow | None = None
        self.table: Table | None = None
        self.table_condition: Condition | None = None
        self.aggregation: AggregationJoinSide | None = None
        self.triggers = False
        self.outer = False
        self.nulls: tuple[Any, ...] = (None,) * self.width
        self.probe: tuple[int, int] | None = None
        """(own position, other side's position) of an equality of the ``on`` condition:
        an arriving event only tries the other side's events with its value there."""
        self.probe_index: ProbeIndex | None = None  # the side's window by its probe value

    @property
    def subscribes(self) -> bool:
        """Whether events reach this side (everything but a table or an aggregation)."""
        return self.table is None and self.aggregation is None

    def contents(self) -> Iterable[Any]:
        """The data of the events this side holds for the other side to find."""
        if self.window is not None:
            return window_contents(self.window)
        if self.named is not None:
            return window_contents(self.named.window)
        return ()


class JoinQueryRuntime:
    """A join query: two :class:`JoinSide` in front of a :class:`QueryRuntime`'s tail."""

    def __init__(self, query: QueryRuntime, left: JoinSide, right: JoinSide,
                 condition: Getter, expects_expired: bool) -> None:
        self.id = query.id
        self.query = query
        self.sides = (left, right)
        self.condition = condition
        self.expects_expired = expects_expired
        self.context = query.context
        for side in self.sides:
            if side.window is not None and side.window.scheduler is not None:
                side.window.scheduler.target = self._timer(side)

    # -- wiring ------------------------------------------------------------------------------
    def inputs(self) -> list[tuple[str, Receiver]]:
        """``(stream, receiver)`` for each stream this join reads; a self join reads its
        stream once, left side first."""
        left, right = self.sides
        if left.subscribes and right.subscribes and left.name == right.name:
            return [(left.name, self.receive_both)]
        return [(side.name, self._receiver(side)) for side in self.sides if side.subscribes]

    def windows(self) -> list[Window]:
        """The windows this join owns (not named windows), for partition-shared fields."""
        return [side.window for side in self.sides if side.window is not None]

    def _receiver(self, side: JoinSide) -> Receiver:
        return lambda chunk, path: self.receive(side, chunk, path)

    def _timer(self, side: JoinSide) -> Callable[[int, Path], None]:
        def fire(time: int, path: Path) -> None:
            assert side.window is not None
            self._join(side, side.window.process([(TIMER, time, None)]), path, 0)
        return fire

    # -- processing --------------------------------------------------------------------------
    def receive_both(self, chunk: list[Event], path: Path) -> None:
        """A self join's input (``MultiProcessStreamReceiver``): event by event, the left
        side and then the right one."""
        for i, event in enumerate(chunk):
            self.receive(self.sides[0], [event], path, 2 * i)
            self.receive(self.sides[1], [event], path, 2 * i + 1)

    def receive(self, side: JoinSide, chunk: list[Event], path: Path, emission: int = 0) -> None:
        """A chunk arriving on ``side``: handlers, window, then the join."""
        for stage in side.pre:
            chunk = stage.apply(chunk)
            if not chunk:
                return
        if side.window is not None:
            outs = side.window.process(chunk)
            if side.probe_index is not None:
                side.probe_index.added(chunk)
        elif side.named is not None:
            outs = [chunk]
        else:
            outs = self._pass_through(chunk)
        self._join(side, outs, path, emission)

    def _pass_through(self, chunk: list[Event]) -> list[list[Event]]:
        """``EmptyWindowProcessor``: each event, its expired copy, a reset."""
        now = self.context.now
        outs = []
        for event in chunk:
            out = [event]
            if self.expects_expired:
                out.append((EXPIRED, now, event[2]))
            out.append((RESET, now, event[2]))
            outs.append(out)
        return outs

    def _join(self, side: JoinSide, outs: list[list[Event]], path: Path, emission: int) -> None:
        if not side.triggers:
            return
        other = self.sides[1 - side.index]
        pieces: list[list[Event]] = []
        for chunk in outs:
            for event in chunk:
                kind = event[0]
                if kind == TIMER:
                    continue
                if kind == RESET:
                    pieces.append([(RESET, event[1], self._pair(side, event[2], other.nulls))])
                    continue
                found = self._find(side, other, event)
                if found:
                    pieces.append(found)
                elif side.outer:
                    pieces.append([(kind, event[1], self._pair(side, event[2], other.nulls))])
        if pieces:
            self.query.select_and_emit_together(pieces, path, emission)

    @staticmethod
    def _pair(side: JoinSide, data: tuple[Any, ...], other: tuple[Any, ...]) -> tuple[Any, ...]:
        return data + other if side.index == 0 else other + data

    def _find(self, side: JoinSide, other: JoinSide, event: Event) -> list[Event]:
        kind, ts, data = event
        if other.aggregation is not None:
            return other.aggregation.find(kind, ts, data, self.condition)
        if other.table is not None:
            assert other.table_condition is not None
            rows = other.table.find(other.table_condition, (data, ts))
            return [(kind, ts, self._pair(side, data, row)) for row in rows]
        condition = self.condition
        found: list[Event] = []
        probe = side.probe
        contents: Iterable[Any]
        if probe is None:
            contents = other.contents()
        else:
            # A candidate whose value differs fails the ``on`` condition's ``==`` conjunct,
            # so the full condition need not run for it; the rest keep the window's order.
            key = data[probe[0]]
            if key is None:
                return found
            if other.probe_index is not None:
                contents = other.probe_index.find(key)
            else:
                at = probe[1]
                contents = [candidate for candidate in other.contents() if candidate[at] == key]
        for candidate in contents:
            joined = (kind, ts, self._pair(side, data, candidate))
            if condition(joined):
                found.append(joined)
        return found

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        return {"query": self.query.get_state(),
                "windows": [s.window.get_state() if s.window is not None else None
                            for s in self.sides]}

    def set_state(self, state: dict[str, Any]) -> None:
        self.query.set_state(state["query"])
        for side, window_state in zip(self.sides, state["windows"]):
            if side.window is not None:
                side.window.set_state(window_state)
            if side.probe_index is not None:
                side.probe_index.valid = False


class JoinQueryBuilder(QueryBuilder):
    """Builds a join query, reusing the single-stream builder's selection and rate limiting
    over the joined data (left attributes, then right ones)."""

    def __init__(self, info: QueryInfo, analyzed: AnalyzedApp, context: Context,
                 scheduler_index: SchedulerIndex, compiler: Callable[..., ExpressionCompiler],
                 tables: Mapping[str, Table], windows: Mapping[str, NamedWindow],
                 aggregations: Mapping[str, AggregationRuntime] | None = None) -> None:
        join = info.query.input
        assert isinstance(join, ast.JoinInputStream)
        # Not QueryBuilder.__init__, which expects a single input: the same attributes,
        # set for a pair of inputs.
        self.info = info
        self.analyzed = analyzed
        self.context = context
        self.scheduler_index = scheduler_index
        self.make_compiler = compiler
        self.tables = tables
        self.named_windows = windows
        self.aggregations = aggregations or {}
        self.join = join
        self.sources = info.scope.sources
        self.offsets = (0, len(self.sources[0].attributes))
        self.positions = {}
        for side, source in enumerate(self.sources):
            for i, attribute in enumerate(source.attributes):
                self.positions.setdefault(attribute.name, self.offsets[side] + i)
        self.expects_expired = output_event_type(info.query) != "current"
        self.group_by = bool(info.query.selector.group_by)
        self.frame = Frame()

    # -- positions ---------------------------------------------------------------------------
    def _side_of(self, source: Source) -> int:
        for i, candidate in enumerate(self.sources):
            if candidate is source:
                return i
        return self.sources.index(source)

    def position_of(self, var: ast.Variable) -> int:
        resolved = self.info.scope.resolve(var)
        side = self._side_of(resolved.source)
        return self.offsets[side] + _attribute_index(resolved.source, resolved.attribute.name)

    def _local_position(self, side: int) -> Callable[[ast.Variable], int]:
        source = self.sources[side]
        scope = self.info.scope.with_current(source)

        def position(var: ast.Variable) -> int:
            resolved = scope.resolve(var)
            if resolved.source is not source and resolved.source != source:
                raise UnsupportedQuery(self.info.id, f"'{var.attribute}' reads the other side "
                                       "of the join in a handler of this side")
            return _attribute_index(source, resolved.attribute.name)
        return position

    # -- building ----------------------------------------------------------------------------
    def build_join(self) -> JoinQueryRuntime:
        join = self.join
        sides = [self._side(0, join.left), self._side(1, join.right)]
        for side, is_outer in zip(sides, join.outer_sides):
            side.outer = is_outer
        sides[0].triggers = sides[0].subscribes and join.unidirectional != "right"
        sides[1].triggers = sides[1].subscribes and join.unidirectional != "left"
        flat = self.make_compiler(self.analyzed.type_of, self.position_of, self.context)
        condition: Getter = (flat.compile(join.on, condition=True) if join.on is not None
                             else (lambda event: True))
        if join.on is not None:
            self._set_probes(join.on, sides)
        for side in sides:
            if side.table is not None:
                other = sides[1 - side.index]
                expressions = TableExpressions(
                    side.table, Scope(self.info.scope.sources), flat,
                    self._local_position(other.index), self.analyzed.type_of)
                side.table_condition = expressions.condition(
                    join.on, getattr(side.table, "primary_key", ()))
        mode = "BATCH"
        for side in sides:
            if side.window is not None:
                mode = _combine_mode(mode, side.window.processing_mode)
        rate = self.info.query.output_rate
        batching = not (rate is not None and rate.unit == "snapshot")
        selector = Selector(self._selector_plan(mode == "SLIDE" or self.expects_expired,
                                                batching), self.frame)
        windowed = any(s.window is not None or s.named is not None for s in sides)
        limiter = self._limiter(windowed, selector.plan)
        target = self.info.target if self.info.target_kind in ("stream", "window") else None
        query = QueryRuntime(self.info.id, self.info.index, self.context, [], None, [],
                             selector, limiter, target)
        return JoinQueryRuntime(query, sides[0], sides[1], condition, self.expects_expired)

    def _set_probes(self, on: ast.Expression, sides: list[JoinSide]) -> None:
        """Finds a conjunct ``a == b`` of ``on`` with ``a`` an attribute of one side and
        ``b`` of the other, both integral, or both strings or bools (where Python's ``==``
        is Siddhi's; floating values are left to the condition because of NaN), and sets
        each side's :attr:`JoinSide.probe` from it."""
        scope = self.info.scope
        for part in conjuncts(on):
            if not (isinstance(part, ast.BinaryOperation) and part.op == "=="
                    and isinstance(part.left, ast.Variable)
                    and isinstance(part.right, ast.Variable)):
                continue
            left, right = scope.resolve(part.left), scope.resolve(part.right)
            types = {left.type, right.type}
            if not (types <= {AttrType.INT, AttrType.LONG} or types == {AttrType.STRING}
                    or types == {AttrType.BOOL}):
                continue
            left_side, right_side = self._side_of(left.source), self._side_of(right.source)
            if left_side == right_side:
                continue
            positions = {left_side: _attribute_index(left.source, left.attribute.name),
                         right_side: _attribute_index(right.source, right.attribute.name)}
            for side in sides:
                side.probe = (positions[side.index], positions[1 - side.index])
                if side.window is not None and ProbeIndex.supports(side.window):
                    side.probe_index = ProbeIndex(side.window, positions[side.index])
            return

    def _side(self, index: int, stream: ast.SingleInputStream) -> JoinSide:
        source = self.sources[index]
        side = JoinSide(index, stream, source)
        if source.kind == "table":
            side.table = self.tables[source.stream]
            return side
        if source.kind == "aggregation":
            flat = self.make_compiler(self.analyzed.type_of, self.position_of, self.context)
            side.aggregation = AggregationJoinSide(self.aggregations[source.stream], self.join,
                                                   flat, index, side.width)
            return side
        if source.kind == "window":
            # The reference replaces the side's processor chain with the named window's
            # finder, so a filter written on a named window side is dropped (as on a table).
            side.named = self.named_windows[source.stream]
            return side
        local = self.make_compiler(self.analyzed.type_of, self._local_position(index),
                                   self.context)
        width = side.width - sum(_added_width(h) for h in stream.handlers)
        for handler in stream.handlers:
            if isinstance(handler, ast.Window):
                side.window = self._side_window(index, handler, local, width)
            elif isinstance(handler, ast.Filter):
                side.pre.append(_filter(local.compile(handler.expression, condition=True)))
            else:
                side.pre.append(self._stream_function(handler, local))
                width += _added_width(handler)
        return side

    def _side_window(self, index: int, handler: ast.Window, compiler: ExpressionCompiler,
                     width: int) -> Window:
        cls = window_class(handler.namespace, handler.name)
        assert cls is not None
        source = self.sources[index]
        args = WindowArgs(handler, self.analyzed.type_of, self._local_position(index),
                          compiler.compile, [a.type for a in source.attributes[:width]])
        try:
            window = cls(self.context, args, self.expects_expired, True)
        except (ValueError, TypeError) as error:
            raise UnsupportedQuery(self.info.id, str(error)) from error
        if not findable(window):
            raise UnsupportedQuery(self.info.id, f"a join cannot find in window "
                                   f"'{handler.name}'")
        if cls.scheduling:
            window.scheduler = self.context.scheduler(self._scheduler_index(index),
                                                      self.info.id)
        bind = getattr(window, "bind", None)
        if bind is not None:
            try:
                bind(source.stream, source.refs, tuple(source.attributes[:width]))
            except ValueError as error:
                raise UnsupportedQuery(self.info.id, str(error)) from error
        return window

    def _scheduler_index(self, side: int) -> int:
        """The scheduler of a side's window, as ``scheduler_order`` names it: the query's
        first scheduling window gets ``window:<id>``, a second one ``window:<id>:<index>``."""
        key = f"window:{self.info.id}"
        left = self.join.left.window
        if side == 0 or left is None or not uses_scheduler(left):
            return self.scheduler_index(key)
        return self.scheduler_index(f"{key}:{self.scheduler_index(key) + 1}")

def _filter(condition: Getter) -> Stage:
    from eddy.runtime.query import FilterStage

    return FilterStage(condition)


def _attribute_index(source: Source, name: str) -> int:
    for i, attribute in enumerate(source.attributes):
        if attribute.name == name:
            return i
    raise KeyError(name)


def _added_width(handler: ast.StreamHandler) -> int:
    if isinstance(handler, ast.StreamFunction) and handler.name == "pol2Cart":
        return 3 if len(handler.args) == 3 else 2
    return 0


def build_join(info: QueryInfo, analyzed: AnalyzedApp, context: Context,
               scheduler_index: SchedulerIndex, compiler: Callable[..., ExpressionCompiler],
               tables: Mapping[str, Table], windows: Mapping[str, NamedWindow],
               aggregations: Mapping[str, AggregationRuntime] | None = None
               ) -> JoinQueryRuntime:
    """The runtime of a supported join query (see :func:`join_unsupported_reason`)."""
    reason = join_unsupported_reason(info)
    if reason is not None:
        raise UnsupportedQuery(info.id, reason)
    try:
        return JoinQueryBuilder(info, analyzed, context, scheduler_index, compiler, tables,
                                windows, aggregations).build_join()
    except CompileError as error:
        raise UnsupportedQuery(info.id, str(error)) from error

