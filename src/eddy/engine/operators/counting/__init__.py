"""A vectorised operator for counting patterns (``every e1=S1[f]<n:m> -> e2=S2[c]``): each
match's chain and the event that completes it found for a whole micro-batch at once with
numpy instead of event by event.

:mod:`.plan` says which queries qualify, :mod:`.matching` computes the matches and
:mod:`.spark` puts the operator into a group's Spark plan.
"""

from eddy.engine.operators.counting.plan import CountingPlan, plan_counting
from eddy.engine.operators.counting.spark import counting_part

__all__ = ["CountingPlan", "counting_part", "plan_counting"]
