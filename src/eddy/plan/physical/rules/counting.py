"""Rule 6 — the vectorised counting pattern, one operator per counting query it takes.

Applies to each query left after rules 1–5 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), and the query is a pattern
``[every] e1=S1[f]<n:m> -> e2=S2[c] [within t]`` over one stream or two, selecting ``e1[i]``/``e1[last]`` and ``e2`` attributes into a stream, optionally the only
query of a value partition by plain integral, string or bool attributes of its streams
(:mod:`eddy.engine.operators.counting` builds the kernel and says whether it can: ``c`` may
read ``e1``'s first ``n`` events only, and must split into equality keys, Spark SQL filters
and numpy columns).

Exact because, without ``within``, an instance's matches start at its passing ``S1``
events ``0, n, 2n, …`` (without ``every``: ``0``), each collects up to ``m`` events and
completes at the first later ``S2`` event ``c`` accepts once it has ``n`` — which the
kernel computes per instance in input order, ordering one event's outputs as the
reference's pending list is ordered; a standalone query's outputs depend on the group's
input rows alone. With ``within`` (whose expiry restarts ``every`` and multiplies matches
in the reference) the kernel walks the rows through the reference's lists instead. State: hash buckets of the partition value (a key's instance lives in one
bucket), or one key for an unpartitioned pattern.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang import ast
from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.model import QueryChoice
from eddy.plan.physical.planner import Planning
from eddy.plan.physical.rules.followed_by import instance_key

NAME = "counting"
REASON = "it is a counting pattern: chains of an instance's events"


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the counting operator runs ``info`` reading ``streams``."""
    return planning.facts.counting(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone counting pattern the operator runs, each in its own
    operator."""
    for info in planning.pending:
        if planning.standalone(info) and takes(planning, info, planning.streams_of(info)):
            walked = "" if _within(info) is None else \
                ", walked row by row for its 'within'"
            planning.choose(QueryChoice(info.id, "counting", instance_key(planning, info),
                                        NAME, REASON + walked + planning.through(info)))


def _within(info: QueryInfo) -> ast.TimeConstant | None:
    stream = info.query.input
    return stream.within if isinstance(stream, ast.StateInputStream) else None
