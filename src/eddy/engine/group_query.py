"""Compiling one execution group to one Spark streaming DataFrame.

Stateless queries become Spark SQL over the group's input rows (:mod:`eddy.engine.native`);
the rest run in the per-event runtime hosted by a stateful operator
(:mod:`eddy.engine.operator`), keyed by one state key for now: an unpartitioned Siddhi
query is one sequential thread in the reference too. The result is the group's tagged
output rows, ready for one writer that routes them by target.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eddy.engine.layout import OUTPUT_SCHEMA, STORE_STREAM, STREAM, InputLayout
from eddy.engine.native import compile_native, plan_native
from eddy.engine.operator import make_step
from eddy.lang import check

STATE_SCHEMA = "state binary"


def compile_group(app_text: str, source: DataFrame, layout: InputLayout,
                  *, on_demand: bool = True) -> DataFrame:
    """The streaming DataFrame of a group's outputs (schema :data:`OUTPUT_SCHEMA`).

    ``on_demand`` keeps the runtime in the plan to answer on-demand queries even when every
    streaming query runs natively.
    """
    analyzed = check(app_text)
    native = plan_native(analyzed, layout)
    rest = [q for q in analyzed.queries if q.id not in native.ids]
    outputs = compile_native(analyzed, native, source, layout)
    if rest or (on_demand and _has_state(analyzed)) or outputs is None:
        streams = {n for q in rest for n in q.inputs} | {STORE_STREAM}
        step = make_step(app_text, [q.id for q in rest], layout)
        stateful = (source.where(F.col(STREAM).isin(sorted(streams)))
                    .withColumn("_key", F.lit(0)).groupBy("_key")
                    .applyInPandasWithState(step, outputStructType=OUTPUT_SCHEMA,
                                            stateStructType=STATE_SCHEMA,
                                            outputMode="append", timeoutConf="NoTimeout"))
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    return outputs


def _has_state(analyzed: object) -> bool:
    from eddy.lang.semantic import AnalyzedApp

    assert isinstance(analyzed, AnalyzedApp)
    return any(s.kind in ("table", "window", "aggregation") for s in analyzed.streams.values())
