"""A vectorised operator for sequences of plain states (``every e1=S1, e2=S2[c2], …``): a
match is a run of consecutive events of an instance, found for a whole micro-batch at once
with numpy instead of event by event.

:mod:`.plan` says which queries qualify, :mod:`.matching` computes the matches and
:mod:`.spark` puts the operator into a group's Spark plan.
"""

from eddy.engine.operators.sequence.plan import SequencePlan, plan_sequence
from eddy.engine.operators.sequence.spark import sequence_part

__all__ = ["SequencePlan", "plan_sequence", "sequence_part"]
