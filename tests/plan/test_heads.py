"""Which queries read their input through the filter that fills it
(:mod:`eddy.plan.physical.heads`): the planner's choices, Spark-free."""

from __future__ import annotations

import pytest

from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check
from eddy.plan.physical.heads import fed_stream

STREAMS = "define stream S (k string, v double, n int);\ndefine stream R (k string);\n"


def operators(queries: str) -> dict[str, str]:
    analyzed = check(STREAMS + queries)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    return {c.query: c.operator for c in plan.queries}


def test_a_window_reads_through_a_filter() -> None:
    analyzed = check(STREAMS + """
@info(name = 'f') from S[v > 0] select k as key, v * 2 as w insert into X;
@info(name = 'q') from X#window.length(3) select key, sum(w) as total group by key
insert into O;""")
    fed = fed_stream(analyzed, analyzed.query("q"))
    assert fed is not None and (fed.head.id, fed.stream, fed.source) == ("f", "X", "S")
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert plan.choice("f").operator == "spark-sql"
    assert "read through f's filter" in plan.choice("q").reason
    assert plan.choice("q").operator in ("jvm-window-aggregate", "window-aggregate")


def test_a_chain_of_filters_feeds_a_window() -> None:
    analyzed = check(STREAMS + """
@info(name = 'f') from S[v > 0] select k, v insert into A;
@info(name = 'g') from A[v < 10] select k as key, v * 2 as w insert into X;
@info(name = 'q') from X#window.length(3) select key, sum(w) as total group by key
insert into O;""")
    fed = fed_stream(analyzed, analyzed.query("q"))
    assert fed is not None and [h.id for h in fed.heads] == ["f", "g"] and fed.source == "S"
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert [plan.choice(q).operator for q in "fg"] == ["spark-sql", "spark-sql"]
    assert "read through g's filter" in plan.choice("q").reason


@pytest.mark.parametrize("queries", [
    # a value that varies would be computed again for the window
    """@info(name = 'f') from S select k, UUID() as id insert into X;
@info(name = 'q') from X#window.length(2) select id, count() as c insert into O;""",
    # the window also reads the head's input: one row cannot be two events
    """@info(name = 'f') from S[v > 0] select k insert into X;
@info(name = 'q') from S#window.length(2) as a join X#window.length(2) as b on a.k == b.k
select a.k insert into O;""",
    # two queries fill the stream
    """@info(name = 'f') from S[v > 0] select k insert into X;
@info(name = 'g') from R select k insert into X;
@info(name = 'q') from X#window.length(2) select k, count() as c insert into O;""",
])
def test_what_is_not_read_through(queries: str) -> None:
    assert operators(queries)["q"] == "runtime"
