"""What the parse-tree → AST mapping shares: lark positions as spans, and the fault list.

:class:`~eddy.lang.transform.AstBuilder` is assembled from rule sets (the pattern and sequence
rules live in :mod:`eddy.lang.transform_states`); each records the structural faults it finds
through :meth:`SyntaxRules._fault`, so one parse reports all of them.
"""

from __future__ import annotations

from lark import Token
from lark.tree import Meta

from eddy.lang.errors import AppIssue, Span


def meta_span(meta: Meta) -> Span:
    """A lark rule position (1-based columns) as a :class:`Span` (0-based, end exclusive)."""
    return Span(meta.line, meta.column - 1, meta.end_line, meta.end_column - 1)


def token_span(token: Token) -> Span:
    """A lark token position as a :class:`Span`."""
    return Span(token.line or 0, (token.column or 1) - 1, token.end_line or 0,
                (token.end_column or 1) - 1)


class SyntaxRules:
    """Base of the rule sets: ``issues`` collects the faults found while mapping one tree."""

    def __init__(self) -> None:
        self.issues: list[AppIssue] = []

    def _fault(self, message: str, span: Span, hint: str | None = None) -> None:
        self.issues.append(AppIssue("syntax", message, span, hint))
