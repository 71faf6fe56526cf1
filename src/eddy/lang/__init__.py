"""SiddhiQL front end: grammar, AST, semantic analysis, errors with positions, formatter.

``check(text)`` is the one call most callers need: parse and analyse, raising
:class:`~eddy.lang.errors.SiddhiAppError` with every fault found.
"""

from __future__ import annotations

from eddy.lang.analyzer import analyze
from eddy.lang.errors import SiddhiAppError
from eddy.lang.parser import parse
from eddy.lang.semantic import AnalyzedApp

__all__ = ["AnalyzedApp", "SiddhiAppError", "analyze", "check", "parse"]


def check(text: str, filename: str | None = None) -> AnalyzedApp:
    """Parses and analyses an app; raises SiddhiAppError (with ``filename``) on any fault."""
    try:
        return analyze(parse(text, filename), text, filename)
    except SiddhiAppError as error:
        raise error.with_source(text, filename) from None
