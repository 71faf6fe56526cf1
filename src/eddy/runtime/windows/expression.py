"""``#window.expression('<condition>')`` and ``#window.expressionBatch('<condition>' …)``.

The condition is Siddhi text parsed when the app is built (or whenever a non-constant
expression argument changes). It sees three events: the one being judged (bare names),
``first`` and ``last`` (``first.price``, ``eventTimestamp(last)``), and may aggregate
(``count() <= 20``, ``sum(v) < 100``). Its aggregates run as the reference runs them: a
current evaluation adds, an expired one removes, a reset clears; ``and``/``or`` short-circuit,
so an aggregate on the right of a failed ``and`` does not see the event.

- ``expression`` slides: each event joins; while the condition fails, the oldest events
  expire (stamped with the clock), until the condition holds again.
- ``expressionBatch`` collects until the condition fails, then emits the batch (stamped with
  the clock), starting the next batch with the triggering event or, with
  ``include.triggering.event``, closing the batch with it.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.errors import SiddhiAppError
from eddy.lang.scope import Scope, SemanticError, Source
from eddy.lang.typecheck import ExpressionTyper
from eddy.runtime.events import CURRENT, EXPIRED, RESET, Event
from eddy.runtime.expressions import ExpressionCompiler
from eddy.runtime.selector import Frame
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs

_TS = "\0timestamp"  # stands for eventTimestamp(first) and friends while typing


def _rewrite(expr: ast.Expression) -> ast.Expression:
    """``eventTimestamp(first)`` -> a variable ``first.<ts>`` the scope can type."""
    if isinstance(expr, ast.FunctionCall):
        if (expr.name == "eventTimestamp" and expr.namespace is None and len(expr.args) == 1
                and isinstance(expr.args[0], ast.Variable)):
            ref = expr.args[0]
            return ast.Variable(_TS, stream=ref.attribute if ref.stream is None else ref.stream)
        return dataclasses.replace(expr, args=tuple(_rewrite(a) for a in expr.args))
    if isinstance(expr, ast.BinaryOperation):
        return dataclasses.replace(expr, left=_rewrite(expr.left), right=_rewrite(expr.right))
    if isinstance(expr, (ast.Not, ast.Negate, ast.IsNull)):
        return dataclasses.replace(expr, expression=_rewrite(expr.expression))
    return expr


class ConditionCompiler:
    """Parses and compiles a window condition over ``(kind, ts, data, first, last)``."""

    def __init__(self, stream: str, refs: frozenset[str], attributes: tuple[Attribute, ...],
                 window: Window) -> None:
        self.window = window
        self.refs = refs
        attrs = attributes + (Attribute(_TS, AttrType.LONG),)
        self.positions = {a.name: i for i, a in enumerate(attributes)}
        main = Source(stream, "stream", attrs, refs)
        self.scope = Scope((main, Source("first", "stream", attrs, frozenset({"first"})),
                            Source("last", "stream", attrs, frozenset({"last"}))), current=main)
        self._kept: list[ast.Expression] = []

    def compile(self, text: str, frame: Frame) -> tuple[Callable[[Any], Any], int]:
        """The condition for ``text`` and how many aggregate tables it uses."""
        from eddy.lang.parser import parse_expression

        typer = ExpressionTyper({}, lambda name: None)
        try:
            expr = _rewrite(parse_expression(text))
            typer.expect_bool(expr, self.scope, "a window expression", aggregates=True)
        except (SiddhiAppError, SemanticError) as error:
            raise ValueError(f"window condition '{text}': {error}") from None
        self._kept.append(expr)  # the types are indexed by node id: keep the nodes alive
        compiler = ExpressionCompiler(lambda e: typer.types[id(e)], lambda v: 0,
                                      self.window.context, frame, track_future=True)
        condition = compiler.compile(expr, condition=True, resolve=self._resolve)
        return condition, len(compiler.slots)

    def _resolve(self, var: ast.Variable) -> Callable[[Any], Any]:
        slot = 2
        if var.stream in ("first", "last") and var.stream not in self.refs:
            slot = 3 if var.stream == "first" else 4
        if var.attribute == _TS:
            if slot == 2:
                return lambda ctx: ctx[1]
            return lambda ctx: ctx[slot][1]
        position = self.positions[var.attribute]
        if slot == 2:
            return lambda ctx: ctx[2][position]
        return lambda ctx: ctx[slot][2][position]


class ExpressionState(Slots):
    __slots__ = ("current", "expired", "aggs", "text")

    def __init__(self, text: str | None) -> None:
        self.current: deque[Event] = deque()
        self.expired: deque[Event] = deque()
        self.aggs: list[dict[Any, list[Any]]] = []
        self.text = text


class _ConditionWindow(Window):
    """Shared set-up: the condition text (constant or read from each event)."""

    condition_compiler: ConditionCompiler

    def configure(self, args: WindowArgs) -> None:
        self.frame = Frame()
        self.text_getter: Callable[[Event], Any] | None = None
        self.constant_text: str | None = None
        if args.is_constant(0):
            self.constant_text = str(args.constant(0))
        else:
            self.text_getter = args.getter(0)
        self._compiled: dict[str, tuple[Callable[[Any], Any], int]] = {}

    def bind(self, stream: str, refs: frozenset[str], attributes: tuple[Attribute, ...]) -> None:
        """Called by the query builder with the input's schema; compiles a constant condition."""
        self.condition_compiler = ConditionCompiler(stream, refs, attributes, self)
        if self.constant_text is not None:
            self.state.aggs = [{} for _ in range(self._condition(self.constant_text)[1])]

    def fresh_state(self) -> ExpressionState:
        return ExpressionState(self.constant_text)

    def _condition(self, text: str) -> tuple[Callable[[Any], Any], int]:
        found = self._compiled.get(text)
        if found is None:
            found = self._compiled[text] = self.condition_compiler.compile(text, self.frame)
        return found

    def evaluate(self, kind: int, event: Event, first: Event, last: Event) -> bool:
        state: ExpressionState = self.state
        assert state.text is not None
        self.frame.aggs = state.aggs
        self.frame.key = None
        return bool(self._condition(state.text)[0]((kind, event[1], event[2], first, last)))

    def _changed(self, event: Event) -> bool:
        """Reads a non-constant condition from ``event``; True if it changed."""
        if self.text_getter is None:
            return False
        state: ExpressionState = self.state
        text = str(self.text_getter(event))
        if text == state.text:
            return False
        state.text = text
        state.aggs = [{} for _ in range(self._condition(text)[1])]  # a new executor
        return True


class ExpressionWindow(_ConditionWindow):
    """``#window.expression(condition)``: a sliding window kept while the condition holds."""

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: ExpressionState = self.state
        now = self.context.now
        out: Chunk = []
        for event in chunk:
            if self._changed(event):
                old = list(state.current)
                state.current.clear()
                for queued in old:
                    self._slide(out, queued, now)
            self._slide(out, (EXPIRED, event[1], event[2]), now)
            out.append(event)
        return [out]

    def _slide(self, out: Chunk, added: Event, now: int) -> None:
        queue: deque[Event] = self.state.current
        queue.append(added)
        if self.evaluate(CURRENT, added, queue[0], added):
            return
        while queue:
            gone = queue.popleft()
            stamped = (EXPIRED, now, gone[2])
            out.append(stamped)
            first = queue[0] if queue else stamped
            if self.evaluate(EXPIRED, stamped, first, added):
                break


class ExpressionBatchWindow(_ConditionWindow):
    """``#window.expressionBatch(condition [, include.triggering.event
    [, stream.current.event]])``."""

    mode = "BATCH"

    def configure(self, args: WindowArgs) -> None:
        super().configure(args)
        self.include_constant = False
        self.include_getter: Callable[[Event], Any] | None = None
        self.stream_inputs = False
        if len(args) > 1:
            if args.is_constant(1):
                self.include_constant = bool(args.constant(1))
            else:
                self.include_getter = args.getter(1)
            if len(args) > 2 and args.is_constant(2):
                self.stream_inputs = bool(args.constant(2))

    def _include(self, event: Event) -> bool:
        if self.include_getter is not None and self.include_getter(event):
            return True
        return self.include_constant

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: ExpressionState = self.state
        now = self.context.now
        chunks: list[Chunk] = []
        for event in chunk:
            if self._changed(event):
                if not self.stream_inputs:
                    old = list(state.current)
                    state.current.clear()
                    for queued in old:
                        self._batch(queued, now, chunks)
                else:
                    old = list(state.expired)
                    state.expired.clear()
                    for queued in old:
                        self._stream(queued, now, chunks, output=False)
            if self.stream_inputs:
                self._stream(event, now, chunks, output=True)
            else:
                self._batch(event, now, chunks)
        return chunks

    def _restart(self, event: Event, first: Event) -> None:
        self.evaluate(RESET, event, first, event)
        self.evaluate(CURRENT, event, first, event)

    def _batch(self, event: Event, now: int, chunks: list[Chunk]) -> None:
        state: ExpressionState = self.state
        first = state.current[0] if state.current else event
        if self.evaluate(CURRENT, event, first, event):
            state.current.append(event)
            return
        self._restart(event, first)
        out: Chunk = [(EXPIRED, now, e[2]) for e in state.expired]
        state.expired.clear()
        if state.current:
            for queued in state.current:
                out.append((CURRENT, now, queued[2]))
                state.expired.append((EXPIRED, now, queued[2]))
            state.current.clear()
            if self._include(event):
                out.append(event)
                state.expired.append((EXPIRED, now, event[2]))
            else:
                state.current.append(event)
        else:
            out.append((EXPIRED, now, event[2]))
            out.append((CURRENT, now, event[2]))
        chunks.append(out)

    def _stream(self, event: Event, now: int, chunks: list[Chunk], output: bool) -> None:
        state: ExpressionState = self.state
        first = state.expired[0] if state.expired else event
        out: Chunk = []
        if output and state.current:
            out.extend(state.current)
            state.current.clear()
        if self.evaluate(CURRENT, event, first, event):
            state.expired.append((EXPIRED, event[1], event[2]))
            if output:
                out.append(event)
                chunks.append(out)
            return
        self._restart(event, first)
        if state.expired:
            stamped = [(EXPIRED, now, e[2]) for e in state.expired]
            again = (EXPIRED, event[1], event[2])
            if self._include(event):
                out.append(event)
                if output:
                    out.extend(stamped)
                    out.append((EXPIRED, now, event[2]))
                else:
                    state.current.extend(stamped)
                    state.current.append(again)
                state.expired.clear()
            else:
                if output:
                    out.extend(stamped)
                else:
                    state.current.extend(stamped)
                out.append(event)
                state.expired.clear()
                state.expired.append(again)
        elif output:
            out.append((EXPIRED, now, event[2]))
            out.append((CURRENT, now, event[2]))
        else:
            state.current.append(event)
        if output:
            chunks.append(out)
