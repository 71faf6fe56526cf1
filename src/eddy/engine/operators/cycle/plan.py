"""Which patterns the vectorised cycle operator runs.

The shape is a chain of plain states under one ``every``::

    from every (e1=S1[f1] -> e2=S2[f2] -> … -> en=Sn[fn]) [within t]
    select <expressions of e1..en> insert into Out;

with each ``fk`` reading its own event only (it runs in Spark SQL), optionally the only
query of a value partition by plain integral, string or bool attributes. The plan is the
sequence operator's (:func:`~eddy.engine.operators.sequence.plan.chain_plan`: the same rows,
states and selection); conditions reading earlier states and any other shape stay in the
per-event runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.engine.operators.followed_by.plan import per_match_query
from eddy.engine.operators.sequence.plan import SequencePlan, chain_plan, chain_states
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo


def plan_cycle(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
               layout: InputLayout) -> SequencePlan | None:
    """The plan when ``rest`` (the group's non-native queries) is one query of the shape
    above, else None."""
    found = per_match_query(rest, "pattern")
    if found is None:
        return None
    info, stream = found
    if not isinstance(stream.state, ast.EveryStateElement):
        return None
    chain = chain_states(stream.state.element)
    if chain is None or chain[0] or len(info.scope.sources) != len(chain[1]):
        return None
    within = stream.within.millis if stream.within is not None else None
    return chain_plan(analyzed, info, True, within, chain[1], layout, residuals=False)
