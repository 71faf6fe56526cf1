"""eddy's Java operator for absent patterns, ``[every] e1=S1[f] -> not S2[c] for t`` (WSO2's
"no heartbeat for t" idiom): :mod:`.plan` says which queries qualify, :mod:`.jvm` puts the
operator (``engine/spark/jvm/src/eddy/ops/AbsentPattern.java``) into a group's Spark plan.
"""

from eddy.engine.operators.absent.plan import AbsentPlan, plan_absent

__all__ = ["AbsentPlan", "plan_absent"]
