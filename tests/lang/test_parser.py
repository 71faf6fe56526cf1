"""The SiddhiQL parser: text in, AST (or SiddhiAppError) out.

What is checked, in order:

1. every conformance app parses, and the syntax-error cases fail at exactly the reference
   engine's line and column;
2. the apps in ``tests/lang/apps`` (the seed documents' apps among them) parse;
3. one construct at a time, the AST the parser builds, spans included;
4. syntax errors: positions, messages for people, several errors from one app;
5. the grammar stays conflict-free LALR(1), and only SiddhiAppError ever escapes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eddy.lang.ast import (
    AbsentStreamStateElement, AggregationDefinition, AllAttributes, AnonymousInputStream, AttrType,
    BinaryOperation, Constant, CountStateElement, Definition, DeleteStream, EveryStateElement,
    Filter, FunctionCall, FunctionDefinition, In, InsertIntoStream, IsNull, IsNullStream,
    JoinInputStream, LogicalStateElement, NextStateElement, Node, Not, OnDemandQuery,
    Partition, Query, RangePartitionType, ReturnStream, Selector, SetAssignment, SiddhiApp,
    SingleInputStream, StateInputStream, StoreInput, StreamDefinition, StreamFunction,
    StreamStateElement, TableDefinition, TimeConstant, TriggerDefinition, UpdateOrInsertStream,
    UpdateStream, ValuePartitionType, Variable, Window, WindowDefinition,
)
from eddy.lang.errors import NO_SPAN, SiddhiAppError, Span
from eddy.lang.parser import GRAMMAR_PATH, parse, parse_expression, parse_on_demand

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = Path(os.environ.get("EDDY_CONFORMANCE_DIR",
                                      REPO_ROOT.parent / "shared/conformance/cases"))
APPS_DIR = Path(__file__).resolve().parent / "apps"


def _cases() -> list[Path]:
    return sorted(CONFORMANCE_DIR.glob("*.json")) if CONFORMANCE_DIR.is_dir() else []


def query(text: str) -> Query:
    """The first query of an app made of ``text`` after a stream definition."""
    app = parse("define stream S (a int, b double, c string);\n" + text)
    element = app.elements[0]
    assert isinstance(element, Query)
    return element


def syntax_error(text: str) -> SiddhiAppError:
    with pytest.raises(SiddhiAppError) as caught:
        parse(text)
    assert caught.value.kind == "syntax"
    return caught.value


def v(attribute: str, stream: str | None = None, **kw: Any) -> Variable:
    return Variable(attribute, stream, **kw)


def i(value: int) -> Constant:
    return Constant(value, AttrType.INT)


def stream(name: str, *handlers: Any, **kw: Any) -> SingleInputStream:
    return SingleInputStream(name, tuple(handlers), **kw)


# ---------------------------------------------------------------------------------------------
# 1-2. Conformance apps and example apps
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", _cases(), ids=lambda p: p.stem)
def test_conformance_app(path: Path) -> None:
    case = json.loads(path.read_text())
    expected = case.get("expected_error")
    if expected is not None and expected["kind"] == "syntax":
        error = syntax_error(case["app"])
        assert (error.line, error.column) == (expected["line"], expected["column"])
        return
    assert isinstance(parse(case["app"]), SiddhiApp)
    for item in case.get("inputs", []):
        if "store_query" in item:
            assert isinstance(parse_on_demand(item["store_query"]), OnDemandQuery)


def test_conformance_cases_are_present() -> None:
    if not CONFORMANCE_DIR.is_dir():
        pytest.skip(f"no conformance cases at {CONFORMANCE_DIR}")
    assert len(_cases()) > 50


@pytest.mark.parametrize("path", sorted(APPS_DIR.glob("*.siddhi")), ids=lambda p: p.stem)
def test_example_app(path: Path) -> None:
    assert parse(path.read_text(), filename=str(path)).definitions


def test_seed_distributed_app() -> None:
    app = parse((APPS_DIR / "seed_distributed.siddhi").read_text())
    names = [q.name for q in app.queries]
    assert names == ["query-1", "query-2", "query-3"]
    dist = app.queries[2].annotations[1]
    assert dist.is_named("dist") and dist.get("parallel") == "2"
    pattern = app.queries[1].input
    assert isinstance(pattern, StateInputStream) and pattern.within == TimeConstant(600_000)


# ---------------------------------------------------------------------------------------------
# 3. The AST, one construct at a time
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value, attr_type", [
    ("1", 1, AttrType.INT), ("-5", -5, AttrType.INT), ("1L", 1, AttrType.LONG),
    ("100l", 100, AttrType.LONG), ("1f", 1.0, AttrType.FLOAT), ("1.5F", 1.5, AttrType.FLOAT),
    ("1.0", 1.0, AttrType.DOUBLE), ("1.5d", 1.5, AttrType.DOUBLE), ("1e3", 1000.0, AttrType.DOUBLE),
    (".5", 0.5, AttrType.DOUBLE), ("-2.5", -2.5, AttrType.DOUBLE), ("'a'", "a", AttrType.STRING),
    ('"it\'s"', "it's", AttrType.STRING), ('"""two\nlines"""', "two\nlines", AttrType.STRING),
    ("true", True, AttrType.BOOL), ("FALSE", False, AttrType.BOOL), ("null", None, AttrType.OBJECT),
    ("-2147483648", -2147483648, AttrType.INT), ("9223372036854775807L", 2**63 - 1, AttrType.LONG),
])
def test_literals_and_their_types(text: str, value: int | float | str | bool | None,
                                  attr_type: AttrType) -> None:
    assert parse_expression(text) == Constant(value, attr_type)


@pytest.mark.parametrize("text, millis", [
    ("10 min", 600_000), ("1 sec", 1_000), ("2 hours", 7_200_000), ("500 millisec", 500),
    ("3 milliseconds", 3), ("1 hour 30 min", 5_400_000), ("1 week", 604_800_000),
    ("1 day", 86_400_000), ("1 month", 30 * 86_400_000), ("1 year", 365 * 86_400_000),
    ("2 MINUTES 5 Seconds", 125_000), ("1 minute", 60_000),
])
def test_time_constants(text: str, millis: int) -> None:
    assert parse_expression(text) == TimeConstant(millis)


@pytest.mark.parametrize("text, tree", [
    ("a + b * c", BinaryOperation("+", v("a"), BinaryOperation("*", v("b"), v("c")))),
    ("a - b - c", BinaryOperation("-", BinaryOperation("-", v("a"), v("b")), v("c"))),
    ("not a == b", BinaryOperation("==", Not(v("a")), v("b"))),
    ("not a * b", BinaryOperation("*", Not(v("a")), v("b"))),
    ("a < b == c >= d", BinaryOperation("==", BinaryOperation("<", v("a"), v("b")),
                                        BinaryOperation(">=", v("c"), v("d")))),
    ("a or b and c", BinaryOperation("or", v("a"), BinaryOperation("and", v("b"), v("c")))),
    ("a == b in T and c", BinaryOperation("and", In(BinaryOperation("==", v("a"), v("b")), "T"),
                                          v("c"))),
    ("(a + b) % 2", BinaryOperation("%", BinaryOperation("+", v("a"), v("b")), i(2))),
    ("a - -1", BinaryOperation("-", v("a"), i(-1))),
    ("a + b is null", BinaryOperation("+", v("a"), IsNull(v("b")))),
])
def test_operator_precedence(text: str, tree: object) -> None:
    assert parse_expression(text) == tree


@pytest.mark.parametrize("text, column", [("-a", 1), ("- a", 2), ("+a", 1), ("-(a + b)", 2),
                                          ("-f(x)", 1), ("2 * -a", 5), ("-1 sec", 1)])
def test_a_sign_precedes_only_a_number_literal(text: str, column: int) -> None:
    with pytest.raises(SiddhiAppError) as caught:
        parse_expression(text)
    assert caught.value.kind == "syntax" and caught.value.column == column
    assert "can only precede a number literal" in caught.value.message


@pytest.mark.parametrize("text, tree", [
    ("x", v("x")), ("S.x", v("x", "S")), ("e1[0].x", v("x", "e1", stream_index=0)),
    ("e1[last].x", v("x", "e1", stream_index=-1)),
    ("e1[last-1].x", v("x", "e1", stream_index=-2)), ("#S.x", v("x", "S", inner=True)),
    ("!S.x", v("x", "S", fault=True)), ("`from`", v("from")),
    ("e1[0] is null", IsNullStream("e1", 0)), ("#S is null", IsNullStream("S", inner=True)),
    ("e1 is null", IsNull(v("e1"))), ("f(a) is null", IsNull(FunctionCall(None, "f", (v("a"),)))),
    ("count()", FunctionCall(None, "count")), ("count(*)", FunctionCall(None, "count", (AllAttributes(),))),
    ("str:concat(a, 'b')", FunctionCall("str", "concat", (v("a"), Constant("b", AttrType.STRING)))),
    ("max(min)", FunctionCall(None, "max", (v("min"),))),
    ("x in T", In(v("x"), "T")),
])
def test_references_and_calls(text: str, tree: object) -> None:
    assert parse_expression(text) == tree


def test_single_stream_handlers_in_written_order() -> None:
    q = query("from S[a > 1]#str:tokenize(c)#window.time(10 min)[b < 2.0] as s\n"
              "select * insert into O;")
    assert q.input == stream(
        "S", Filter(BinaryOperation(">", v("a"), i(1))),
        StreamFunction("str", "tokenize", (v("c"),)),
        Window(None, "time", (TimeConstant(600_000),)),
        Filter(BinaryOperation("<", v("b"), Constant(2.0, AttrType.DOUBLE))), alias="s")
    assert q.selector.attributes is None
    inner = query("from #S select a insert into #T;")
    assert inner.input == stream("S", inner=True)
    assert inner.output == InsertIntoStream(target="T", inner=True)
    assert query("from !S select a insert into !T;").output == InsertIntoStream(target="T",
                                                                              fault=True)


@pytest.mark.parametrize("text, join_type, unidirectional", [
    ("from S as a join T as b", "join", None),
    ("from S as a inner join T as b", "inner join", None),
    ("from S as a LEFT OUTER JOIN T as b", "left outer join", None),
    ("from S as a right outer join T as b", "right outer join", None),
    ("from S as a full outer join T as b", "full outer join", None),
    ("from S as a unidirectional join T as b", "join", "left"),
    ("from S as a join T as b unidirectional", "join", "right"),
])
def test_joins(text: str, join_type: str, unidirectional: str | None) -> None:
    q = query(text + " on a.a == b.a select a.a insert into O;")
    assert q.input == JoinInputStream(stream("S", alias="a"), join_type,  # type: ignore[arg-type]
                                      stream("T", alias="b"),
                                      BinaryOperation("==", v("a", "a"), v("a", "b")),
                                      unidirectional)  # type: ignore[arg-type]


def test_join_with_windows_and_within_per() -> None:
    q = query("from S#window.length(2) join A on S.a == A.a within 1000L, 2000L per 'seconds'\n"
              "select S.a insert into O;")
    join = q.input
    assert isinstance(join, JoinInputStream)
    assert join.left.window == Window(None, "length", (i(2),))
    assert join.within == (Constant(1000, AttrType.LONG), Constant(2000, AttrType.LONG))
    assert join.per == Constant("seconds", AttrType.STRING)


def _state(text: str) -> StateInputStream:
    q = query(text + " select * insert into O;")
    assert isinstance(q.input, StateInputStream)
    return q.input


def ref(name: str | None, source: str = "S", *handlers: Any) -> StreamStateElement:
    return StreamStateElement(stream(source, *handlers), name)


@pytest.mark.parametrize("text, state", [
    ("from every e1=S -> e2=S[a > e1.a]",
     NextStateElement(EveryStateElement(ref("e1")),
                      ref("e2", "S", Filter(BinaryOperation(">", v("a"), v("a", "e1")))))),
    ("from every (e1=S -> e2=T)", EveryStateElement(NextStateElement(ref("e1"), ref("e2", "T")))),
    ("from e1=S -> e2=T -> e3=U",
     NextStateElement(ref("e1"), NextStateElement(ref("e2", "T"), ref("e3", "U")))),
    ("from (e1=S -> e2=T) -> e3=U",
     NextStateElement(NextStateElement(ref("e1"), ref("e2", "T")), ref("e3", "U"))),
    ("from e1=S<2:5>", CountStateElement(ref("e1"), 2, 5)),
    ("from e1=S<2:>", CountStateElement(ref("e1"), 2, None)),
    ("from e1=S<:5>", CountStateElement(ref("e1"), 0, 5)),
    ("from e1=S<3>", CountStateElement(ref("e1"), 3, 3)),
    ("from every e1=S and e2=T", EveryStateElement(LogicalStateElement(ref("e1"), "and",
                                                                       ref("e2", "T")))),
    ("from e1=S or e2=T", LogicalStateElement(ref("e1"), "or", ref("e2", "T"))),
    ("from not S for 5 sec", AbsentStreamStateElement(stream("S"), TimeConstant(5_000))),
    ("from not S and e2=T", LogicalStateElement(AbsentStreamStateElement(stream("S")), "and",
                                                ref("e2", "T"))),
    ("from e1=S -> not T[a == e1.a] for 1 min",
     NextStateElement(ref("e1"), AbsentStreamStateElement(
         stream("T", Filter(BinaryOperation("==", v("a"), v("a", "e1")))), TimeConstant(60_000)))),
    ("from every not S for 2 sec", EveryStateElement(
        AbsentStreamStateElement(stream("S"), TimeConstant(2_000)))),
    ("from S -> T", NextStateElement(ref(None), ref(None, "T"))),
])
def test_patterns(text: str, state: object) -> None:
    parsed = _state(text)
    assert parsed.kind == "pattern" and parsed.state == state


def test_pattern_within() -> None:
    assert _state("from e1=S -> e2=T within 10 min").within == TimeConstant(600_000)
    assert _state("from S[a > 1] within 1 sec").state == ref(
        None, "S", Filter(BinaryOperation(">", v("a"), i(1))))


@pytest.mark.parametrize("text, state", [
    ("from every e1=S, e2=S*, e3=T",
     NextStateElement(EveryStateElement(ref("e1")), NextStateElement(
         CountStateElement(ref("e2"), 0, None, "*"), ref("e3", "T")))),
    ("from e1=S+, e2=S?", NextStateElement(CountStateElement(ref("e1"), 1, None, "+"),
                                           CountStateElement(ref("e2"), 0, 1, "?"))),
    ("from e1=S<2:3>, e2=T", NextStateElement(CountStateElement(ref("e1"), 2, 3),
                                              ref("e2", "T"))),
    ("from S, T", NextStateElement(ref(None), ref(None, "T"))),
])
def test_sequences(text: str, state: object) -> None:
    parsed = _state(text)
    assert parsed.kind == "sequence" and parsed.state == state


def test_anonymous_input_stream() -> None:
    expected = AnonymousInputStream(Query((), stream("S"), query(
        "from S select a insert into O;").selector, ReturnStream()))
    assert query("from (from S select a return) select a insert into O;").input == expected
    assert query("from from S select a return select a insert into O;").input == expected


def test_selection_clauses() -> None:
    q = query("from S#window.length(5) select c, sum(a) as total group by c having total > 1\n"
              "order by total desc, c limit 5 offset 2 output last every 10 events\n"
              "insert expired events into O;")
    s = q.selector
    assert [a.rename for a in s.attributes or ()] == [None, "total"]
    assert s.group_by == (v("c"),) and s.having == BinaryOperation(">", v("total"), i(1))
    assert [(o.variable.attribute, o.descending, o.explicit) for o in s.order_by] == [
        ("total", True, True), ("c", False, False)]
    assert (s.limit, s.offset) == (i(5), i(2))
    assert q.output_rate is not None
    assert (q.output_rate.unit, q.output_rate.value, q.output_rate.type) == ("events", 10, "last")
    assert q.output == InsertIntoStream("expired", "O")


@pytest.mark.parametrize("rate, unit, value, kind", [
    ("output every 5 events", "events", 5, "all"),
    ("output first every 1 sec", "time", 1000, "first"),
    ("output all every 2 min", "time", 120_000, "all"),
    ("output snapshot every 1 hour", "snapshot", 3_600_000, "all"),
])
def test_output_rates(rate: str, unit: str, value: int, kind: str) -> None:
    q = query(f"from S select a {rate} insert into O;")
    assert q.output_rate is not None
    assert (q.output_rate.unit, q.output_rate.value, q.output_rate.type) == (unit, value, kind)


@pytest.mark.parametrize("output, expected", [
    ("insert into O", InsertIntoStream(target="O")),
    ("insert all events into O", InsertIntoStream("all", "O")),
    ("insert current events into O", InsertIntoStream("current", "O")),
    ("insert events into O", InsertIntoStream("current", "O")),
    ("delete T on T.a == a",
     DeleteStream(target="T", on=BinaryOperation("==", v("a", "T"), v("a")))),
    ("delete T for expired events on T.a == a",
     DeleteStream("expired", "T", BinaryOperation("==", v("a", "T"), v("a")))),
    ("update T set T.b = b + 1 on T.a == a", UpdateStream(
        target="T", set=(SetAssignment(v("b", "T"), BinaryOperation("+", v("b"), i(1))),),
        on=BinaryOperation("==", v("a", "T"), v("a")))),
    ("update or insert into T for all events on T.a == a",
     UpdateOrInsertStream("all", "T", None, BinaryOperation("==", v("a", "T"), v("a")))),
    ("return", ReturnStream()), ("return all events", ReturnStream("all")),
])
def test_outputs(output: str, expected: object) -> None:
    assert query(f"from S select a {output};").output == expected


def test_set_assignments() -> None:
    output = query("from S update or insert into T set T.b = b, T.c = 'x' on T.a == a;").output
    assert isinstance(output, UpdateOrInsertStream) and output.set is not None
    assert [(s.variable, s.value) for s in output.set] == [
        (v("b", "T"), v("b")), (v("c", "T"), Constant("x", AttrType.STRING))]


def test_partition_with_value_and_range() -> None:
    app = parse("define stream S (a int, c string);\n"
                "@info(name='p')\n"
                "partition with (c of S, a < 10 as 'low' or a >= 10 as 'high' of S)\n"
                "begin\n  from S select a insert into #I;\n  from #I select a insert into O;\nend;")
    p = app.elements[0]
    assert isinstance(p, Partition) and p.annotations[0].get("name") == "p"
    assert p.partition_types[0] == ValuePartitionType(v("c"), "S")
    ranges = p.partition_types[1]
    assert isinstance(ranges, RangePartitionType) and ranges.stream == "S"
    assert [(r.key, r.condition) for r in ranges.ranges] == [
        ("low", BinaryOperation("<", v("a"), i(10))),
        ("high", BinaryOperation(">=", v("a"), i(10)))]
    assert [q.output for q in p.queries] == [InsertIntoStream(target="I", inner=True),
                                             InsertIntoStream(target="O")]


@pytest.mark.parametrize("text, expected", [
    ("from T", OnDemandQuery(StoreInput("T"), Selector())),
    ("delete T on T.a == 1", OnDemandQuery(None, Selector(), DeleteStream(
        target="T", on=BinaryOperation("==", v("a", "T"), i(1))))),
])
def test_on_demand_forms_without_select(text: str, expected: OnDemandQuery) -> None:
    assert parse_on_demand(text) == expected


def test_on_demand_queries() -> None:
    find = parse_on_demand("from T as t on t.a > 1 within '2017-**', '2018-**' per 'days'\n"
                           "select a, count() as n group by a having n > 1 order by a limit 3;")
    assert find.input is not None and find.output is None
    assert (find.input.source, find.input.alias) == ("T", "t")
    assert find.input.per == Constant("days", AttrType.STRING) and len(find.input.within) == 2
    assert find.selector.limit == i(3)
    insert = parse_on_demand("select 'x' as a, 1 as b insert into T")
    assert insert.input is None and insert.output == InsertIntoStream(target="T")
    upsert = parse_on_demand("select 'x' as a update or insert into T set T.b = 2 on T.a == a")
    assert isinstance(upsert.output, UpdateOrInsertStream)
    update = parse_on_demand("update T set T.b = 2 on T.a == 'x';")
    assert isinstance(update.output, UpdateStream) and update.selector.attributes is None


def test_nested_annotations_with_dotted_keys() -> None:
    app = parse("""@App:name('X') @app:statistics(reporter='console', interval='5')
@source(type='http', receiver.url='http://0.0.0.0:8006/x',
        @map(type='json', @attributes(a='$.a', b="$.b"), @payload(\"\"\"{"a": "{{a}}"}\"\"\")))
@sink(type='log', @distribution(strategy='roundRobin', @destination(url='x')))
define stream S (a int, b string);
@store(type='rdbms', jdbc.url='jdbc:h2:mem:x', 'positional') @primaryKey('a', 'b') @index('b')
@purge(enable='true', interval='10 sec', @retentionPeriod(sec='120 sec', min='all'))
define table T (a int, b string);""")
    assert [a.name for a in app.annotations] == ["App:name", "app:statistics"]
    assert app.name == "X"
    source = app.definitions[0].annotations[0]
    assert source.get("receiver.url") == "http://0.0.0.0:8006/x"
    mapping = source.nested("map")[0]
    assert mapping.nested("attributes")[0].get("b") == "$.b"
    assert mapping.nested("payload")[0].positional == ('{"a": "{{a}}"}',)
    sink = app.definitions[0].annotations[1]
    assert sink.nested("distribution")[0].nested("destination")[0].get("url") == "x"
    store, key, index, purge = app.definitions[1].annotations
    assert store.get("jdbc.url") == "jdbc:h2:mem:x" and store.positional == ("positional",)
    assert key.positional == ("a", "b") and index.positional == ("b",)
    assert purge.nested("retentionPeriod")[0].get("min") == "all"


def test_trigger_function_window_aggregation_definitions() -> None:
    app = parse("""define stream S (k string, v double, ts long);
define trigger Five at every 5 sec;
define trigger Once at 'start';
define trigger Cron at '*/5 * * * * ?';
define function concat[JavaScript] return string {
    var s = data[0] + "}"; // a } in a comment
    if (s) { return s; } else { return "{"; }
};
define window W (k string, v double) time(1 min) output expired events;
define aggregation A from S[v > 0] select k, sum(v) as total group by k
    aggregate by ts every sec ... year;
define aggregation B from S select k, avg(v) as mean aggregate every sec, min, hour;""")
    five, once, cron, function, window, ranged, listed = app.definitions[1:]
    assert five == TriggerDefinition("Five", at_every=TimeConstant(5_000))
    assert isinstance(once, TriggerDefinition) and isinstance(cron, TriggerDefinition)
    assert (once.at, cron.at) == ("start", "*/5 * * * * ?")
    assert isinstance(function, FunctionDefinition) and function.language == "JavaScript"
    assert function.return_type is AttrType.STRING
    assert function.body == ('\n    var s = data[0] + "}"; // a } in a comment\n'
                             '    if (s) { return s; } else { return "{"; }\n')
    assert isinstance(window, WindowDefinition)
    assert window == WindowDefinition("W", attributes=window.attributes,
                                      window=Window(None, "time", (TimeConstant(60_000),)),
                                      output_event_type="expired")
    assert isinstance(ranged, AggregationDefinition) and ranged.is_range
    assert ranged.durations == ("SECONDS", "YEARS") and ranged.aggregate_by == v("ts")
    assert ranged.input == stream("S", Filter(BinaryOperation(">", v("v"), i(0))))
    assert isinstance(listed, AggregationDefinition) and not listed.is_range
    assert listed.durations == ("SECONDS", "MINUTES", "HOURS") and listed.aggregate_by is None


def test_comments_case_and_keywords_as_names() -> None:
    app = parse("""-- a line comment
// another one
/* a block
   comment */ DEFINE STREAM S (time long, value double, type string, events int, last int,
                             year int, min double, `from` string);
@Info(name='q') FROM S[value > 0] Select time, value, events, last, year, min(min) as m,
    `from` Insert Into O;  -- trailing
define table T (order string, group int);""")
    stream_definition = app.definitions[0]
    assert isinstance(stream_definition, StreamDefinition)
    assert [a.name for a in stream_definition.attributes] == [
        "time", "value", "type", "events", "last", "year", "min", "from"]
    attributes = app.queries[0].selector.attributes or ()
    assert [a.expression for a in attributes][:5] == [v("time"), v("value"), v("events"), v("last"),
                                                      v("year")]
    assert attributes[5].expression == FunctionCall(None, "min", (v("min"),))
    assert attributes[6].expression == v("from")
    table = app.definitions[1]
    assert isinstance(table, TableDefinition) and table.attributes[0].name == "order"


def test_definitions_and_elements_keep_their_order() -> None:
    app = parse("""define stream A (x int); define table T (x int);
from A select x insert into B;
partition with (x of A) begin from A select x insert into C; end;
define stream D (x int);
from D select x insert into E""")
    assert [d.name for d in app.definitions] == ["A", "T", "D"]
    assert [type(e) for e in app.elements] == [Query, Partition, Query]


def test_empty_and_comment_only_apps() -> None:
    assert parse("") == SiddhiApp((), (), ())
    assert parse("  -- nothing\n/* here */\n") == SiddhiApp((), (), ())


def test_spans() -> None:
    text = ("@app:playback\n"
            "define stream S (a int);\n"
            "from Missing select a insert into O;\n"
            "from S#window.length('three') select sum(a) as s\n"
            "  insert into P;\n")
    app = parse(text)
    assert app.definitions[0].span == Span(2, 0, 2, 23)
    assert app.definitions[0].attributes[0].span == Span(2, 17, 2, 22)  # type: ignore[attr-defined]
    first, second = app.queries
    assert first.input.span == Span(3, 5, 3, 12)
    assert first.output.span == Span(3, 22, 3, 35)
    assert first.selector.span == Span(3, 13, 3, 21)
    assert first.span == Span(3, 0, 3, 35)
    window = second.input.window  # type: ignore[attr-defined]
    assert window.span == Span(4, 6, 4, 29)
    assert window.args[0].span == Span(4, 21, 4, 28)
    total = (second.selector.attributes or ())[0]
    assert total.expression.span == Span(4, 37, 4, 43) and total.span == Span(4, 37, 4, 48)
    assert second.span == Span(4, 0, 5, 15)
    assert parse_expression("a  >\n -5").span == Span(1, 0, 2, 3)


def _nodes(value: object) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
        for field in dataclasses.fields(value):
            yield from _nodes(getattr(value, field.name))
    elif isinstance(value, tuple):
        for item in value:
            yield from _nodes(item)


def _spanned(text: str, span: Span) -> str:
    lines = text.split("\n")
    if span.line == span.end_line:
        return lines[span.line - 1][span.column:span.end_column]
    middle = lines[span.line:span.end_line - 1]
    return "\n".join([lines[span.line - 1][span.column:], *middle,
                      lines[span.end_line - 1][:span.end_column]])


@pytest.mark.parametrize("path", [p for p in _cases() if "syntax" not in p.stem]
                         + sorted(APPS_DIR.glob("*.siddhi")), ids=lambda p: p.stem)
def test_every_node_has_a_span_over_its_own_text(path: Path) -> None:
    text = json.loads(path.read_text())["app"] if path.suffix == ".json" else path.read_text()
    for node in _nodes(parse(text)):
        assert node.span != NO_SPAN, node
        covered = _spanned(text, node.span)
        assert (node.span.line, node.span.column) <= (node.span.end_line, node.span.end_column)
        if isinstance(node, Variable):
            assert covered.replace("`", "").endswith(node.attribute), (covered, node)
        elif isinstance(node, (Definition, Partition)):
            assert covered.startswith(("define", "partition", "@")), covered
        elif isinstance(node, Query):
            assert covered.startswith(("from", "@")), covered


# ---------------------------------------------------------------------------------------------
# 4. Syntax errors
# ---------------------------------------------------------------------------------------------

def test_misspelt_keyword_gets_a_suggestion() -> None:
    error = syntax_error("@app:playback\ndefine stream S (a int);\nfrom S selct a insert into O;\n")
    assert (error.line, error.column, error.end_column) == (3, 7, 12)
    assert error.message.startswith("unexpected 'selct'; expected one of: select, insert, delete,"
                                    " update, return, output")
    assert error.hint == "did you mean 'select'?"


def test_unclosed_bracket_names_the_opener() -> None:
    error = syntax_error("@app:playback\ndefine stream S (a int, b double);\n"
                         "from S[(a > 1 and b < 2.0]\nselect a insert into O;\n")
    assert (error.line, error.column) == (3, 25)
    assert error.message == "unexpected ']': '(' opened at line 3 column 7 is not closed"
    assert error.hint == "close it with ')'"
    at_end = syntax_error("define stream S (a int")
    assert at_end.message == "unexpected end of input: '(' opened at line 1 column 16 is not closed"


@pytest.mark.parametrize("text, line, column, message", [
    ("define stream S (a int)\nfrom S select a insert into O;", 2, 0,
     "unexpected 'from'; expected ';' or end of input"),
    ("define stream S (a int);\nfrom S select", 2, 13, "unexpected end of input; expected an "
                                                        "expression or '*'"),
    ("define stream S (a int);\nfrom S select 'abc insert into O;", 2, 14,
     "unclosed string: no closing ' on this line"),
    ("define stream S (a int);\nfrom S select a ^ 2 insert into O;", 2, 16,
     "unexpected character '^'"),
    ("define stream S (a int, a long);", 1, 24, "attribute 'a' is defined twice"),
    ("define stream S (a int);\nfrom e1=S -> e2=S* select * insert into O;", 2, 17,
     "'*', '+' and '?' are for sequences; a pattern counts with <n:m>"),
    ("define stream S (a int);\nfrom S#window.time(1 sec)#window.length(2) select * insert into O;",
     2, 25, "a stream can have only one window"),
    ("define stream S (a int);\nfrom e1=S#window.length(2) -> e2=S select * insert into O;", 2, 9,
     "a pattern or sequence input cannot have a window"),
    ("define stream S (a int);\nfrom not S for 1 sec -> not S for 1 sec select * insert into O;",
     2, 5, "a chain of only absent streams ('not …') has nothing to wait for"),
    ("define stream S (a int);\nfrom e1=S or not S select * insert into O;", 2, 13,
     "'not' in 'or' needs a waiting time here ('not S for 5 sec')"),
    ("define stream S (a int);\nfrom S select 2147483648 as x insert into O;", 2, 14,
     "integer literal out of range"),
    ("define stream S (a int);\nfrom S#window.time(30 min 1 hour) select * insert into O;", 2, 26,
     "a time value goes from the largest unit to the smallest, each unit once ('1 hour 30 min')"),
    ("define stream S (a int);\nfrom S as x outer join T select * insert into O;", 2, 12,
     "unexpected 'outer'; expected one of: select, insert, delete, update, return, output, join, "
     "full, inner, left, …"),
    ("define aggregation A from S select a aggregate every sec, week;", 1, 58,
     "unexpected 'week'; expected sec, min, hour, day, month or year"),
])
def test_syntax_error_positions_and_messages(text: str, line: int, column: int,
                                             message: str) -> None:
    error = syntax_error(text)
    assert (error.line, error.column, error.message) == (line, column, message)


def test_several_errors_are_collected_first_one_first() -> None:
    error = syntax_error("""define stream S (a int, b string);
from S selct a insert into O;
from S[a > ] select a insert into P;
define stream T (x int y int);
from T select x insert into Q;
partition with (a of S) begin
    from S select a insert inot #I;
end;
from S select a insert into R
""")
    assert [(e.line, e.column) for e in error.errors] == [(2, 7), (3, 11), (4, 23), (7, 27)]
    assert error.errors[1].message == "unexpected ']'; expected an expression"
    assert error.errors[3].hint == "did you mean 'into'?"
    assert "(and 3 more)" in str(error)


def test_error_count_is_capped() -> None:
    text = "define stream S (a int);\n" + "from S selct a insert into O;\n" * 50
    assert len(syntax_error(text).errors) == 20


def test_errors_carry_the_file_name_and_source() -> None:
    with pytest.raises(SiddhiAppError) as caught:
        parse("from S selct a insert into O;", filename="app.siddhi")
    assert caught.value.filename == "app.siddhi" and caught.value.source is not None
    assert caught.value.render().startswith("app.siddhi:1:7: error: unexpected 'selct'")


def test_on_demand_and_expression_errors() -> None:
    with pytest.raises(SiddhiAppError) as caught:
        parse_on_demand("from T select a insert into O")
    assert (caught.value.line, caught.value.column) == (1, 16)
    with pytest.raises(SiddhiAppError) as caught:
        parse_expression("a +")
    assert caught.value.message == "unexpected end of input; expected an expression"


# ---------------------------------------------------------------------------------------------
# 5. The grammar and the boundary
# ---------------------------------------------------------------------------------------------

def test_grammar_is_conflict_free_lalr(caplog: pytest.LogCaptureFixture) -> None:
    from lark import Lark

    from eddy.lang import parser

    with caplog.at_level(logging.DEBUG, logger="lark"):
        Lark(GRAMMAR_PATH.read_text(), parser="lalr", lexer="contextual",
             start=["siddhi_app", "on_demand_query", "expression_only", "recover"], debug=True,
             postlex=parser._KeywordsAsNames())
    assert not [r.message for r in caplog.records if "conflict" in r.message.lower()]


_FRAGMENTS = ["define stream S (a int)", "define table T (a int)", ";", "from", "S", "T", "e1",
              "=", "->", ",", "[", "]", "(", ")", "#window.length(2)", "select", "a", "*",
              "as", "insert into", "O", "every", "not", "for 1 sec", "within 5 min", "join",
              "on", "a > 1", "group by a", "partition with (a of S) begin", "end",
              "@info(name='q')",
              "'x", "\"\"\"", "{", "}", "<2:>", "update or insert into", "set", "delete", "return",
              "output every 5 events", "1e", "10 min", "`", "$", "--", "/*"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=25))
def test_only_siddhi_app_errors_escape(fragments: list[str]) -> None:
    text = " ".join(fragments)
    for entry in (parse, parse_on_demand, parse_expression):
        try:
            entry(text)
        except SiddhiAppError as error:
            assert error.kind == "syntax" and error.line >= 1 and error.column >= 0
            error.render()


def test_deeply_nested_expression_does_not_exhaust_the_stack() -> None:
    text = " + ".join(["a"] * 3000)
    tree = parse_expression(text)
    assert isinstance(tree, BinaryOperation) and tree.right == v("a")
