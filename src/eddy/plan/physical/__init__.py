"""Physical plan: per query of an execution group, the operator, its state key and why.

Spark-free: :func:`plan_group` applies the ordered rules of :mod:`.rules` and asks the
operators' owners for what only they know through :class:`~.facts.OperatorFacts`.
"""

from __future__ import annotations

from eddy.plan.physical.facts import OperatorFacts
from eddy.plan.physical.model import (
    OPERATOR_NAMES,
    GroupPhysicalPlan,
    Operator,
    QueryChoice,
    Sources,
    StateKey,
)
from eddy.plan.physical.planner import plan_group

__all__ = ["OPERATOR_NAMES", "GroupPhysicalPlan", "Operator", "OperatorFacts", "QueryChoice",
           "Sources", "StateKey", "plan_group"]
