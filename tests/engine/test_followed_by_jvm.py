"""The followed-by in eddy's Java operator (:mod:`eddy.engine.operators.followed_by.jvm`)
against the per-event runtime.

Random events — timestamps that tie and go back, null keys and values, a third stream the
pattern does not read — through ``eddy.replay`` on Spark at micro-batches of 40 and all (so
its state is written and read back between batches), for patterns of the operator's shape
(in one app, :func:`test_window_aggregate_jvm.combined`):
one stream or two, partitioned or not, with and without ``within``, integral, string and
no equality keys, residual conditions with arithmetic, division, ``or``/``not``/``is
null`` and constants, beside a window in eddy's other Java operator. The outputs must equal
the runtime's, event for event and in order. A second test checks that the plan Spark runs
is the JVM's ``flatMapGroupsWithState``, not a Python worker.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from conformance import compare_case
from test_window_aggregate_jvm import (
    assert_runs_in_the_jvm,
    combined,
    equals_the_runtime,
    runtime_case,
)

from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.run.replay import replay
from eddy.engine.spark.jvm_classes import bridge_jar
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check

pytestmark = pytest.mark.skipif(bridge_jar() is None, reason="needs a JDK to build eddy's "
                                "Java operators")

STREAMS = """@app:playback
define stream A (k int, v double, s string, n long);
define stream B (k long, v double, s string, n long);
define stream C (x int);
"""
APPS = {
    "seed": """@info(name='q')
from every(e1=A) -> e2=A[e1.k == k and (e1.v + 5) <= v] within 2 sec
select e1.k, e1.v as first, e2.v as second insert into O;""",
    "two-streams-partitioned": """partition with (k of A, k of B) begin
@info(name='q')
from every e1=A[v > 0] -> e2=B[k == e1.k and v < e1.v] within 1500 milliseconds
select e1.s, e2.k, e2.s as t, e1.n insert into O;
end;""",
    "no-key-no-within": """@info(name='q')
from every e1=A -> e2=A[v > e1.v * 2 or s == e1.s]
select e1.v, e2.v as w, e2.n insert into O;""",
    "string-key-arithmetic": """@info(name='q')
from every e1=A[s is null or v < 50] -> e2=B[e1.s == s and (n / e1.n) % 3 != 1
    and not (e1.k - k > 2)] within 3 sec
select e1.k as a, e2.k as b, e2.s, e1.v insert into O;""",
    "beside-a-window": """@info(name='q')
from every e1=A -> e2=A[e1.k == k and e1.n * 2 < n + 1] within 1 sec
select e1.n as before, e2.n as after insert into O;
@info(name='w')
from A#window.time(500 milliseconds)
select k, count() as c group by k insert all events into W;""",
}


def _events(seed: int, count: int = 120) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    ts = 1_000
    for i in range(count):
        ts += rng.choice((0, 100, 300, 600, 900))  # within bounds are met exactly
        when = ts - rng.choice((0, 0, 0, 0, 300, 2_500))  # ties, and some go back
        stream = rng.choice("AABC")
        if stream == "C":
            events.append({"stream": "C", "timestamp": when, "data": [i]})
            continue
        k = rng.choice((None, 0, 1, 2, 2, 3))
        v = rng.choice((None, -1.0, 0.0, 3.5, 9.0, 20.0, 70.0))
        s = rng.choice((None, "x", "y", "y"))
        n = rng.choice((None, 0, 1, 5, 7, 2**40))
        events.append({"stream": stream, "timestamp": when, "data": [k, v, s, n]})
    return events


SCHEMAS = {"A": [["k", "INT"], ["v", "DOUBLE"], ["s", "STRING"], ["n", "LONG"]],
           "B": [["k", "LONG"], ["v", "DOUBLE"], ["s", "STRING"], ["n", "LONG"]],
           "C": [["x", "INT"]]}


def test_the_java_followed_by_equals_the_runtime(spark: object) -> None:
    app = STREAMS + combined(APPS)
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    operators = {c.query: c.operator for c in plan.queries}
    assert {q for q, op in operators.items() if op == "jvm-followed-by"} == \
        {f"q{i}" for i in range(len(APPS))}, operators
    equals_the_runtime(app, _events(4, 200), SCHEMAS)


def test_the_pattern_runs_in_the_jvm(spark: Any) -> None:
    assert_runs_in_the_jvm(spark, STREAMS + APPS["seed"])


def test_within_is_inclusive_at_its_bound(spark: Any) -> None:
    """A match exactly ``within`` old still completes; one a millisecond older does not, in
    the pending list and in the new list alike (the runtime says so too)."""
    app = STREAMS + APPS["seed"]
    rows = [(1_000, 1, 0.0), (3_000, 1, 10.0),               # exactly 2 s: completes
            (10_000, 2, 0.0), (12_001, 2, 10.0),             # 1 ms over: expired
            (20_000, 3, 0.0), (20_500, 4, 0.0), (22_000, 3, 9.0), (22_500, 4, 9.0)]
    inputs = [{"stream": "A", "timestamp": ts, "data": [k, v, "x", 1]} for ts, k, v in rows]
    case = runtime_case("within-bound", app, inputs, SCHEMAS)
    assert [e["data"][:1] for e in case.expected["O"]] == [[1], [3], [4]]
    for size in (1, 0):
        result = replay(app, inputs, batch_size=size)
        assert not compare_case(case, result.streams, result.queries, result.store)
