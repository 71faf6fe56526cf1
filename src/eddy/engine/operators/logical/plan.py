"""Which patterns the vectorised logical operator runs.

The shape is a logical first state under ``every``, then one plain state::

    from every (e1=S1[f1] and|or e2=S2[f2]) -> e3=S3[c]
    select <expressions of e1, e2, e3> insert into Out;

with three different streams, ``f1`` and ``f2`` reading their own event only and ``c``
reading ``e3`` and, as numpy columns, ``e1`` and ``e2``; no ``within``; optionally the only
query of a value partition by plain integral, string or bool attributes. The plan is the
sequence operator's (:func:`~eddy.engine.operators.sequence.plan.chain_plan` over the
states ``e1, e2, e3``: the same rows, conditions and selection) with the logical operator
named in its spec; any other shape stays in the per-event runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.engine.operators.followed_by.plan import filtered_only, per_match_query
from eddy.engine.operators.sequence.plan import SequencePlan, chain_plan
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo


def plan_logical(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                 layout: InputLayout) -> SequencePlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one query of the shape
    above, else None."""
    found = per_match_query(rest, "pattern")
    if found is None:
        return None
    info, stream = found
    if not (stream.within is None and isinstance(stream.state, ast.NextStateElement)
            and isinstance(stream.state.element, ast.EveryStateElement)):
        return None
    logical, last = stream.state.element.element, stream.state.next
    if not isinstance(logical, ast.LogicalStateElement):
        return None
    states = [logical.left, logical.right, last]
    if not all(type(s) is ast.StreamStateElement and filtered_only(s.stream)
               for s in states):
        return None
    plain = [s for s in states if isinstance(s, ast.StreamStateElement)]
    if len({s.stream.stream for s in plain}) != 3 or len(info.scope.sources) != 3:
        return None  # (one event of two states' stream: the reference's order of sides)
    plan = chain_plan(analyzed, info, True, None, plain, layout, logical=logical.op)
    if plan is None or any(plan.spec.residuals[:2]):
        return None  # a side of the logical state reading the other
    return plan
