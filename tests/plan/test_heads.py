"""A stateful query read through the filter that fills its input
(:mod:`eddy.plan.physical.heads`): the composed query, and where composing stops."""

from __future__ import annotations

import pytest

from eddy.lang import check
from eddy.lang.formatter import format_query
from eddy.plan.physical.heads import compose, entry, producer

STREAMS = "define stream S (k string, v double, n int);\n"


def composed(head: str, query: str) -> str | None:
    """The second query of the app ``head; query``, read through the first, as text."""
    analyzed = check(STREAMS + head + "\n@info(name = 'q')\n" + query)
    info = analyzed.query("q")
    first = producer(analyzed, info)
    assert first is not None and entry(first) == (1, first.index, 0, 1)
    app = compose(analyzed, info, first)
    return None if app is None else " ".join(format_query(app.query("q").query).split())


@pytest.mark.parametrize(("head", "query", "expected"), [
    ("from S[v > 0] select k as key, v insert into X;",
     "from X[v < 10]#window.length(3) select key, sum(v) as total group by key "
     "having total > 5 insert into O;",
     "@info(name='q') from S[v > 0][v < 10]#window.length(3) select k as key, "
     "sum(v) as total group by k having total > 5 insert into O;"),
    ("from S as s select * insert into X;",
     "from X#window.time(1 sec) as x select x.k, max(n) as top insert all events into O;",
     "@info(name='q') from S#window.time(1 sec) as s select k as k, max(n) as top "
     "insert all events into O;"),
    ("from S select k, v * 2 as w insert into X;",
     "from X#window.length(2) select avg(w) as a insert into O;",
     "@info(name='q') from S#window.length(2) select avg(v * 2) as a insert into O;"),
])
def test_the_query_reads_the_filters_input(head: str, query: str, expected: str) -> None:
    assert composed(head, query) == expected


@pytest.mark.parametrize(("head", "query"), [
    # a group by of a computed attribute is no attribute of S
    ("from S select k, n + 1 as m insert into X;",
     "from X#window.length(2) select m, count() as c group by m insert into O;"),
    # a function computed again need not give what the filter emitted
    ("from S select k, UUID() as id insert into X;",
     "from X#window.length(2) select id, count() as c insert into O;"),
])
def test_what_does_not_compose(head: str, query: str) -> None:
    assert composed(head, query) is None
