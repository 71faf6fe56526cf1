"""Rule 4 — the vectorised window join, one operator per join query it takes.

Applies to each query left after rules 1–3 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), when the app has no partition, and the query is
an inner join of two different streams'
``length``/``time`` windows (no ``unidirectional``) selecting attributes of both sides into
a stream (:mod:`eddy.engine.operators.window_join` builds the kernel and says whether it can: the
``on`` condition must split into equality keys and numpy columns, the filters must compile
to Spark SQL).

Exact because each arriving event is joined with the other window's contents at its place
in the input, as the reference does, and only current events are inserted; a standalone query's
outputs depend on the group's input rows alone. State: one key
(the two windows are global).
"""

from __future__ import annotations

from eddy.plan.physical.model import ONE_KEY, QueryChoice
from eddy.plan.physical.planner import Planning

NAME = "window-join"


def apply(planning: Planning) -> None:
    """Places every standalone join query the window join runs, each in its own operator."""
    if planning.analyzed.partitions:
        return
    for info in planning.pending:
        if planning.standalone(info) and planning.facts.window_join(
                planning.analyzed, info, planning.sources.streams):
                planning.choose(QueryChoice(info.id, "window-join", ONE_KEY, NAME,
                                        "it joins two length/time windows on equality keys"))
