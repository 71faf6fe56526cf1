"""Patterns (``->``) and sequences (``,``) in the per-event runtime, with the Siddhi 5.1
reference's semantics.

``compile`` builds the state machine from the AST, ``processors`` / ``logical`` /
``absent`` are the state processors, ``index`` keys pending matches by their equality
conditions, ``references`` reads values out of matches, ``select`` builds the selector tail
and ``matcher`` runs the query. The group runtime (:mod:`eddy.runtime.group`) uses
the three functions below.
"""

from __future__ import annotations

from collections.abc import Mapping

from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.walk import state_streams
from eddy.runtime.context import Context
from eddy.runtime.expressions import CompileError
from eddy.runtime.pattern.compile import MachineBuilder, absent_scheduler_keys
from eddy.runtime.pattern.matcher import PatternQueryRuntime
from eddy.runtime.pattern.references import PatternExpressions, References
from eddy.runtime.pattern.select import build_limiter, build_selector
from eddy.runtime.query_builder import SchedulerIndex, UnsupportedQuery
from eddy.runtime.ratelimit_snapshot import snapshot_conflict
from eddy.runtime.table import Table

__all__ = ["PatternQueryRuntime", "build_pattern_query", "pattern_scheduler_keys",
           "pattern_unsupported_reason"]


def pattern_unsupported_reason(info: QueryInfo) -> str | None:
    """Why the runtime cannot run pattern/sequence query ``info``, or None if it can."""
    query = info.query
    stream = query.input
    assert isinstance(stream, ast.StateInputStream)
    for state in state_streams(stream.state):
        for handler in state.handlers:
            if not isinstance(handler, ast.Filter):
                return (f"'{handler.name}' in a {stream.kind} state is not supported; "
                        "only filters are")
    if info.target_kind not in ("stream", "window", "return", "table", "inner"):
        return f"inserting into a {info.target_kind} is not supported by this runtime yet"
    return snapshot_conflict(query)


def pattern_scheduler_keys(info: QueryInfo) -> list[str]:
    """The scheduler names a pattern query creates (its absent states'), in creation order."""
    stream = info.query.input
    if not isinstance(stream, ast.StateInputStream):
        return []
    return absent_scheduler_keys(info.id, stream.state)


def build_pattern_query(info: QueryInfo, analyzed: AnalyzedApp, context: Context,
                        scheduler_index: SchedulerIndex,
                        tables: Mapping[str, Table] | None = None) -> PatternQueryRuntime:
    """The runtime of one pattern or sequence query; raises :class:`UnsupportedQuery`.
    ``tables`` are the group's, for ``in T`` conditions."""
    reason = pattern_unsupported_reason(info)
    if reason is not None:
        raise UnsupportedQuery(info.id, reason)
    try:
        references = References(info, analyzed, tables)
        compiler = PatternExpressions(references, context)
        machine = MachineBuilder(info, analyzed, context, scheduler_index, compiler).build()
        selector = build_selector(info, references, context)
        limiter = build_limiter(info, context, scheduler_index, selector)
    except CompileError as error:
        raise UnsupportedQuery(info.id, str(error)) from error
    target = info.target if info.target_kind in ("stream", "window") else None
    return PatternQueryRuntime(info.id, info.index, context, selector, limiter, target, machine,
                               partitioned=info.partition is not None)
