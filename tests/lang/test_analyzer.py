"""Semantic analysis against the conformance cases and hand-written faults."""

from __future__ import annotations

import pytest
from conformance import Case, load_cases

from eddy import SiddhiAppError, check

VALID = [c for c in load_cases() if c.expected_error is None]
SEMANTIC = [c for c in load_cases() if c.expected_error and c.expected_error["kind"] == "semantic"]


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.name)
def test_valid_case_schemas(case: Case) -> None:
    analyzed = check(case.app)
    for stream, schema in case.schemas.items():
        assert stream in analyzed.streams, f"{stream} not known"
        assert [list(a) for a in analyzed.streams[stream].schema()] == schema, stream


@pytest.mark.parametrize("case", SEMANTIC, ids=lambda c: c.name)
def test_invalid_case_rejected_at_element(case: Case) -> None:
    expected = case.expected_error
    assert expected is not None
    with pytest.raises(SiddhiAppError) as caught:
        check(case.app)
    error = caught.value
    assert error.kind == "semantic"
    assert error.line == expected["line"], error.render()
    if expected.get("end_line") == expected["line"]:
        assert expected["column"] <= error.column < expected["end_column"], error.render()
    else:
        assert error.column >= expected["column"], error.render()


def _fault(app: str) -> SiddhiAppError:
    with pytest.raises(SiddhiAppError) as caught:
        check(app, "t.siddhi")
    return caught.value


def test_undefined_stream_suggests_nearest_name() -> None:
    error = _fault("define stream TempStream (roomNo int, temp double);\n"
                   "from TempStrem[temp > 30] select roomNo insert into O;")
    assert (error.line, error.column, error.end_column) == (2, 5, 14)
    assert "'TempStrem'" in error.message
    assert error.hint is not None and "TempStream" in error.hint and "line 1" in error.hint
    rendered = error.render()
    assert rendered.startswith("t.siddhi:2:5: error: stream 'TempStrem' is not defined")
    assert "     ^^^^^^^^^" in rendered


def test_every_fault_is_reported() -> None:
    error = _fault("define stream S (a int);\n"
                   "from S select b insert into O1;\n"
                   "from X select a insert into O2;\n")
    assert [e.line for e in error.errors] == [2, 3]


def test_faulty_producer_does_not_cascade() -> None:
    error = _fault("define stream S (a int);\n"
                   "from S select nope insert into Mid;\n"
                   "from Mid select nope insert into Out;\n")
    assert len(error.errors) == 1 and error.line == 2


def test_query_order_does_not_matter() -> None:
    analyzed = check("define stream S (a int);\n"
                     "from Mid select a * 2L as b insert into Out;\n"
                     "from S select a insert into Mid;\n")
    assert analyzed.streams["Out"].schema() == [("b", "LONG")]


def test_type_promotion_and_aggregates() -> None:
    analyzed = check(
        "define stream S (i int, l long, f float, d double, s string);\n"
        "from S#window.length(5) select i * f as a, i + l as b, i / i as c, sum(i) as d1, "
        "sum(d) as d2, avg(i) as e, count() as n, max(d) as m, stdDev(f) as sd, "
        "distinctCount(s) as dc insert into O;")
    assert analyzed.streams["O"].schema() == [
        ("a", "FLOAT"), ("b", "LONG"), ("c", "INT"), ("d1", "LONG"), ("d2", "DOUBLE"),
        ("e", "DOUBLE"), ("n", "LONG"), ("m", "DOUBLE"), ("sd", "DOUBLE"), ("dc", "LONG")]


@pytest.mark.parametrize(("app", "words"), [
    ("define stream S (a int, s string);\nfrom S[s > 1] select a insert into O;", "'>'"),
    ("define stream S (a int, s string);\nfrom S[a] select a insert into O;", "BOOL"),
    ("define stream S (a int, s string);\nfrom S select a + s as x insert into O;", "numbers"),
    ("define stream S (a int);\nfrom S[sum(a) > 1] select a insert into O;", "aggregate"),
    ("define stream S (a int);\nfrom S#window.lenght(2) select a insert into O;", "length"),
    ("define stream S (a int);\nfrom S select foo(a) as x insert into O;", "'foo'"),
    ("define stream S (a int);\ndefine table T (a int);\nfrom T select a insert into O;",
     "table 'T'"),
    ("define stream S (a int);\nfrom S#window.length(2) join S#window.length(2) "
     "on a == a select a insert into O;", "both sides"),
    ("define stream S (a int);\ndefine stream S (a long);", "already defined"),
    ("define stream S (a int);\nfrom S select a, a insert into O;", "twice"),
    ("define stream S (a int);\ndefine stream O (a string);\nfrom S select a insert into O;",
     "defined at line 2"),
    ("define stream S (a int);\nfrom S delete T on a == 1;", "only tables"),
    ("define stream S (a int);\npartition with (a of S) begin from #X select a insert into O; "
     "end;", "'#X'"),
])
def test_semantic_faults_name_the_problem(app: str, words: str) -> None:
    error = _fault(app)
    assert error.kind == "semantic"
    assert words in error.message + (error.hint or "")


def test_pattern_references_and_tables() -> None:
    analyzed = check(
        "define stream A (k string, v double);\n"
        "define stream B (k string, v double);\n"
        "define table T (k string, total double);\n"
        "from every e1=A -> e2=B[k == e1.k and v > e1.v]<2:> within 1 min\n"
        "select e1.k, e2[0].v as first, e2[last].v as last insert into P;\n"
        "from A[(T.k == k) in T] select k, v as total update or insert into T on T.k == k;\n")
    assert analyzed.streams["P"].schema() == [("k", "STRING"), ("first", "DOUBLE"),
                                              ("last", "DOUBLE")]
    assert [q.target_kind for q in analyzed.queries] == ["stream", "table"]


def test_aggregation_definition_takes_incremental_aggregators_only() -> None:
    error = _fault("define stream S (k string, v double, ts long);\n"
                   "define aggregation A from S select k, stdDev(v) as sd group by k\n"
                   "aggregate by ts every sec ... min;")
    assert error.line == 2 and "stdDev" in error.message
