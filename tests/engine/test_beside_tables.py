"""Queries that read no table run in their own operators in an app that keeps tables.

A table (or named window, or aggregation) is state only the per-event runtime holds, and
on-demand queries read only that state; so a query that neither reads nor writes it (not
even by ``in``) runs in the Java window aggregate, followed-by or the window join beside the
runtime, which keeps the tables, runs the queries that touch them and answers the on-demand
queries. Random events and on-demand queries (reads and mutations) through ``eddy.replay``
at micro-batches of 7 and all must give the per-event runtime's outputs and answers, event
for event.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from conformance import Case, compare_case

from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.run.replay import replay
from eddy.engine.spark.jvm_classes import bridge_jar
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check
from eddy.runtime.driver import collect
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, sort_outputs

pytestmark = pytest.mark.skipif(bridge_jar() is None, reason="needs a JDK to build eddy's "
                                "Java operators")

APP = """@app:playback
define stream S (k string, v int);
define stream U (k string, w int);
define table T (k string, v int);
@info(name='keep') from S[v > 2] insert into T;
@info(name='win') from S#window.time(300 milliseconds)
select k, sum(v) as total, count() as n group by k insert all events into Totals;
@info(name='pat') from every e1=S -> e2=S[e1.k == k and v > e1.v]
select e1.v as first, e2.v as second insert into Rises;
@info(name='join') from S#window.length(4) join U#window.length(3) on S.k == U.k
select S.k as k, S.v as v, U.w as w insert into Pairs;
@info(name='in-table') from S[(T.k == k) in T]#window.length(3)
select k, count() as n group by k insert into Known;
"""
SCHEMAS = {"S": [["k", "STRING"], ["v", "INT"]], "U": [["k", "STRING"], ["w", "INT"]]}
ON_DEMAND = ("from T select k, v", "from T on v > 3 select count() as n",
             "delete T on T.v == 4", "update T set T.v = 9 on T.k == 'b'")


def _inputs(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    inputs: list[dict[str, Any]] = []
    ts = 1_000
    for _ in range(count):
        if rng.random() < 0.15:
            inputs.append({"store_query": rng.choice(ON_DEMAND)})
            continue
        ts += rng.choice((0, 50, 120, 400))
        inputs.append({"stream": rng.choice("SSU"), "timestamp": ts,
                       "data": [rng.choice("abc"), rng.randint(1, 6)]})
    return inputs


def _runtime_case(inputs: list[dict[str, Any]]) -> Case:
    """The per-event runtime's outputs, and its answers to the on-demand queries."""
    analyzed = check(APP)
    runtime = build_runtime(analyzed)
    outputs, answers = [], []
    for i, item in enumerate(inputs):
        if "store_query" in item:
            rows = [list(row) for row in runtime.store_query(item["store_query"])]
            answers.append({"input_index": i, "ordered": False, "rows": rows})
        else:
            outputs += runtime.process([InputEvent(i, item["timestamp"], item["stream"],
                                                   tuple(item["data"]))])
    streams, queries = collect(analyzed, sort_outputs(outputs))
    return Case("beside-tables", "table", APP, inputs, streams, queries, answers, SCHEMAS,
                True, None, Path("beside-tables"))


def test_queries_beside_tables_equal_the_runtime(spark: object) -> None:
    analyzed = check(APP)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    operators = {c.query: c.operator for c in plan.queries}
    assert operators == {"keep": "runtime", "win": "jvm-window-aggregate",
                         "pat": "jvm-followed-by", "join": "window-join",
                         "in-table": "runtime"}, operators
    inputs = _inputs(7, 120)
    case = _runtime_case(inputs)
    assert all(case.expected.get(s) for s in ("Totals", "Rises", "Pairs", "Known"))
    assert any(answer["rows"] for answer in case.expected_store)
    for size in (7, 0):
        result = replay(APP, inputs, batch_size=size)
        problems = compare_case(case, result.streams, result.queries, result.store)
        assert not problems, f"batch size {size or 'all'}:\n" + "\n".join(problems)
