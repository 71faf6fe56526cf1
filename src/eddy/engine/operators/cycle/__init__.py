"""A vectorised operator for a pattern restarted as a whole, ``every (e1=S1[f1] -> e2=S2[f2]
-> …)``: one partial match at a time per instance, so the states it waits for form a small
automaton, run over a whole micro-batch at once with a parallel prefix scan.

:mod:`.plan` says which queries qualify, :mod:`.matching` computes the matches and
:mod:`.spark` puts the operator into a group's Spark plan (the sequence operator's rows).
"""

from eddy.engine.operators.cycle.plan import plan_cycle
from eddy.engine.operators.cycle.spark import cycle_part

__all__ = ["cycle_part", "plan_cycle"]
