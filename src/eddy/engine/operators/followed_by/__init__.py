"""A vectorised operator for ``every e1=S1 -> e2=S2[c] within t`` patterns (DESIGN.md §4):
the seed's query-2 shape, run a micro-batch at a time with numpy instead of event by event.

:mod:`.plan` says which queries qualify, :mod:`.matching` computes the matches and
:mod:`.spark` puts the operator into a group's Spark plan.
"""

from eddy.engine.operators.followed_by.plan import FollowedByPlan, plan_followed_by
from eddy.engine.operators.followed_by.spark import compile_followed_by, compiles_in_spark, \
    followed_by_part

__all__ = ["FollowedByPlan", "compile_followed_by", "compiles_in_spark", "followed_by_part",
           "plan_followed_by"]
