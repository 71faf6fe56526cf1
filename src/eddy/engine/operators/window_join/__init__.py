"""A vectorised operator for joins of length and time windows (inner, outer, unidirectional,
self joins; DESIGN.md §4): each event a window emits matches a run of the other side's
window, found by binary search.

:mod:`.plan` says which joins qualify, :mod:`.matching` computes the joined events,
:mod:`.aggregating` a join's aggregates over them, and :mod:`.spark` puts the operator
into a group's Spark plan.
"""

from eddy.engine.operators.window_join.plan import WindowJoinPlan, plan_window_join
from eddy.engine.operators.window_join.spark import (
    compile_window_join,
    join_compiles_in_spark,
    window_join_part,
)

__all__ = ["WindowJoinPlan", "compile_window_join", "window_join_part", "join_compiles_in_spark",
           "plan_window_join"]
