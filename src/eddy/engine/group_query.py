"""Compiling one execution group to one Spark streaming DataFrame.

Stateless queries become Spark SQL over the group's input rows (:mod:`eddy.engine.native`);
the rest run in the per-event runtime hosted by a stateful operator
(:mod:`eddy.engine.operator`), keyed by one state key for now: an unpartitioned Siddhi
query is one sequential thread in the reference too. A group whose one stateful query is a
``#window.time``/``#window.timeBatch`` aggregation runs it vectorised instead
(:mod:`eddy.engine.window_aggregates`), with the same outputs. The result is the group's
tagged output rows, ready for one writer that routes them by target.

Why not one state key per hash bucket of the ``group by`` key (DESIGN.md §4)? A bucket only
sees its own rows, so its clock — the largest timestamp *it* saw — falls behind the group's
whenever timestamps go back, expiring a time window too late; a batch window's flush would
be attributed to the bucket's next event instead of the group's, and the position of a
group in a flushed batch (part of ``_order``) depends on the other buckets' groups. The
vectorised operator gets the throughput without giving up either.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eddy.engine.layout import OUTPUT_SCHEMA, SEQ, STORE_STREAM, STREAM, TS, InputLayout
from eddy.engine.native import compile_native, plan_native
from eddy.engine.operator import make_step
from eddy.engine.window_aggregates import compile_window_aggregate, plan_window_aggregate
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
    window = plan_window_aggregate(analyzed, rest, layout)
    if window is not None:
        stateful = compile_window_aggregate(analyzed, window, source, layout)
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    elif rest or (on_demand and _has_state(analyzed)) or outputs is None:
        streams = {n for q in rest for n in q.inputs} | _aggregation_inputs(analyzed) | \
            {STORE_STREAM}
        step = make_step(app_text, [q.id for q in rest], layout)
        stateful = (_runtime_input(source, layout, streams)
                    .withColumn("_key", F.lit(0)).groupBy("_key")
                    .applyInPandasWithState(step, outputStructType=OUTPUT_SCHEMA,
                                            stateStructType=STATE_SCHEMA,
                                            outputMode="append", timeoutConf="NoTimeout"))
        outputs = stateful if outputs is None else outputs.unionByName(stateful)
    return outputs


def _runtime_input(source: DataFrame, layout: InputLayout, streams: set[str]) -> DataFrame:
    """The rows the runtime needs, narrowed to what it reads: every column crosses into
    Python, and a string ``_stream`` costs a Python string per row, so the stream travels
    as its position in the layout (what :func:`~eddy.engine.operator.to_events` expects)."""
    names = [name for name, _ in layout.streams]
    code = F.array_position(F.array(*(F.lit(n) for n in names)), F.col(STREAM)) - 1
    columns = [c for name in names if name in streams for c in layout.columns(name)]
    return (source.where(F.col(STREAM).isin(sorted(streams)))
            .select(SEQ, TS, code.cast("int").alias(STREAM), *columns))


def _aggregation_inputs(analyzed: object) -> set[str]:
    """The streams that ``define aggregation … from S`` reads: the runtime aggregates them
    even when no query reads them."""
    from eddy.lang import ast
    from eddy.lang.semantic import AnalyzedApp

    assert isinstance(analyzed, AnalyzedApp)
    return {info.definition.input.stream for info in analyzed.streams.values()
            if isinstance(info.definition, ast.AggregationDefinition)
            and info.definition.input is not None}


def _has_state(analyzed: object) -> bool:
    from eddy.lang.semantic import AnalyzedApp

    assert isinstance(analyzed, AnalyzedApp)
    return any(s.kind in ("table", "window", "aggregation") for s in analyzed.streams.values())
