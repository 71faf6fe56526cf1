"""Everything eddy checks before it runs an app, in one place, without Spark.

``eddy validate``, ``eddy explain``, a worker's deploy (API and deployment folder) and the
dashboard's editor must agree on which apps are faulty. The language checks and the logical
plan are not enough for that: an app can be valid SiddhiQL and still hold a query eddy does
not run yet (a nested input query, say), which was found only when its first micro-batch
failed inside Spark with a Python traceback.

Every query eddy runs has the per-event runtime as its exact fallback — the vectorised
operators and Spark SQL take shapes the runtime also runs, and the physical planner leaves
everything else to it — so a query the runtime cannot build is one eddy cannot run. The
runtime's own reasons (:func:`~eddy.runtime.query_builder.unsupported_reason`) are
asked here, statically, and reported at the query's input. Only Spark-free modules are
imported, so ``eddy validate`` stays quick.
"""

from __future__ import annotations

from eddy.lang import AnalyzedApp, SiddhiAppError, check
from eddy.lang.errors import NO_SPAN, AppIssue, Span
from eddy.lang.semantic import QueryInfo
from eddy.plan import AppPlan, build_plan
from eddy.runtime.partition import partition_input_problem
from eddy.runtime.query_builder import unsupported_reason


def check_app(text: str, filename: str | None = None) -> tuple[AnalyzedApp, AppPlan]:
    """The analysed app and its logical plan; raises
    :class:`~eddy.lang.SiddhiAppError` for any fault, each at its line and column."""
    analyzed = check(text, filename)
    plan = build_plan(analyzed)
    issues = [AppIssue("semantic", f"query '{info.id}' cannot run in eddy: {problem}",
                       _where(info))
              for info in analyzed.queries
              if (problem := runtime_problem(analyzed, info)) is not None]
    if issues:
        raise SiddhiAppError(issues, analyzed.source, analyzed.filename)
    return analyzed, plan


def runtime_problem(analyzed: AnalyzedApp, info: QueryInfo) -> str | None:
    """Why the per-event runtime cannot build ``info`` (yet), or None when it can."""
    if info.partition is not None:
        problem = partition_input_problem(analyzed, info.inputs)
        if problem is not None:
            return problem
    return unsupported_reason(info)


def _where(info: QueryInfo) -> Span:
    """The query's input (where its shape is), else the whole query."""
    span = info.query.input.span
    return span if span != NO_SPAN else info.query.span
