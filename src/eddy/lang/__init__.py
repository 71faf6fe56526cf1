"""SiddhiQL front end: grammar, AST, semantic analysis, errors with positions, formatter.

``check(text)`` is the one call most callers need: parse and analyse, raising
:class:`~eddy.lang.errors.SiddhiAppError` with every fault found. Submodules load on first
use, so importing ``eddy.lang.ast`` alone (as Spark workers do) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eddy.lang.errors import SiddhiAppError

if TYPE_CHECKING:
    from eddy.lang.analyzer import analyze
    from eddy.lang.parser import parse
    from eddy.lang.semantic import AnalyzedApp

__all__ = ["AnalyzedApp", "SiddhiAppError", "analyze", "check", "parse"]

_LAZY = {"analyze": "eddy.lang.analyzer", "parse": "eddy.lang.parser",
         "AnalyzedApp": "eddy.lang.semantic"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'eddy.lang' has no attribute '{name}'")


def check(text: str, filename: str | None = None) -> AnalyzedApp:
    """Parses and analyses an app; raises SiddhiAppError (with ``filename``) on any fault."""
    from eddy.lang.analyzer import analyze
    from eddy.lang.parser import parse

    try:
        return analyze(parse(text, filename), text, filename)
    except SiddhiAppError as error:
        raise error.with_source(text, filename) from None
