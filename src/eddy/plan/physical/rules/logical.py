"""Rule 8 — the vectorised logical operator, one operator per pattern it takes.

Applies to each query left after rules 1–7 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), and the query is a pattern whose first state is
logical, ``every (e1=S1[f1] and|or e2=S2[f2]) -> e3=S3[c]`` over three streams, ``f1`` and
``f2`` reading their own event only, without ``within``, selecting expressions of the states
into a stream, optionally the only query of a value partition by plain integral, string or
bool attributes of its streams (:mod:`eddy.engine.operators.logical` builds the kernel and
says whether it can).

Exact because the logical state holds one match per instance, which its sides fill as a
small automaton (``or``: each passing event completes one; ``and``: a held event of one
side, completed by the next passing event of the other), and each completed match waits
for the first later ``S3`` event ``c`` accepts, in the reference's list order — what the
kernel computes per instance in input order; a standalone query's outputs depend on the
group's input rows alone. State: the rows of the waiting matches and the held events, in
hash buckets of the partition value, or one key unpartitioned.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.model import QueryChoice
from eddy.plan.physical.planner import Planning
from eddy.plan.physical.rules.followed_by import instance_key

NAME = "logical"
REASON = "it is 'every (e1 and|or e2) -> e3': one logical match at a time per instance"


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the logical operator runs ``info`` reading ``streams``."""
    return planning.facts.logical(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone pattern the logical operator runs, each in its own operator."""
    for info in planning.pending:
        if planning.standalone(info) and takes(planning, info, planning.streams_of(info)):
            planning.choose(QueryChoice(info.id, "logical", instance_key(planning, info),
                                        NAME, REASON + planning.through(info)))
