"""Absent patterns in eddy's Java operator (:mod:`eddy.engine.operators.absent`) against
the per-event runtime.

Random events — timestamps that tie and go back (late rows fire no timer, and a match's
timer can wait behind a later one in the scheduler's FIFO), null keys and values, a stream
the patterns do not read that still moves the clock — through ``eddy.replay`` on Spark at
micro-batches of 40 and all (so its state is written and read back between batches), for
``[every] e1=S1[f] -> not S2[c] for t`` over one stream (WSO2's heartbeat) or two, with
integral, string and no equality keys, residual conditions reading ``e1``, conjuncts on
the absent stream's own event, ``eventTimestamp()`` selected, without ``every``, in value
partitions (each value's timers on the partition's keyed scheduler; null values reaching
no instance), beside a window in eddy's other Java operator whose timers fire at the same
rows. The outputs must
equal the runtime's, event for event and in order; the plan must be the JVM's.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from test_window_aggregate_jvm import assert_runs_in_the_jvm, combined, equals_the_runtime

from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.absent import plan_absent
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
    "heartbeat": """@info(name='q')
from every e1=A -> not A[k == e1.k] for 500 milliseconds
select e1.k, e1.s, eventTimestamp() as at insert into O;""",
    "string-key-residual": """@info(name='q')
from every e1=A[v > 0] -> not B[s == e1.s and v > e1.v and n != 7] for 300 milliseconds
select e1.s, e1.v, e1.n insert into O;""",
    "no-key": """@info(name='q')
from every e1=B[n is null or n < 6] -> not A[v < e1.v * 2 or s == e1.s] for 400 milliseconds
select e1.k, eventTimestamp() as at, e1.v insert into O;""",
    "first-only": """@info(name='q')
from e1=A[k == 2] -> not C[x < 0] for 1 sec
select eventTimestamp() as t, e1.v insert into O;""",
    "partitioned-heartbeat": """partition with (k of A) begin
@info(name='q')
from every e1=A -> not A[v > e1.v] for 300 milliseconds
select e1.k, e1.v, eventTimestamp() as at insert into O;
end;""",
    "partitioned-two-streams": """partition with (k of A, k of B) begin
@info(name='q')
from every e1=A[v > 0] -> not B[n != 7] for 500 milliseconds
select e1.s, e1.n, eventTimestamp() as at insert into O;
end;""",
    "integral-keys-beside-a-window": """@info(name='q')
from every e1=B -> not A[k == e1.k and (e1.n / 2) > n] for 700 milliseconds
select e1.k, e1.n, eventTimestamp() as at insert into O;
@info(name='w')
from A#window.time(500 milliseconds)
select k, count() as c group by k insert all events into W;""",
}


def _events(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    ts = 1_000
    for i in range(count):
        ts += rng.choice((0, 100, 200, 300, 400, 700, 1_100))  # waits met exactly too
        when = ts - rng.choice((0, 0, 0, 0, 0, 300, 2_500))  # ties, and some go back
        stream = rng.choice("AABBC")
        if stream == "C":
            events.append({"stream": "C", "timestamp": when, "data": [i]})
            continue
        k = rng.choice((None, 0, 1, 2, 2, 3))
        v = rng.choice((None, -1.0, 0.0, 3.5, 9.0, 20.0))
        s = rng.choice((None, "x", "y", "y"))
        n = rng.choice((None, 0, 1, 5, 7, 12))
        events.append({"stream": stream, "timestamp": when, "data": [k, v, s, n]})
    return events


SCHEMAS = {"A": [["k", "INT"], ["v", "DOUBLE"], ["s", "STRING"], ["n", "LONG"]],
           "B": [["k", "LONG"], ["v", "DOUBLE"], ["s", "STRING"], ["n", "LONG"]],
           "C": [["x", "INT"]]}


def test_the_java_absent_pattern_equals_the_runtime(spark: object) -> None:
    app = STREAMS + combined(APPS)
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    operators = {c.query: c.operator for c in plan.queries}
    assert {q for q, op in operators.items() if op == "jvm-absent"} == \
        {f"q{i}" for i in range(len(APPS))}, operators
    for seed in (5, 6):
        equals_the_runtime(app, _events(seed, 220), SCHEMAS)


def test_the_pattern_runs_in_the_jvm(spark: Any) -> None:
    assert_runs_in_the_jvm(spark, STREAMS + APPS["heartbeat"])


@pytest.mark.parametrize("query", [
    # an absent state that is not the last, a logical absent state, within, a sequence
    "from every e1=A -> not B[k == e1.k] for 1 sec -> e2=A select e1.k insert into O;",
    "from every e1=A -> not B[k == e1.k] and e2=C select e1.k insert into O;",
    "from every e1=A -> not B for 1 sec within 5 sec select e1.k insert into O;",
    "from every e1=A, not B for 1 sec select e1.k insert into O;",
    # selecting what is not e1's, a function the operator does not evaluate in its filter
    "from every e1=A -> not B for 1 sec select e1.k, currentTimeMillis() as t "
    "insert into O;",
    "partition with (k < 2 as 'low' or k >= 2 as 'high' of A) begin "
    "from every e1=A -> not A for 1 sec select e1.k insert into O; end;",
])
def test_other_shapes_stay_in_the_runtime(query: str) -> None:
    analyzed = check(STREAMS + query)
    layout = input_layout(analyzed)
    assert plan_absent(analyzed, list(analyzed.queries), layout) is None, query


TIMERS_APP = STREAMS + """@info(name='q')
from every e1=A -> not B[k == e1.k] for 1 sec
select e1.k, eventTimestamp() as at insert into O;
partition with (k of A) begin
@info(name='p')
from every e1=A -> not A[v > 10.0] for 1 sec
select e1.k, eventTimestamp() as at insert into P;
end;
@info(name='after') from O select k insert into Z;
@info(name='after-keyed') from P select k insert into Z;
@info(name='beside') from C select x as k insert into Z;
"""


def _scenarios() -> list[dict[str, Any]]:
    """Runs of rows, 100 s apart, each where the runtime's timers decide when a match goes
    out: a late match's timer held back in the FIFO behind a kill's, then behind a re-armed
    timer; a match due before the clock whose timer no late row fires (``Z`` interleaves
    the outputs with ``C``'s rows, so the row that sends it shows); and keys of a partition
    whose timers fall due together (``P``, into ``Z`` too)."""
    def row(stream: str, ts: int, data: list[Any]) -> dict[str, Any]:
        return {"stream": stream, "timestamp": ts, "data": data}

    def a(ts: int, k: int) -> dict[str, Any]:
        return row("A", ts, [k, 1.0, "x", 1])

    def b(ts: int, k: int) -> dict[str, Any]:
        return row("B", ts, [k, 1.0, "x", 1])

    def c(ts: int) -> dict[str, Any]:
        return row("C", ts, [ts])

    kill_blocks = [a(10_000, 1), b(10_100, 1), c(11_050), a(10_050, 2), c(11_080),
                   c(11_200)]
    rearm_blocks = [a(110_000, 1), b(109_000, 1), c(111_000), a(110_500, 2), c(111_600),
                    c(112_100)]
    late_rows = [a(210_000, 1), c(212_000), a(210_500, 2), c(211_600), c(212_500)]
    # two keys due at the same time: the reference fires one key per time, the other at
    # the clock's next move
    same_time = [a(310_000, 3), a(310_000, 4), a(310_000, 5), c(311_500), c(311_600),
                 c(311_700)]
    return kill_blocks + rearm_blocks + late_rows + same_time


def test_timers_fire_in_the_runtimes_order(spark: object) -> None:
    """The runtime's FIFO of timers, kills' and re-armed ones included, and no timer on a
    late row: each shows in when (and at which row) a match goes out."""
    equals_the_runtime(TIMERS_APP, _scenarios(), SCHEMAS)
