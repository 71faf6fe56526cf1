"""Rule 7 — the vectorised cycle operator, one operator per pattern it takes.

Applies to each query left after rules 1–6 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), and the query is a pattern of plain states under
one ``every``, ``every (e1=S1[f1] -> e2=S2[f2] -> …) [within t]``, each condition reading
its own event only, selecting expressions of the states into a stream, optionally
the only query of a value partition by plain integral, string or bool attributes of its
streams (:mod:`eddy.engine.operators.cycle` builds the kernel and says whether it can).

Exact because such a pattern holds one partial match per instance, which an event moves
one state on when it passes that state's conditions, the last state's event completing it
and starting again (and ``within`` dropping it, before an event too far from its ``e1``,
which may then start it again) — what the kernel runs per instance in input order; a standalone
query's outputs depend on the group's input rows alone. State: each instance's partial
match (its rows), in hash buckets of the partition value, or one key unpartitioned.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.model import QueryChoice
from eddy.plan.physical.planner import Planning
from eddy.plan.physical.rules.followed_by import instance_key

NAME = "cycle"
REASON = "it is 'every (e1 -> e2 …)': one partial match per instance"


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the cycle operator runs ``info`` reading ``streams``."""
    return planning.facts.cycle(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone pattern the cycle operator runs, each in its own operator."""
    for info in planning.pending:
        if planning.standalone(info) and takes(planning, info, planning.streams_of(info)):
            planning.choose(QueryChoice(info.id, "cycle", instance_key(planning, info),
                                        NAME, REASON + planning.through(info)))
