"""Rule 4 — the vectorised window join, one operator per join query it takes.

Applies to each query left after rules 1–3 that stands alone in its group
(:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime), when the app has no partition, and the query is
a join (inner, outer, ``unidirectional``, a self join) of two streams' ``length``/``time``
windows or no window, selecting expressions of both sides into a stream; or an inner join
of two streams' ``length`` windows (or none) that aggregates the joined events with
``count()``, ``avg`` and ``sum`` of doubles, optionally ``group by`` non-double attributes
(:mod:`eddy.engine.operators.window_join` builds the kernel and says whether it can: the
``on`` condition and the selection must compile to numpy columns, the filters to Spark SQL,
and expired events are inserted only from length windows).

Exact because each event a window emits is joined with the other window's contents at its
place in the input, as the reference does: a window is a FIFO run of its side's events, and
a length window's expired event is the one its side's arrival pushes out; aggregates add
and remove each chunk's joined events in that order, sequentially per group, and emit a
chunk's last event per group as the reference's selector does
(:mod:`eddy.engine.operators.window_join.aggregating`); a standalone query's outputs depend
on the group's input rows alone. State: one key (the two windows and the aggregates are
global).
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.model import ONE_KEY, QueryChoice
from eddy.plan.physical.planner import Planning

NAME = "window-join"
REASON = "it joins length/time windows or streams, matched by key and window position"
AGGREGATES = ", and aggregates the joined events as the reference's selector does"


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the window join runs ``info`` reading ``streams``."""
    return not planning.analyzed.partitions and \
        planning.facts.window_join(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone join query the window join runs, each in its own operator."""
    for info in planning.pending:
        if planning.standalone(info) and takes(planning, info, planning.streams_of(info)):
            aggregates = info.aggregates or bool(info.query.selector.group_by)
            planning.choose(QueryChoice(info.id, "window-join", ONE_KEY, NAME,
                                        REASON + (AGGREGATES if aggregates else "")
                                        + planning.through(info)))
