"""Analysis of on-demand (store) queries: scopes, outputs, hidden ``order by`` attributes,
and the faults the reference rejects."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from eddy.lang import SiddhiAppError, check, parse
from eddy.lang.ast import Attribute, AttrType, OrderByAttribute, Variable
from eddy.lang.on_demand import analyze_on_demand, check_on_demand
from eddy.lang.parser import parse_on_demand
from eddy.lang.semantic import AnalyzedApp

APP = """@app:playback
define stream S (k string, v int, w double);
define table T (k string, v int, w double);
define window W (k string, v int) length(3);
define aggregation A from S select k, sum(v) as total group by k aggregate every sec ... min;
from S insert into T;
from S select k, v insert into W;
"""


@pytest.fixture(scope="module")
def analyzed() -> AnalyzedApp:
    return check(APP)


def names(attributes: Sequence[Attribute]) -> list[str]:
    return [a.name for a in attributes]


def types(attributes: Sequence[Attribute]) -> list[AttrType]:
    return [a.type for a in attributes]


# -- finds ------------------------------------------------------------------------------------

def test_find_selects_over_the_table(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "from T on v > 1 select k, v * 2 as twice")
    assert result.kind == "find" and result.store.name == "T"
    assert names(result.outputs) == ["k", "twice"] and result.visible == 2
    assert types(result.outputs) == [AttrType.STRING, AttrType.INT]
    assert result.query.input is not None and result.query.input.on is not None
    assert result.type_of(result.query.input.on) == AttrType.BOOL


def test_find_without_select_selects_every_column(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "from T")
    assert names(result.outputs) == ["k", "v", "w"] and result.visible == 3


def test_an_alias_qualifies_the_store(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "from T as t on t.v > 1 select t.k")
    assert names(result.outputs) == ["k"]
    assert {"T", "t"} <= result.scope.sources[0].refs


def test_aggregates_group_by_having(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(
        analyzed, "from T select k, sum(w) as total, count() as n group by k having n > 1")
    assert result.aggregates
    assert types(result.outputs) == [AttrType.STRING, AttrType.DOUBLE, AttrType.LONG]


def test_order_by_an_unselected_attribute_is_a_hidden_output(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "from T on k == 'a' select k order by w desc")
    assert names(result.outputs) == ["k", "_order0"] and result.visible == 1
    assert result.outputs[1].type == AttrType.DOUBLE
    order = result.query.selector.order_by
    assert order == (OrderByAttribute(Variable("_order0"), descending=True),)


def test_order_by_a_selected_attribute_needs_nothing_hidden(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "from T select k, v order by v")
    assert result.visible == len(result.outputs) == 2


def test_windows_and_aggregations_can_be_read(analyzed: AnalyzedApp) -> None:
    assert check_on_demand(analyzed, "from W on v > 1 select k").store.kind == "window"
    found = check_on_demand(analyzed, "from A within 0L, 10000L per 'seconds' select k, total")
    assert found.store.kind == "aggregation"


# -- mutations --------------------------------------------------------------------------------

def test_insert_selects_constants_from_an_empty_input(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "select 'x' as k, 1 as v, 2.0 as w insert into T")
    assert result.kind == "insert"
    assert result.scope.sources[0].attributes == ()
    assert names(result.outputs) == ["k", "v", "w"]


def test_delete_without_select_selects_the_tables_columns(analyzed: AnalyzedApp) -> None:
    result = check_on_demand(analyzed, "delete T on T.v == 2")
    assert result.kind == "delete"
    assert names(result.outputs) == ["k", "v", "w"]
    assert result.target_scope is not None


def test_update_and_update_or_insert(analyzed: AnalyzedApp) -> None:
    assert check_on_demand(analyzed, "update T set T.v = 30 on T.k == 'c'").kind == "update"
    result = check_on_demand(
        analyzed, "select 'a' as k, 1 as v, 0.5 as w update or insert into T "
                  "set T.v = v on T.k == k")
    assert result.kind == "update_or_insert"


def test_analyze_on_demand_takes_a_parsed_query(analyzed: AnalyzedApp) -> None:
    result = analyze_on_demand(analyzed, parse_on_demand("from T select count() as n"))
    assert types(result.outputs) == [AttrType.LONG]


# -- faults -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("query", "fragment"), [
    ("from Nope select k", "'Nope' is not defined"),
    ("from S select k", "'S' is a stream"),
    ("from T select nope", "'nope' does not exist"),
    ("from T on v select k", "must be a condition"),
    ("from T within 0L, 1L per 'seconds' select k", "only to aggregations"),
    ("select 'x' as k insert into T", "writes (k string) into table 'T'"),
    ("select 'x' as k, 1 as v, 1.0 as w insert into S", "needs a table"),
    ("select k insert into T", "'k' does not exist"),
    ("update T set T.v = 'x' on T.k == 'a'", "column 'v' is INT"),
    ("delete W on W.v == 1", "needs a table"),
])
def test_faults_are_reported(analyzed: AnalyzedApp, query: str, fragment: str) -> None:
    with pytest.raises(SiddhiAppError) as raised:
        check_on_demand(analyzed, query)
    assert fragment in raised.value.message
    assert raised.value.source == query


def test_the_app_is_left_untouched(analyzed: AnalyzedApp) -> None:
    before = dict(analyzed.types)
    check_on_demand(analyzed, "from T select k order by w")
    assert analyzed.types == before
    assert parse(APP).definitions == analyzed.app.definitions
