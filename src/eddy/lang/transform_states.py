"""Map lark's parse tree of a pattern or sequence onto the AST's state elements.

Patterns (``->``) and sequences (``,``) share one element grammar in ``siddhiql.lark``; the
checks that tell them apart — one kind of separator, ``*``/``+``/``?`` counts only in
sequences, ``not S`` without ``for`` only beside ``and`` — are made here, as syntax faults at
the offending text. An unparenthesised chain ``A -> B -> C`` is right-nested
(``Next(A, Next(B, C))``); parentheses keep their grouping.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partialmethod
from typing import Any, Literal, NamedTuple, cast

from lark import Token
from lark.tree import Meta

from eddy.lang import ast
from eddy.lang.errors import Span
from eddy.lang.transform_base import SyntaxRules, meta_span


class _Count(NamedTuple):
    """A count suffix: ``<2:5>``, ``<2:>``, ``<:5>``, ``<3>``, or a sequence's ``*``/``+``/``?``."""

    min_count: int
    max_count: int | None
    notation: Literal["collect", "*", "+", "?"]
    span: Span


@dataclass(frozen=True)
class _State:
    """A pattern/sequence element with the facts its enclosing stream must check."""

    element: ast.StateElement
    separators: frozenset[str] = frozenset()  # '->' and ',' used in parenthesised groups
    starred: tuple[Span, ...] = ()            # where '*', '+' or '?' counts are
    untimed_absent: bool = False              # `not S` without `for`: only in `X and not S`


def _is_absent(element: ast.StateElement) -> bool:
    if isinstance(element, ast.EveryStateElement):
        element = element.element
    return isinstance(element, ast.AbsentStreamStateElement)


class StateRules(SyntaxRules):
    """The grammar rules of pattern and sequence inputs; a base of
    :class:`~eddy.lang.transform.AstBuilder`, which dispatches to them by rule name."""

    def _state(self, item: Any) -> _State:
        """An element as a :class:`_State`; a plain source becomes an unnamed stream state."""
        if isinstance(item, _State):
            return item
        self._check_no_window(item)
        return _State(ast.StreamStateElement(item, None, span=item.span))

    def _check_no_window(self, stream: ast.SingleInputStream) -> None:
        if stream.window is not None:
            self._fault("a pattern or sequence input cannot have a window", stream.window.span)

    def _chain(self, items: list[Any], separator: str) -> _State:
        """``A sep B sep C`` as ``Next(A, Next(B, C))``."""
        states = [self._state(i) for i in items]
        if len(states) > 1 and all(_is_absent(s.element) for s in states):
            span = states[0].element.span.cover(states[-1].element.span)
            self._fault("a chain of only absent streams ('not …') has nothing to wait for", span,
                        "add a stream that must arrive, as in 'e1=A -> not B for 5 sec'")
        result = states[-1].element
        for state in reversed(states[:-1]):
            result = ast.NextStateElement(state.element, result,
                                          span=state.element.span.cover(result.span))
        return _State(result, frozenset({separator}).union(*(s.separators for s in states)),
                      tuple(span for s in states for span in s.starred),
                      any(s.untimed_absent for s in states))

    def named_source(self, meta: Meta, children: list[Any]) -> _State:
        ref, stream = children
        self._check_no_window(stream)
        return _State(ast.StreamStateElement(stream, str(ref), span=meta_span(meta)))

    def collect(self, meta: Meta, children: list[Token]) -> _Count:
        text = "".join(children)
        low, colon, high = text.partition(":")
        if not colon:
            return _Count(int(low), int(low), "collect", meta_span(meta))
        return _Count(int(low or 0), int(high) if high else None, "collect", meta_span(meta))

    def sequence_count(self, meta: Meta, children: list[Token]) -> _Count:
        symbol = cast(Literal["*", "+", "?"], str(children[0]))
        low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[symbol]
        return _Count(low, high, symbol, meta_span(meta))

    def counted_state(self, meta: Meta, children: list[Any]) -> _State:
        state, count = self._state(children[0]), children[1]
        element = cast(ast.StreamStateElement, state.element)
        counted = ast.CountStateElement(element, count.min_count, count.max_count,
                                        count.notation, span=meta_span(meta))
        starred = (count.span,) if count.notation != "collect" else ()
        return _State(counted, starred=starred)

    def every_state(self, meta: Meta, children: list[Any]) -> _State:
        state = self._state(children[0])
        every = ast.EveryStateElement(state.element, span=meta_span(meta))
        return dataclasses.replace(state, element=every)

    def absent_state(self, meta: Meta, children: list[Any]) -> _State:
        self._check_no_window(children[0])
        return _State(ast.AbsentStreamStateElement(children[0], children[1],
                                                   span=meta_span(meta)))

    def absent_operand(self, meta: Meta, children: list[Any]) -> _State:
        self._check_no_window(children[0])
        element = ast.AbsentStreamStateElement(children[0], None, span=meta_span(meta))
        return _State(element, untimed_absent=True)

    def logical_state(self, meta: Meta, children: list[Any]) -> _State:
        op = cast(Literal["and", "or"], children[1].lower())
        left, right = self._state(children[0]), self._state(children[2])
        untimed = [s for s in (left, right) if s.untimed_absent]
        absent = [s for s in (left, right) if isinstance(s.element, ast.AbsentStreamStateElement)]
        if untimed and (op == "or" or len(absent) == 2):
            self._fault(f"'not' in '{op}' needs a waiting time here ('not S for 5 sec')",
                        untimed[0].element.span)
        element = ast.LogicalStateElement(left.element, op, right.element, span=meta_span(meta))
        return _State(element, starred=left.starred + right.starred)

    def _group(self, meta: Meta, children: list[Any], separator: str) -> _State:
        return self._chain(children, separator)

    pattern_group = partialmethod(_group, separator="->")
    sequence_group = partialmethod(_group, separator=",")

    def _state_stream(self, meta: Meta, children: list[Any],
                      kind: Literal["pattern", "sequence"]) -> ast.StateInputStream:
        """A pattern or sequence: its elements, then maybe ``within <time>``."""
        within = children[-1] if isinstance(children[-1], ast.TimeConstant) else None
        items = children[:-1] if within is not None else children
        separator = "->" if kind == "pattern" else ","
        state = self._chain(items, separator)
        if len(state.separators) > 1:
            self._fault(f"a {kind} separates its elements with '{separator}' only",
                        meta_span(meta))
        if kind == "pattern":
            for span in state.starred:
                self._fault("'*', '+' and '?' are for sequences; a pattern counts with <n:m>",
                            span)
        if state.untimed_absent:
            self._fault("'not S' needs a waiting time here ('not S for 5 sec')",
                        state.element.span)
        return ast.StateInputStream(kind, state.element, within, span=meta_span(meta))

    pattern_stream = partialmethod(_state_stream, kind="pattern")
    sequence_stream = partialmethod(_state_stream, kind="sequence")
