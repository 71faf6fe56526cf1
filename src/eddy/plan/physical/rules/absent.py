"""Rule 9 — eddy's Java absent pattern, one operator per pattern it takes.

Applies to each query left after rules 1–8 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), when eddy's JVM classes are built on this
machine, and the query is ``[every] e1=S1[f] -> not S2[c] for t`` over input streams of the
group (optionally the only query of a value partition by plain attributes of them), without
``within``, selecting ``e1``'s attributes and
``eventTimestamp()`` into a stream (:mod:`eddy.engine.operators.absent` says whether it
can: ``c`` must split into equality keys, Spark SQL filters and an expression the operator
evaluates).

Exact because the operator runs the runtime's absent state step by step — the state's
timers a FIFO fired by every row of the group that is not late, each ``e1`` a pending match
with its timer, each ``S2`` event that ``c`` accepts killing its matches (and asking for a
timer), each timer sending the matches whose wait is over in the pending list's order — and
a standalone query's outputs depend on the group's input rows alone; in a partition each
value has its own instance and timer queue, fired as the runtime's keyed scheduler fires
them. State: one key, since the scheduler (and so when and in which order matches go out)
is the query's, a partition's too.
"""

from __future__ import annotations

from eddy.plan.physical.model import ONE_KEY, QueryChoice
from eddy.plan.physical.planner import Planning

NAME = "absent"
REASON = "it is 'e1 -> not S2 for t': the runtime's absent state and its timers in the JVM"


def apply(planning: Planning) -> None:
    """Places every standalone absent pattern the Java operator runs, each on its own."""
    for info in planning.pending:
        if planning.standalone(info) and \
                planning.facts.jvm_absent(planning.analyzed, info, planning.streams_of(info)):
            planning.choose(QueryChoice(info.id, "jvm-absent", ONE_KEY, NAME, REASON))
