"""Which queries run natively in Spark SQL, and which stay in the per-event runtime.

Building Spark columns needs a SparkContext, hence the ``spark`` fixture.
"""

from __future__ import annotations

import pytest
from conformance import load_cases

from eddy.engine.compile.native_queries import plan_native
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check

STATELESS = [c for c in load_cases(["filter", "projection", "function", "chain"])
             if c.expected_error is None and "window" not in c.app]


@pytest.mark.parametrize("case", STATELESS, ids=lambda c: c.name)
def test_stateless_cases_run_in_the_jvm(case: object, spark: object) -> None:
    analyzed = check(case.app)  # type: ignore[attr-defined]
    plan = plan_native(analyzed, input_layout(analyzed))
    assert plan.ids == {q.id for q in analyzed.queries}


def _native(app: str) -> set[str]:
    analyzed = check(app)
    return set(plan_native(analyzed, input_layout(analyzed)).ids)


def test_state_keeps_a_query_in_the_runtime_and_its_producers_follow(spark: object) -> None:
    app = """
    define stream S (k string, v int);
    @info(name='clean') from S[v > 0] select k, v insert into Clean;
    @info(name='total') from Clean#window.length(3) select k, sum(v) as t insert into Totals;
    @info(name='loud') from S[v > 100] select k insert into Loud;
    """
    # 'clean' feeds a runtime query, so it runs in the runtime too; 'loud' is independent.
    assert _native(app) == {"loud"}


def test_native_chains_and_unsupported_expressions(spark: object) -> None:
    app = """
    define stream S (k string, v int);
    define function twice[javascript] return int { return data[0] * 2; };
    @info(name='a') from S[v > 0] select k, v * 2 as v insert into A;
    @info(name='b') from A select k, v + 1 as v insert into B;
    @info(name='c') from S select k, twice(v) as v insert into C;
    @info(name='d') from S select k, v insert expired events into D;
    """
    assert _native(app) == {"a", "b"}


def test_a_partitions_filters_run_in_the_jvm(spark: object) -> None:
    """A filter of a value partition sees each event once, under its key, and none whose
    key is null (the reference routes it nowhere); one reading a stream the partition does
    not split (each event reaches every key) or splits by ranges stays in the runtime. The
    plan on Spark inserts what the runtime inserts."""
    from columnar_runs import random_events, replay_equals_runtime

    app = """@app:playback
    define stream A (k int, v double, s string);
    define stream B (k long, v double, s string);
    partition with (k of A, v < 10.0 as 'low' or v >= 5.0 as 'high' of B)
    begin
        @info(name='q') from A[v > 8.0] select k, v * 2 as v, s insert into O;
        @info(name='ranged') from B select k, v insert into R;
    end;
    """
    assert _native(app) == {"q"}
    replay_equals_runtime(check(app), random_events(3, 200, "AAB", 3))
