"""A vectorised operator for patterns whose first state is logical, ``every (e1=S1[f1]
and|or e2=S2[f2]) -> e3=S3[c]``: the logical state's matches form per instance from a small
automaton over its events, and each then waits for the first later ``S3`` event ``c``
accepts, as a followed-by's match does.

:mod:`.plan` says which queries qualify, :mod:`.matching` computes the matches and
:mod:`.spark` puts the operator into a group's Spark plan (the sequence operator's rows).
"""

from eddy.engine.operators.logical.plan import plan_logical
from eddy.engine.operators.logical.spark import logical_part

__all__ = ["logical_part", "plan_logical"]
