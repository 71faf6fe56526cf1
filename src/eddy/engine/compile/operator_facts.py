"""The engine's answers to the physical planner (:class:`eddy.plan.physical.OperatorFacts`).

Every answer comes from the code that later runs the query — the vectorised operators'
own ``plan_*`` functions, the runtime's partition split — so the planner's choice is the
engine's by construction. Nothing here needs a SparkSession (Spark SQL support is decided
by :mod:`eddy.engine.compile.spark_sql_support`), so ``eddy explain`` gets the same answers a
worker does.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.engine.compile.spark_sql_support import script_functions, spark_sql_problems
from eddy.engine.operators.aggregation_step import aggregations_only
from eddy.engine.operators.counting.plan import plan_counting
from eddy.engine.operators.cycle.plan import plan_cycle
from eddy.engine.operators.followed_by.plan import FollowedByPlan, plan_followed_by
from eddy.engine.operators.absent.plan import plan_absent
from eddy.engine.operators.logical.plan import plan_logical
from eddy.engine.operators.sequence.plan import plan_sequence
from eddy.engine.operators.window_aggregates.plan import plan_window_aggregate, runs_in_jvm
from eddy.engine.operators.window_join.plan import plan_window_join
from eddy.engine.spark.jvm_classes import bridge_jar
from eddy.engine.spark.row_layout import CLOCK, InputLayout, input_layout
from eddy.lang import ast
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.plan.physical import GroupPhysicalPlan, Sources, plan_group
from eddy.runtime.partition_buckets import partition_attributes


def _layout(analyzed: AnalyzedApp, info: QueryInfo, streams: Sequence[str]) -> InputLayout:
    """The layout of ``streams`` ``info`` may read: the group's inputs among them, then any
    stream a query fills (a head's, read as input: :mod:`eddy.plan.physical.heads`)."""
    full = input_layout(analyzed)
    wanted = set(streams)
    inputs = tuple((n, a) for n, a in full.streams if n in wanted)
    filled = tuple((n, analyzed.read_stream(n, info.partition).attributes) for n in streams
                   if n not in dict(full.streams))
    return InputLayout(inputs + filled)


class EngineFacts:
    """:class:`~eddy.plan.physical.OperatorFacts` answered by the engine's operators."""

    def spark_sql_problem(self, analyzed: AnalyzedApp,
                          expressions: Sequence[ast.Expression]) -> str | None:
        return spark_sql_problems(expressions, analyzed.type_of, script_functions(analyzed))

    def window_aggregate(self, analyzed: AnalyzedApp, info: QueryInfo,
                         streams: Sequence[str]) -> bool:
        layout = _layout(analyzed, info, streams)
        return plan_window_aggregate(analyzed, [info], layout) is not None

    def jvm_window_aggregate(self, analyzed: AnalyzedApp, info: QueryInfo,
                             streams: Sequence[str]) -> bool:
        if bridge_jar() is None:
            return False
        layout = _layout(analyzed, info, streams)
        plan = plan_window_aggregate(analyzed, [info], layout, jvm=True)
        return plan is not None and runs_in_jvm(plan)

    def chains(self, analyzed: AnalyzedApp, producer: QueryInfo,
               streams: Sequence[str], consumer: QueryInfo) -> bool:
        if bridge_jar() is None or producer.partition != consumer.partition or \
                producer.output_stream is None:
            return False
        made = plan_window_aggregate(analyzed, [producer], _layout(analyzed, producer, streams),
                                     jvm=True)
        if made is None or not runs_in_jvm(made) or not made.spec.one_per_input:
            return False
        read = (producer.output_stream,)
        window = plan_window_aggregate(analyzed, [consumer], _layout(analyzed, consumer, read),
                                       jvm=True)
        if window is not None:
            return runs_in_jvm(window) and window.spec.reads_no_clock
        return self.jvm_followed_by(analyzed, consumer, read)

    def followed_by(self, analyzed: AnalyzedApp, info: QueryInfo,
                    streams: Sequence[str]) -> bool:
        return self._followed_by(analyzed, info, streams) is not None

    def jvm_followed_by(self, analyzed: AnalyzedApp, info: QueryInfo,
                        streams: Sequence[str]) -> bool:
        if bridge_jar() is None:
            return False
        plan = self._followed_by(analyzed, info, streams)
        # the Java operator restarts with every e1 and completes through one state
        return plan is not None and plan.spec.every and plan.spec.right is None

    def _followed_by(self, analyzed: AnalyzedApp, info: QueryInfo,
                     streams: Sequence[str]) -> FollowedByPlan | None:
        plan = plan_followed_by(analyzed, [info], _layout(analyzed, info, streams))
        if plan is None or self.spark_sql_problem(analyzed, plan.spark_filters()) is not None:
            return None
        return plan

    def jvm_absent(self, analyzed: AnalyzedApp, info: QueryInfo,
                   streams: Sequence[str]) -> bool:
        if bridge_jar() is None:
            return False
        plan = plan_absent(analyzed, [info], _layout(analyzed, info, streams))
        return plan is not None and self.spark_sql_problem(analyzed, plan.spark_filters()) is None

    def sequence(self, analyzed: AnalyzedApp, info: QueryInfo,
                 streams: Sequence[str]) -> bool:
        plan = plan_sequence(analyzed, [info], _layout(analyzed, info, streams))
        return plan is not None and self.spark_sql_problem(analyzed, plan.spark_filters()) is None

    def cycle(self, analyzed: AnalyzedApp, info: QueryInfo, streams: Sequence[str]) -> bool:
        plan = plan_cycle(analyzed, [info], _layout(analyzed, info, streams))
        return plan is not None and self.spark_sql_problem(analyzed, plan.spark_filters()) is None

    def logical(self, analyzed: AnalyzedApp, info: QueryInfo, streams: Sequence[str]) -> bool:
        plan = plan_logical(analyzed, [info], _layout(analyzed, info, streams))
        return plan is not None and self.spark_sql_problem(analyzed, plan.spark_filters()) is None

    def counting(self, analyzed: AnalyzedApp, info: QueryInfo,
                 streams: Sequence[str]) -> bool:
        plan = plan_counting(analyzed, [info], _layout(analyzed, info, streams))
        return plan is not None and self.spark_sql_problem(analyzed, plan.spark_filters()) is None

    def window_join(self, analyzed: AnalyzedApp, info: QueryInfo,
                    streams: Sequence[str]) -> bool:
        plan = plan_window_join(analyzed, [info], _layout(analyzed, info, streams))
        return plan is not None and self.spark_sql_problem(
            analyzed, (*plan.filters[0], *plan.filters[1])) is None

    def runtime_partition(self, analyzed: AnalyzedApp, queries: Sequence[str],
                          streams: Sequence[str]) -> dict[str, str] | None:
        return partition_attributes(analyzed, list(queries), list(streams))

    def aggregations_vectorise(self, analyzed: AnalyzedApp) -> bool:
        return aggregations_only(analyzed, [])


def source_plan(analyzed: AnalyzedApp, layout: InputLayout, columns: Sequence[str], *,
                on_demand: bool = True) -> GroupPhysicalPlan:
    """The physical plan for a source with ``columns`` (its rows carry their stream's clock
    when :data:`~eddy.engine.spark.row_layout.CLOCK` is one of them): what ``compile_group``
    runs."""
    return physical_plan(analyzed, layout, clock=CLOCK in columns, on_demand=on_demand)


def physical_plan(analyzed: AnalyzedApp, layout: InputLayout, *, clock: bool,
                  on_demand: bool = True, group: str | None = None) -> GroupPhysicalPlan:
    """The physical plan of the app run as one group over ``layout``'s streams (the plan
    every entry point — replay, run, the worker — builds for the same source columns)."""
    sources = Sources(tuple(name for name, _ in layout.streams), clock, on_demand)
    return plan_group(analyzed, group or analyzed.name, sources, EngineFacts())
