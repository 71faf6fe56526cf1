"""The physical planner's rules, one per module, in the order they are tried."""

from __future__ import annotations

from types import ModuleType

from eddy.plan.physical.rules import (
    absent,
    counting,
    cycle,
    followed_by,
    logical,
    runtime,
    sequence,
    spark_sql,
    tail,
    window_aggregate,
    window_join,
)

RULES: tuple[ModuleType, ...] = (spark_sql, window_aggregate, followed_by, window_join,
                                  sequence, counting, cycle, logical, absent, tail, runtime)
"""Each module has ``NAME`` and ``apply(planning)``."""
STATEFUL: tuple[ModuleType, ...] = (window_aggregate, followed_by, window_join, sequence,
                                     counting, cycle, logical)
"""The rules of the stateful operators that run a query each; each also has
``takes(planning, info, streams)``."""
