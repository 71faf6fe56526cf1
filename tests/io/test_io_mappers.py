"""Mappers: every supported layout in and out, and every kind of malformed payload rejected
with a reason a person understands while the good events of the same payload go through."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.io import Event
from eddy.io.convert import MISSING, convert_columns, typed_value
from eddy.io.errors import IoConfigError, MappingError
from eddy.io.mappers import sink_mapper, source_mapper
from eddy.io.mappers.csv_mapper import CsvSourceMapper
from eddy.lang.ast import Annotation, AnnotationElement, Attribute, AttrType

ROOMS = (Attribute("room", AttrType.INT), Attribute("temp", AttrType.DOUBLE),
         Attribute("name", AttrType.STRING))
EVERY_TYPE = (Attribute("i", AttrType.INT), Attribute("l", AttrType.LONG),
              Attribute("f", AttrType.FLOAT), Attribute("d", AttrType.DOUBLE),
              Attribute("s", AttrType.STRING), Attribute("b", AttrType.BOOL),
              Attribute("o", AttrType.OBJECT))


def mapping(kind: str, *options: tuple[str, str], attributes: dict[str, str] | None = None,
            positional: tuple[str, ...] = (), payload: str | None = None) -> Annotation:
    """``@map(type=kind, options…, @attributes(…), @payload(…))``."""
    nested = []
    if attributes is not None or positional:
        elements = tuple(AnnotationElement(k, v) for k, v in (attributes or {}).items()) + \
            tuple(AnnotationElement(None, v) for v in positional)
        nested.append(Annotation("attributes", elements))
    if payload is not None:
        nested.append(Annotation("payload", (AnnotationElement(None, payload),)))
    return Annotation("map", (AnnotationElement("type", kind),
                              *(AnnotationElement(k, v) for k, v in options)), tuple(nested))


def reasons(result: object) -> list[tuple[int, str]]:
    return [(f.index, f.reason) for f in result.faults]  # type: ignore[attr-defined]


# -- json in ---------------------------------------------------------------------------------

def test_json_reads_the_envelope_bare_objects_and_arrays() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("json"))
    result = mapper.map([
        b'{"event": {"room": 1, "temp": 20.5, "name": "hall"}}',
        b'{"room": 2, "temp": 21, "name": "lab"}',
        b'[{"event": {"room": 3, "temp": 3.0, "name": "a"}}, {"room": 4, "temp": -1e3, '
        b'"name": "b", "extra": true}]',
    ])
    assert result.faults == []
    assert result.events.to_pylist() == [
        {"room": 1, "temp": 20.5, "name": "hall"}, {"room": 2, "temp": 21.0, "name": "lab"},
        {"room": 3, "temp": 3.0, "name": "a"}, {"room": 4, "temp": -1000.0, "name": "b"}]


def test_json_converts_every_siddhi_type() -> None:
    mapper = source_mapper("All", EVERY_TYPE, mapping("json"))
    result = mapper.map([json.dumps({"i": 7, "l": 2**40, "f": 1.5, "d": 2, "s": "x",
                                     "b": False, "o": {"k": [1, None]}})])
    assert result.faults == []
    assert result.events.to_pylist() == [{"i": 7, "l": 2**40, "f": 1.5, "d": 2.0, "s": "x",
                                          "b": False, "o": '{"k":[1,null]}'}]


def test_json_custom_paths_and_enclosing_element() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping(
        "json", attributes={"room": "$.where.room", "temp": "$.readings[-1]",
                            "name": "$['the name']"}))
    result = mapper.map(['{"where": {"room": 5}, "readings": [1.0, 2.5], "the name": "x"}'])
    assert result.events.to_pylist() == [{"room": 5, "temp": 2.5, "name": "x"}]

    enclosed = source_mapper("Rooms", ROOMS, mapping(
        "json", ("enclosing.element", "$.batch"),
        attributes={"room": "r", "temp": "t.v", "name": "$.n"}))
    result = enclosed.map(['{"batch": [{"r": 1, "t": {"v": 1.5}, "n": "a"}, '
                           '{"r": 2, "t": {"v": 2.5}, "n": "b"}]}'])
    assert [e["room"] for e in result.events.to_pylist()] == [1, 2]


def test_json_malformed_payloads_each_get_a_reason() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("json"))
    result = mapper.map([
        b'{"room": 1, "temp": 1.0, "name": "ok"}',
        b'{"room": 1, "temp": ',                                # bad JSON
        b'{"room": "one", "temp": 1.0, "name": "a"}',           # text for an int
        b'{"room": 1.5, "temp": 1.0, "name": "a"}',             # fraction for an int
        b'{"room": 3000000000, "temp": 1.0, "name": "a"}',      # beyond 32 bits
        b'{"room": 1, "temp": true, "name": "a"}',              # bool for a double
        b'{"room": 1, "temp": 1.0, "name": 5}',                 # number for a string
        b'{"room": 1, "name": "a"}',                            # missing attribute
        b'[7, {"room": 2, "temp": 2.0, "name": "b"}]',          # not an object, then a good one
        b'\xff\xfe',                                            # not UTF-8
    ])
    assert result.events.to_pylist() == [{"room": 1, "temp": 1.0, "name": "ok"},
                                         {"room": 2, "temp": 2.0, "name": "b"}]
    got = dict(reasons(result))
    assert got[1].startswith("invalid JSON: ") and "line 1 column" in got[1]
    assert got[2] == "attribute 'room' (int): expected a whole number, got the text \"one\""
    assert got[3] == "attribute 'room' (int): expected a whole number, got 1.5"
    assert got[4] == "attribute 'room' (int): 3000000000 does not fit int (32-bit)"
    assert got[5] == "attribute 'temp' (double): expected a number, got true"
    assert got[6] == "attribute 'name' (string): expected text, got 5"
    assert got[7] == "attribute 'temp' is missing"
    assert got[8] == "expected a JSON object for an event, got 7"
    assert "not UTF-8" in got[10] or "invalid JSON" in got[10]
    assert sorted(got) == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    wrong_type = next(f for f in result.faults if f.index == 2)
    assert wrong_type.values == (None, 1.0, "a")  # what did convert is kept for the fault


def test_json_missing_attributes_can_be_null() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("json", ("fail.on.missing.attribute",
                                                            "false")))
    assert mapper.map(['{"room": 1}']).events.to_pylist() == [
        {"room": 1, "temp": None, "name": None}]


def test_json_mapping_mistakes_are_found_at_deploy_time() -> None:
    with pytest.raises(IoConfigError, match=r"JSON path '\$.x\[\?\(@.a\)\]': cannot read"):
        source_mapper("Rooms", ROOMS, mapping("json", attributes={
            "room": "$.x[?(@.a)]", "temp": "$.t", "name": "$.n"}))
    with pytest.raises(IoConfigError, match="does not map temp, name"):
        source_mapper("Rooms", ROOMS, mapping("json", attributes={"room": "$.r"}))
    with pytest.raises(IoConfigError, match="unknown option 'enclosing.elment'"):
        source_mapper("Rooms", ROOMS, mapping("json", ("enclosing.elment", "$.a")))


# -- csv, text, keyvalue, passThrough in ---------------------------------------------------------

def test_csv_fields_in_order_with_delimiter_and_header() -> None:
    plain = source_mapper("Rooms", ROOMS, mapping("csv", ("delimiter", ";")))
    assert plain.map(['1;20.5;hall\n2;;"semi;colon"']).events.to_pylist() == [
        {"room": 1, "temp": 20.5, "name": "hall"}, {"room": 2, "temp": None, "name": "semi;colon"}]
    header = source_mapper("Rooms", ROOMS, mapping("csv", ("header.present", "true")))
    assert header.map(["name,temp,room\nlab,1.5,3"]).events.to_pylist() == [
        {"room": 3, "temp": 1.5, "name": "lab"}]
    positions = source_mapper("Rooms", ROOMS, mapping("csv", positional=("2", "0", "1")))
    assert positions.map(["1.5,lab,3"]).events.to_pylist() == [
        {"room": 3, "temp": 1.5, "name": "lab"}]


def test_csv_malformed_lines() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("csv"))
    result = mapper.map(["1,2.0,a\nx,2.0,b\n3,2.0\n4,2.0,c,extra\n5,true,e"])
    assert result.events.num_rows == 1
    assert reasons(result) == [
        (1, "attribute 'room' (int): expected a whole number, got the text \"x\""),
        (2, "attribute 'name' is missing"),
        (3, "the line has 4 fields; the stream 'Rooms' has 3 attributes"),
        (4, "attribute 'temp' (double): expected a number, got the text \"true\"")]
    headed = source_mapper("Rooms", ROOMS, mapping("csv", ("header.present", "true")))
    assert reasons(headed.map(["room,temp\n1,2"])) == [
        (0, "the CSV header (room, temp) has no column 'name'")]


def test_csv_header_can_come_from_elsewhere() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("csv", ("header.present", "true")))
    assert isinstance(mapper, CsvSourceMapper)
    body_only = mapper.with_header("temp,name,room\n")
    assert body_only.map(["1.5,x,2"]).events.to_pylist() == [
        {"room": 2, "temp": 1.5, "name": "x"}]


def test_text_regex_groups_by_index_and_name() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping(
        "text", ("regex.A", r"room (\d+) is (?<t>[-\d.]+)"), ("regex.B", r"name=(\w+)"),
        attributes={"room": "A[1]", "temp": "A[t]", "name": "regex.B[1]"}))
    result = mapper.map(["room 12 is 21.5, name=lab", "room 3 is hot, name=x", "nothing"])
    assert result.events.to_pylist() == [{"room": 12, "temp": 21.5, "name": "lab"}]
    assert reasons(result) == [
        (1, "attribute 'room' is missing; attribute 'temp' is missing"),
        (2, "attribute 'room' is missing; attribute 'temp' is missing; "
            "attribute 'name' is missing")]


def test_text_default_layout_and_grouping() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("text", ("event.grouping.enabled", "true")))
    text = 'room:1,\ntemp:2.5,\nname:"a \\"b\\""~~~~~~~~~~room:2, temp:3, name:"c"'
    assert mapper.map([text]).events.to_pylist() == [
        {"room": 1, "temp": 2.5, "name": 'a "b"'}, {"room": 2, "temp": 3.0, "name": "c"}]
    bad = source_mapper("Rooms", ROOMS, mapping("text")).map(["room 1 temp 2"])
    assert reasons(bad)[0][1].startswith("cannot read 'room 1 temp 2' as name:value")


def test_text_regex_mistakes_are_found_at_deploy_time() -> None:
    with pytest.raises(IoConfigError, match="uses regex.C, which is not defined"):
        source_mapper("Rooms", ROOMS, mapping("text", ("regex.A", "(x)"), attributes={
            "room": "A[1]", "temp": "C[1]", "name": "A[0]"}))
    with pytest.raises(IoConfigError, match="regex.A has 1 groups"):
        source_mapper("Rooms", ROOMS, mapping("text", ("regex.A", "(x)"), attributes={
            "room": "A[1]", "temp": "A[2]", "name": "A[0]"}))


def test_keyvalue_reads_forms_and_mappings() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("keyvalue", attributes={
        "room": "r", "temp": "t", "name": "n"}))
    result = mapper.map(["r=1&t=2.5&n=a%20b\nr=2&t=x&n=c", {"r": 3, "t": 1.0, "n": "d"}])
    assert result.events.to_pylist() == [{"room": 1, "temp": 2.5, "name": "a b"},
                                         {"room": 3, "temp": 1.0, "name": "d"}]
    assert reasons(result) == [
        (1, "attribute 'temp' (double): expected a number, got the text \"x\"")]


def test_passthrough_takes_rows_dicts_and_events() -> None:
    mapper = source_mapper("Rooms", ROOMS, mapping("passThrough"))
    result = mapper.map([(1, 2.0, "a"), {"room": 2, "temp": 3, "name": "b"},
                         Event(0, (3, 1.0, "c")), (1, 2, 3, 4), "text", ("x", 1.0, "d")])
    assert [e["room"] for e in result.events.to_pylist()] == [1, 2, 3]
    assert [i for i, _ in reasons(result)] == [3, 4, 5]
    assert reasons(result)[1][1] == \
        "expected a row (a tuple, list or mapping), got the text \"text\""


# -- conversions ---------------------------------------------------------------------------------

json_values = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                        st.floats(allow_nan=False), st.text(max_size=5),
                        st.lists(st.integers(), max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=30), st.sampled_from(list(AttrType)))
def test_a_column_converts_as_its_values_do_one_by_one(values: list[object],
                                                       kind: AttrType) -> None:
    """The one-call fast path and the value-by-value path agree on every value."""
    converted = convert_columns([values], [Attribute("a", kind)], "typed")
    expected_good = []
    for index, value in enumerate(values):
        try:
            expected_good.append(typed_value(value, kind))
            assert index not in converted.errors
        except MappingError:
            assert index in converted.errors
    got = converted.table.column("a").to_pylist()
    if kind is AttrType.FLOAT:
        assert len(got) == len(expected_good)
    else:
        assert got == expected_good


def test_missing_differs_from_null() -> None:
    converted = convert_columns([[None, MISSING]], [Attribute("a", AttrType.INT)], "typed")
    assert converted.table.column("a").to_pylist() == [None]
    assert converted.errors == {1: "attribute 'a' is missing"}


# -- sinks ------------------------------------------------------------------------------------

EVENT = Event(1700000000000, (7, 25.0, 'say "hi"'))


def test_json_sink_envelope_and_template() -> None:
    assert sink_mapper("Rooms", ROOMS, None).text(EVENT) == \
        '{"event":{"room":7,"temp":25.0,"name":"say \\"hi\\""}}'
    template = sink_mapper("Rooms", ROOMS, mapping(
        "json", payload='{"r": {{room}}, "label": "{{name}} in {{room}}", "t": {{temp}}}'))
    text = template.text(EVENT)
    assert json.loads(text) == {"r": 7, "label": 'say "hi" in 7', "t": 25.0}
    with pytest.raises(IoConfigError, match="no attribute 'rom'"):
        sink_mapper("Rooms", ROOMS, mapping("json", payload="{{rom}}"))


def test_text_csv_and_keyvalue_sinks() -> None:
    assert sink_mapper("Rooms", ROOMS, mapping("text")).text(EVENT) == \
        'room:7,\ntemp:25.0,\nname:"say \\"hi\\""'
    assert sink_mapper("Rooms", ROOMS, mapping("text", payload="{{name}}@{{temp}}")).text(
        EVENT) == 'say "hi"@25.0'
    assert sink_mapper("Rooms", ROOMS, mapping("csv")).text(EVENT) == '7,25.0,"say ""hi"""'
    keyvalue = sink_mapper("Rooms", ROOMS, mapping("keyvalue"))
    assert keyvalue.format(EVENT) == {"room": 7, "temp": 25.0, "name": 'say "hi"'}
    assert keyvalue.text(EVENT) == "room=7&temp=25.0&name=say+%22hi%22"


def test_unknown_mapper_type_is_named() -> None:
    with pytest.raises(IoConfigError, match="unknown mapper type 'jsn'"):
        source_mapper("Rooms", ROOMS, mapping("jsn"))
