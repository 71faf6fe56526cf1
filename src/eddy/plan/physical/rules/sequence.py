"""Rule 5 — the vectorised sequence operator, one operator per sequence query it takes.

Applies to each query left after rules 1–4 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), and the query is a sequence of plain states
``[every] e1=S1[f1], e2=S2[f2], …, en=Sn[fn] within t`` (``every`` on the first state only,
no counting, logical or absent state) selecting expressions of the states into a stream,
optionally the only query of a value partition by plain integral, string or bool attributes
of its streams (:mod:`eddy.engine.operators.sequence` builds the kernel and says whether it
can: the conditions that read earlier states must compile to numpy columns, the rest to
Spark SQL).

Exact because in a sequence every event of an instance resets every state, so a match is
``n`` consecutive events of its instance, each passing its state's conditions, within ``t``
of the first — which the kernel tests per instance in input order; a standalone query's
outputs depend on the group's input rows alone. State: the last ``n-1`` events of each
instance, in hash buckets of the partition value (a key's instance lives in one bucket), or
one key for an unpartitioned sequence.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.model import QueryChoice
from eddy.plan.physical.planner import Planning
from eddy.plan.physical.rules.followed_by import instance_key

NAME = "sequence"
REASON = "it is a sequence of plain states: runs of consecutive events of an instance"


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the sequence operator runs ``info`` reading ``streams``."""
    return planning.facts.sequence(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone sequence query the operator runs, each in its own operator."""
    for info in planning.pending:
        if planning.standalone(info) and takes(planning, info, planning.streams_of(info)):
            planning.choose(QueryChoice(info.id, "sequence", instance_key(planning, info),
                                        NAME, REASON + planning.through(info)))
