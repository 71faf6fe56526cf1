"""Errors raised for a faulty Siddhi app.

There is one exception type at the boundary, :class:`SiddhiAppError`, because a CLI, the REST
API and ``eddy.replay`` all report an app's faults the same way: each fault with its kind,
where it is (1-based line, 0-based column, exclusive end) and a message a person can act on.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

ErrorKind = Literal["syntax", "semantic"]


@dataclass(frozen=True)
class Span:
    """A region of app text: ``line`` is 1-based, ``column`` 0-based, the end is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def cover(self, other: Span) -> Span:
        """The smallest span holding both this span and ``other``."""
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(start[0], start[1], end[0], end[1])


NO_SPAN = Span(0, 0, 0, 0)


@dataclass(frozen=True)
class AppIssue:
    """One fault found in an app."""

    kind: ErrorKind
    message: str
    span: Span
    hint: str | None = None

    @property
    def line(self) -> int:
        """The 1-based line the fault starts on."""
        return self.span.line

    @property
    def column(self) -> int:
        """The 0-based column the fault starts at."""
        return self.span.column


class SiddhiAppError(Exception):
    """A Siddhi app that cannot be deployed; holds every fault found, the first one foremost.

    The attributes ``kind``, ``line``, ``column``, ``end_line``, ``end_column`` and ``message``
    describe the first fault; ``errors`` lists all of them when the parser could recover.
    """

    def __init__(self, issues: Sequence[AppIssue], source: str | None = None,
                 filename: str | None = None) -> None:
        if not issues:
            raise ValueError("SiddhiAppError needs at least one issue")
        self.errors: tuple[AppIssue, ...] = tuple(issues)
        self.source = source
        self.filename = filename
        first = self.errors[0]
        self.kind: ErrorKind = first.kind
        self.message: str = first.message
        self.line: int = first.span.line
        self.column: int = first.span.column
        self.end_line: int = first.span.end_line
        self.end_column: int = first.span.end_column
        self.hint: str | None = first.hint
        super().__init__(self._summary())

    def _summary(self) -> str:
        where = self.filename or "<app>"
        more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
        return f"{where}:{self.line}:{self.column}: {self.kind} error: {self.message}{more}"

    def with_source(self, source: str, filename: str | None = None) -> SiddhiAppError:
        """The same faults, attached to the text (and file name) they were found in."""
        return SiddhiAppError(self.errors, source, filename or self.filename)

    def to_dict(self) -> dict[str, object]:
        """The JSON shape the REST API and ``eddy validate --json`` return."""
        return {
            "kind": self.kind, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column, "message": self.message,
            "errors": [
                {"kind": e.kind, "line": e.span.line, "column": e.span.column,
                 "end_line": e.span.end_line, "end_column": e.span.end_column,
                 "message": e.message, **({"hint": e.hint} if e.hint else {})}
                for e in self.errors
            ],
        }

    def render(self) -> str:
        """Compiler-style text: ``file:line:col: error: msg``, the source line and a caret."""
        return "\n".join(render_issue(e, self.source, self.filename) for e in self.errors)


def render_issue(issue: AppIssue, source: str | None, filename: str | None) -> str:
    """One fault as ``file:line:col: error: message`` with the line, carets and any hint."""
    where = filename or "<app>"
    out = [f"{where}:{issue.span.line}:{issue.span.column}: error: {issue.message}"]
    lines = source.splitlines() if source is not None else []
    if 1 <= issue.span.line <= len(lines):
        text = lines[issue.span.line - 1].expandtabs(1)
        start = min(issue.span.column, len(text))
        if issue.span.end_line == issue.span.line and issue.span.end_column > start:
            width = min(issue.span.end_column, len(text)) - start
        else:
            width = len(text) - start
        out.append(f"  {text}")
        out.append("  " + " " * start + "^" * max(1, width))
    if issue.hint:
        out.append(f"  hint: {issue.hint}")
    return "\n".join(out)


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The defined name closest to a misspelt ``name``, if one is close enough to suggest."""
    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    if name.lower() in lowered:
        return lowered[name.lower()]
    match = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return match[0] if match else None
