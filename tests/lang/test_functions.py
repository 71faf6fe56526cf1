"""The function registry: names, signatures and result types of Siddhi's built-ins."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.lang.ast import AttrType
from eddy.lang.functions import (
    ANY,
    NUMERIC,
    REGISTRY,
    FunctionSpec,
    Kind,
    Param,
    Registry,
    Signature,
    TypeMismatch,
    fixed,
    overloads,
    sig,
    typeset,
)

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT


def spec(kind: Kind, name: str, namespace: str | None = None) -> FunctionSpec:
    found = REGISTRY.lookup(kind, namespace, name)
    assert found is not None, f"{kind} {namespace}:{name} is not registered"
    return found


def call(kind: Kind, name: str, types: Sequence[AttrType],
         constants: Sequence[object | None] | None = None,
         namespace: str | None = None) -> AttrType | None:
    values = list(constants) if constants is not None else [None] * len(types)
    return REGISTRY.check_call(spec(kind, name, namespace), types, values)


def mismatch(kind: Kind, name: str, types: Sequence[AttrType],
             constants: Sequence[object | None] | None = None,
             namespace: str | None = None) -> TypeMismatch:
    with pytest.raises(TypeMismatch) as caught:
        call(kind, name, types, constants, namespace)
    return caught.value


# ---------------------------------------------------------------------------------------------
# Aggregators
# ---------------------------------------------------------------------------------------------

AGGREGATE_RESULTS = [
    ("sum", INT, LONG), ("sum", LONG, LONG), ("sum", FLOAT, DOUBLE), ("sum", DOUBLE, DOUBLE),
    *[("avg", t, DOUBLE) for t in NUMERIC],
    *[("stdDev", t, DOUBLE) for t in NUMERIC],
    *[(fn, t, t) for fn in ("min", "max", "minForever", "maxForever") for t in NUMERIC],
    *[("distinctCount", t, LONG) for t in (INT, LONG, FLOAT, DOUBLE, STRING)],
    *[("count", t, LONG) for t in AttrType],
    ("and", BOOL, BOOL), ("or", BOOL, BOOL), ("unionSet", OBJECT, OBJECT),
]


@pytest.mark.parametrize(("name", "arg", "result"), AGGREGATE_RESULTS)
def test_aggregator_result_type(name: str, arg: AttrType, result: AttrType) -> None:
    assert call("aggregate", name, [arg]) == result


def test_count_without_argument_is_long() -> None:
    assert call("aggregate", "count", []) == LONG


@pytest.mark.parametrize(("name", "bad"), [
    ("sum", STRING), ("sum", BOOL), ("avg", OBJECT), ("min", STRING), ("max", BOOL),
    ("stdDev", STRING), ("maxForever", OBJECT), ("and", INT), ("or", STRING),
    ("unionSet", INT), ("distinctCount", BOOL), ("distinctCount", OBJECT),
])
def test_aggregator_rejects_type(name: str, bad: AttrType) -> None:
    error = mismatch("aggregate", name, [bad])
    assert f"{name}()" in error.message and bad.value in error.message
    assert error.arg_index == 0


def test_sum_of_string_names_function_and_accepted_types() -> None:
    # invalid_type_sum_string: Siddhi says "no parameterOverload for 'sum' … (<INT|LONG|…> arg)"
    error = mismatch("aggregate", "sum", [STRING])
    assert error.message == "sum() takes (<INT|LONG|DOUBLE|FLOAT> arg), not (STRING)"


def test_aggregators_are_aggregates_and_functions_are_not() -> None:
    for name in ("sum", "count", "avg", "min", "max", "minForever", "maxForever",
                 "distinctCount", "stdDev", "and", "or", "unionSet"):
        assert REGISTRY.is_aggregate(None, name), name
    assert REGISTRY.is_aggregate("str", "groupConcat")
    assert REGISTRY.is_aggregate("math", "percentile")
    assert REGISTRY.is_aggregate(None, "SUM")  # case-insensitive fallback
    for name in ("maximum", "coalesce", "convert", "nosuch"):
        assert not REGISTRY.is_aggregate(None, name), name
    assert not REGISTRY.is_aggregate("math", "max")


# ---------------------------------------------------------------------------------------------
# Core scalar functions
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["convert", "cast"])
@pytest.mark.parametrize(("target", "result"), [
    ("int", INT), ("long", LONG), ("float", FLOAT), ("double", DOUBLE), ("string", STRING),
    ("bool", BOOL), ("DOUBLE", DOUBLE), ("Long", LONG),
])
def test_convert_and_cast_return_the_named_type(fn: str, target: str, result: AttrType) -> None:
    assert call("scalar", fn, [STRING, STRING], [None, target]) == result
    assert call("scalar", fn, [INT, STRING], [5, target]) == result


@pytest.mark.parametrize("fn", ["convert", "cast"])
def test_convert_and_cast_reject_unknown_target(fn: str) -> None:
    error = mismatch("scalar", fn, [STRING, STRING], [None, "object"])
    assert "'object'" in error.message and "'double'" in error.message
    assert error.arg_index == 1


@pytest.mark.parametrize("fn", ["convert", "cast"])
def test_convert_and_cast_need_a_constant_target(fn: str) -> None:
    error = mismatch("scalar", fn, [STRING, STRING], [None, None])
    assert "constant" in error.message and error.arg_index == 1
    mismatch("scalar", fn, [STRING, INT], [None, 3])


def test_convert_object_only_to_string() -> None:
    assert call("scalar", "convert", [OBJECT, STRING], [None, "string"]) == STRING
    assert "OBJECT" in mismatch("scalar", "convert", [OBJECT, STRING], [None, "int"]).message
    assert call("scalar", "cast", [OBJECT, STRING], [None, "int"]) == INT


def test_coalesce_needs_one_type() -> None:
    assert call("scalar", "coalesce", [STRING, STRING, STRING]) == STRING
    assert call("scalar", "coalesce", [DOUBLE]) == DOUBLE
    error = mismatch("scalar", "coalesce", [STRING, INT])
    assert "one type" in error.message and error.arg_index == 1
    mismatch("scalar", "coalesce", [])


def test_default_needs_a_constant_of_the_same_type() -> None:
    assert call("scalar", "default", [DOUBLE, DOUBLE], [None, 0.0]) == DOUBLE
    assert "constant" in mismatch("scalar", "default", [DOUBLE, DOUBLE], [None, None]).message
    error = mismatch("scalar", "default", [DOUBLE, INT], [None, 0])
    assert "DOUBLE" in error.message and error.arg_index == 1


def test_if_then_else() -> None:
    assert call("scalar", "ifThenElse", [BOOL, STRING, STRING]) == STRING
    assert call("scalar", "ifThenElse", [BOOL, INT, INT]) == INT
    mismatch("scalar", "ifThenElse", [INT, INT, INT])
    assert mismatch("scalar", "ifThenElse", [BOOL, INT, LONG]).arg_index == 2
    mismatch("scalar", "ifThenElse", [BOOL, INT])


@pytest.mark.parametrize("fn", ["maximum", "minimum"])
def test_maximum_minimum_keep_their_one_numeric_type(fn: str) -> None:
    assert call("scalar", fn, [DOUBLE, DOUBLE, DOUBLE]) == DOUBLE
    assert call("scalar", fn, [INT, INT]) == INT
    assert call("scalar", fn, [LONG]) == LONG
    mismatch("scalar", fn, [DOUBLE, INT])  # Siddhi: "all parameters should be of same type"
    mismatch("scalar", fn, [STRING, STRING])
    mismatch("scalar", fn, [])


@pytest.mark.parametrize("suffix", ["Boolean", "Double", "Float", "Integer", "Long", "String"])
def test_instance_of(suffix: str) -> None:
    for t in AttrType:
        assert call("scalar", f"instanceOf{suffix}", [t]) == BOOL


def test_zero_argument_functions() -> None:
    assert call("scalar", "UUID", []) == STRING
    assert call("scalar", "currentTimeMillis", []) == LONG
    assert call("scalar", "eventTimestamp", []) == LONG
    assert call("scalar", "eventTimestamp", [OBJECT]) == LONG
    error = mismatch("scalar", "UUID", [INT])
    assert error.message == "UUID() takes (), not (INT)"


def test_sets() -> None:
    assert call("scalar", "createSet", [STRING]) == OBJECT
    mismatch("scalar", "createSet", [OBJECT])
    assert call("scalar", "sizeOfSet", [OBJECT]) == INT
    mismatch("scalar", "sizeOfSet", [INT])


def test_arity_errors_list_the_signatures() -> None:
    error = mismatch("aggregate", "sum", [INT, INT])
    assert error.message == "sum() takes (<INT|LONG|DOUBLE|FLOAT> arg), not (INT, INT)"
    assert error.arg_index is None
    error = mismatch("aggregate", "avg", [])
    assert "no arguments" in error.message and "avg()" in error.message
    assert "count()" in mismatch("aggregate", "count", [INT, INT]).message


# ---------------------------------------------------------------------------------------------
# str: and math:
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "types", "result"), [
    ("concat", [STRING, STRING], STRING), ("concat", [STRING, INT, DOUBLE, BOOL], STRING),
    ("length", [STRING], INT), ("lower", [STRING], STRING), ("upper", [STRING], STRING),
    ("trim", [STRING], STRING), ("reverse", [STRING], STRING), ("hex", [STRING], STRING),
    ("unhex", [STRING], STRING), ("contains", [STRING, STRING], BOOL),
    ("equalsIgnoreCase", [STRING, STRING], BOOL), ("regexp", [STRING, STRING], BOOL),
    ("strcmp", [STRING, STRING], INT), ("locate", [STRING, STRING], INT),
    ("locate", [STRING, STRING, INT], INT), ("repeat", [STRING, INT], STRING),
    ("replaceAll", [STRING, STRING, STRING], STRING),
    ("replaceFirst", [STRING, STRING, STRING], STRING), ("charAt", [STRING, INT], STRING),
    ("charFrequency", [STRING, STRING], LONG), ("split", [STRING, STRING, INT], STRING),
    ("substr", [STRING, INT], STRING), ("substr", [STRING, INT, INT], STRING),
    ("substr", [STRING, STRING], STRING), ("substr", [STRING, STRING, INT], STRING),
    ("coalesce", [INT, INT], INT), ("fillTemplate", [STRING, INT, STRING], STRING),
    ("fillTemplate", [STRING, OBJECT], STRING),
])
def test_str_functions(name: str, types: list[AttrType], result: AttrType) -> None:
    assert call("scalar", name, types, namespace="str") == result


@pytest.mark.parametrize(("name", "types"), [
    ("concat", [STRING]), ("concat", [STRING, OBJECT]), ("length", [INT]),
    ("substr", [STRING, INT, STRING]), ("locate", [STRING]), ("coalesce", [INT, STRING]),
    ("fillTemplate", [STRING, OBJECT, INT]), ("upper", [STRING, STRING]),
])
def test_str_functions_reject(name: str, types: list[AttrType]) -> None:
    assert f"str:{name}()" in mismatch("scalar", name, types, namespace="str").message


@pytest.mark.parametrize(("name", "types", "result"), [
    ("abs", [INT], DOUBLE), ("abs", [DOUBLE], DOUBLE), ("ceil", [FLOAT], DOUBLE),
    ("floor", [INT], DOUBLE), ("round", [FLOAT], INT), ("round", [DOUBLE], LONG),
    ("sqrt", [LONG], DOUBLE), ("power", [INT, DOUBLE], DOUBLE), ("exp", [INT], DOUBLE),
    ("ln", [DOUBLE], DOUBLE), ("log", [DOUBLE, INT], DOUBLE), ("log10", [INT], DOUBLE),
    ("log2", [INT], DOUBLE), ("sin", [DOUBLE], DOUBLE), ("cos", [DOUBLE], DOUBLE),
    ("tan", [DOUBLE], DOUBLE), ("asin", [DOUBLE], DOUBLE), ("acos", [FLOAT], DOUBLE),
    ("atan", [DOUBLE], DOUBLE), ("atan", [DOUBLE, DOUBLE], DOUBLE), ("max", [INT, LONG], DOUBLE),
    ("min", [FLOAT, DOUBLE], DOUBLE), ("rand", [], DOUBLE), ("signum", [DOUBLE], INT),
    ("toRadians", [INT], DOUBLE), ("toDegrees", [DOUBLE], DOUBLE), ("pi", [], DOUBLE),
    ("e", [], DOUBLE), ("parseInt", [STRING], INT), ("parseLong", [STRING], LONG),
    ("parseFloat", [STRING], FLOAT), ("parseDouble", [STRING], DOUBLE),
    ("bin", [INT], STRING), ("oct", [LONG], STRING), ("hex", [DOUBLE], STRING),
    ("conv", [STRING, INT, INT], STRING), ("isNan", [DOUBLE], BOOL),
    ("isInfinite", [FLOAT], BOOL), ("getExponent", [DOUBLE], INT), ("cbrt", [INT], DOUBLE),
    ("copySign", [INT, DOUBLE], DOUBLE),
])
def test_math_functions(name: str, types: list[AttrType], result: AttrType) -> None:
    assert call("scalar", name, types, namespace="math") == result


def test_math_restrictions() -> None:
    mismatch("scalar", "round", [INT], namespace="math")  # FLOAT or DOUBLE only
    mismatch("scalar", "ceil", [INT], namespace="math")
    mismatch("scalar", "sqrt", [STRING], namespace="math")
    assert call("scalar", "rand", [LONG], [42], namespace="math") == DOUBLE
    assert "constant" in mismatch("scalar", "rand", [LONG], [None], namespace="math").message


def test_namespaced_aggregators() -> None:
    assert call("aggregate", "groupConcat", [STRING], namespace="str") == STRING
    assert call("aggregate", "groupConcat", [STRING, STRING, BOOL, STRING],
                [None, ",", True, "desc"], namespace="str") == STRING
    mismatch("aggregate", "groupConcat", [STRING, STRING, BOOL, STRING],
             [None, ",", True, "sideways"], namespace="str")
    assert call("aggregate", "percentile", [INT, DOUBLE], [None, 97.5],
                namespace="math") == DOUBLE
    mismatch("aggregate", "percentile", [INT, DOUBLE], [None, 150.0], namespace="math")
    mismatch("aggregate", "percentile", [INT, DOUBLE], [None, None], namespace="math")


# ---------------------------------------------------------------------------------------------
# Windows and stream functions
# ---------------------------------------------------------------------------------------------

def test_window_length_of_string() -> None:
    # invalid_window_param_type: #window.length('three')
    error = mismatch("window", "length", [STRING], ["three"])
    assert error.message == "#window.length() takes (<INT> window.length), not (STRING)"
    assert error.arg_index == 0


@pytest.mark.parametrize(("name", "types", "constants"), [
    ("length", [INT], [3]),
    ("lengthBatch", [INT], [4]), ("lengthBatch", [INT, BOOL], [4, True]),
    ("time", [LONG], [1000]), ("time", [INT], [500]),
    ("timeBatch", [LONG], [1000]), ("timeBatch", [LONG, INT], [1000, 0]),
    ("timeBatch", [LONG, BOOL], [1000, True]), ("timeBatch", [LONG, LONG, BOOL], [1000, 5, True]),
    ("timeLength", [LONG, INT], [1000, 10]),
    ("externalTime", [LONG, LONG], [None, 60000]),
    ("externalTimeBatch", [LONG, LONG], [None, 1000]),
    ("externalTimeBatch", [LONG, LONG, INT], [None, 1000, 500]),
    ("externalTimeBatch", [LONG, LONG, LONG], [None, 1000, None]),
    ("externalTimeBatch", [LONG, LONG, INT, LONG, BOOL], [None, 1000, 0, 2000, True]),
    ("session", [LONG], [5000]), ("session", [LONG, STRING], [5000, None]),
    ("session", [LONG, STRING, LONG], [5000, None, 1000]),
    ("sort", [INT, INT], [2, None]), ("sort", [INT, INT, STRING], [2, None, "asc"]),
    ("sort", [INT, INT, STRING, INT, STRING], [2, None, "desc", None, "asc"]),
    ("sort", [INT, INT, STRING, INT], [2, None, "DESC", None]),
    ("delay", [LONG], [1000]), ("batch", [], []), ("batch", [INT], [10]),
    ("frequent", [INT], [3]), ("frequent", [INT, STRING], [3, None]),
    ("lossyFrequent", [DOUBLE], [0.1]), ("lossyFrequent", [DOUBLE, DOUBLE], [0.1, 0.01]),
    ("lossyFrequent", [DOUBLE, DOUBLE, STRING], [0.1, 0.01, None]),
    ("expression", [STRING], ["count() <= 20"]),
    ("expressionBatch", [STRING, BOOL], ["sum(v) < 100", None]),
    ("cron", [STRING], ["*/5 * * * * ?"]),
])
def test_windows_accept(name: str, types: list[AttrType], constants: list[object]) -> None:
    assert call("window", name, types, constants) is None


@pytest.mark.parametrize(("name", "types", "constants", "needle"), [
    ("length", [LONG], [3], "<INT> window.length"),
    ("length", [INT], [None], "constant"),
    ("length", [INT, INT], [1, 2], "not (INT, INT)"),
    ("time", [DOUBLE], [1.5], "window.time"),
    ("time", [LONG], [None], "constant"),
    ("timeBatch", [LONG, STRING], [1000, "x"], "timeBatch"),
    ("externalTime", [INT, LONG], [None, 1000], "<LONG> timestamp"),
    ("externalTime", [LONG, LONG], [5, 1000], "stream attribute"),
    ("externalTimeBatch", [LONG, LONG, INT], [None, 1000, None], "start.time"),
    ("externalTimeBatch", [LONG, LONG, BOOL], [None, 1000, True], "externalTimeBatch"),
    ("session", [LONG, INT], [1000, 10], "session.key"),
    ("session", [LONG, STRING], [1000, "user"], "stream attribute"),
    ("sort", [INT, INT, STRING], [2, None, "up"], "'asc' or 'desc'"),
    ("sort", [INT, STRING], [2, "asc"], "attribute to sort by"),
    ("sort", [INT, STRING, INT], [2, None, None], "after the first attribute"),
    ("sort", [INT, BOOL], [2, None], "window.sort()"),
    ("frequent", [INT, STRING, STRING], [3, None, None], "frequent"),
    ("cron", [STRING], [None], "constant"),
    ("batch", [INT, INT], [1, 2], "batch"),
])
def test_windows_reject(name: str, types: list[AttrType], constants: list[object],
                        needle: str) -> None:
    error = mismatch("window", name, types, constants)
    assert needle in error.message


def test_window_overload_chain_reads_as_nested_brackets() -> None:
    assert spec("window", "externalTimeBatch").describe() == (
        "(<LONG> timestamp, <INT|LONG> window.time[, <INT|LONG> start.time[, <INT|LONG> "
        "timeout[, <BOOL> replace.with.batchtime]]])")
    assert spec("window", "timeBatch").describe() == (
        "(<INT|LONG> window.time[, <INT|LONG> start.time][, <BOOL> stream.current.event])")


def test_windows_have_no_return_and_add_no_attributes() -> None:
    for window in REGISTRY.specs("window"):
        assert window.returns is None and window.extra_attributes is None, window.name


def test_log_stream_function() -> None:
    log = spec("stream", "log")
    accepted: list[tuple[list[AttrType], list[object | None]]] = [
        ([], []), ([STRING], [None]), ([BOOL], [True]), ([STRING, BOOL], [None, False]),
        ([STRING, STRING], ["warn", None]), ([STRING, STRING, BOOL], ["ERROR", "msg", True])]
    for types, constants in accepted:
        assert REGISTRY.check_call(log, types, constants) is None
    assert "'INFO'" in mismatch("stream", "log", [STRING, STRING], ["LOUD", None]).message
    mismatch("stream", "log", [STRING, STRING], [None, None])  # priority must be a constant
    mismatch("stream", "log", [INT], [None])
    mismatch("stream", "log", [STRING, STRING, BOOL, BOOL], [None, None, True, True])
    assert log.extra_attributes is None


def test_pol2cart_adds_coordinates() -> None:
    pol2cart = spec("stream", "pol2Cart")
    assert pol2cart.extra_attributes is not None
    assert REGISTRY.check_call(pol2cart, [DOUBLE, DOUBLE], [None, None]) is None
    assert pol2cart.extra_attributes([DOUBLE, DOUBLE], [None, None]) == (
        ("x", DOUBLE), ("y", DOUBLE))
    assert pol2cart.extra_attributes([DOUBLE, DOUBLE, DOUBLE], [None, None, None]) == (
        ("x", DOUBLE), ("y", DOUBLE), ("z", DOUBLE))
    mismatch("stream", "pol2Cart", [INT, DOUBLE])
    mismatch("stream", "pol2Cart", [DOUBLE])


def test_tokenize_adds_token() -> None:
    tokenize = spec("stream", "tokenize", "str")
    assert REGISTRY.check_call(tokenize, [STRING, STRING], [None, ","]) is None
    assert tokenize.extra_attributes is not None
    assert tokenize.extra_attributes([STRING, STRING], [None, ","]) == (("token", STRING),)


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------

def test_lookup_exact_then_case_insensitive() -> None:
    assert spec("scalar", "ifThenElse").name == "ifThenElse"
    found = REGISTRY.lookup("scalar", None, "ifthenelse")
    assert found is not None and found.name == "ifThenElse"
    found = REGISTRY.lookup("scalar", None, "uuid")
    assert found is not None and found.name == "UUID"
    found = REGISTRY.lookup("scalar", "STR", "Length")
    assert found is not None and found.qualified_name == "str:length"
    found = REGISTRY.lookup("window", None, "TimeBatch")
    assert found is not None and found.name == "timeBatch"


def test_lookup_respects_kind_and_namespace() -> None:
    assert REGISTRY.lookup("scalar", None, "sum") is None
    assert REGISTRY.lookup("aggregate", None, "sum") is not None
    assert REGISTRY.lookup("window", None, "sum") is None
    assert REGISTRY.lookup("scalar", None, "length") is None  # only str:length
    assert REGISTRY.lookup("window", None, "length") is not None
    assert REGISTRY.lookup("scalar", "math", "length") is None
    assert REGISTRY.lookup("window", "unique", "length") is None


def test_ambiguous_case_insensitive_match_resolves_nothing() -> None:
    registry = Registry()
    for name in ("foo", "FOO"):
        registry.register(FunctionSpec(None, name, "scalar", (sig(),), fixed(INT), "x"))
    assert registry.lookup("scalar", None, "foo") is not None
    assert registry.lookup("scalar", None, "Foo") is None


def test_suggest() -> None:
    assert REGISTRY.suggest("aggregate", None, "sume") == "sum"
    assert REGISTRY.suggest("scalar", None, "sume") == "sum"  # scalars and aggregates pooled
    assert REGISTRY.suggest("scalar", None, "coalese") == "coalesce"
    assert REGISTRY.suggest("scalar", "str", "lenght") == "str:length"
    assert REGISTRY.suggest("window", None, "lenght") == "length"
    assert REGISTRY.suggest("window", None, "timebatch") == "timeBatch"
    assert REGISTRY.suggest("stream", None, "pol2cart") == "pol2Cart"
    assert REGISTRY.suggest("window", None, "zzzzqqq") is None


def test_names_are_qualified_and_sorted() -> None:
    scalars = REGISTRY.names("scalar")
    assert scalars == sorted(scalars)
    assert {"coalesce", "str:coalesce", "math:abs", "UUID"} <= set(scalars)
    assert "sum" in REGISTRY.names("aggregate")
    assert {"length", "time", "sort", "session"} <= set(REGISTRY.names("window"))
    assert {"log", "pol2Cart", "str:tokenize"} == set(REGISTRY.names("stream"))
    assert len([n for n in scalars if n.startswith("str:")]) >= 15


def test_every_spec_has_a_one_line_description() -> None:
    for s in REGISTRY.specs():
        assert s.description and "\n" not in s.description, s.qualified_name


# ---------------------------------------------------------------------------------------------
# Signatures and custom specs
# ---------------------------------------------------------------------------------------------

def test_describe() -> None:
    assert sig(Param("arg", NUMERIC)).describe() == "(<INT|LONG|DOUBLE|FLOAT> arg)"
    assert sig(Param("a", typeset(STRING)), Param("b", typeset(BOOL), optional=True)).describe() \
        == "(<STRING> a[, <BOOL> b])"
    assert sig(Param("x", ANY, variadic=True)).describe() == "(<ANY> x...)"
    assert sig().describe() == "()"


def test_variadic_must_be_last() -> None:
    with pytest.raises(ValueError):
        Signature((Param("a", ANY, variadic=True), Param("b", ANY)))


def test_optional_and_variadic_params() -> None:
    registry = Registry()
    joined = FunctionSpec("my", "join", "scalar",
                          (sig(Param("sep", typeset(STRING), constant=True),
                               Param("flag", typeset(BOOL), optional=True),
                               Param("part", typeset(STRING, INT), optional=True,
                                     variadic=True)),),
                          fixed(STRING), "Joins parts.")
    registry.register(joined)
    for types in ([STRING], [STRING, BOOL], [STRING, INT], [STRING, BOOL, STRING, INT, STRING]):
        consts: list[object | None] = [","] + [None] * (len(types) - 1)
        assert registry.check_call(joined, types, consts) == STRING
    with pytest.raises(TypeMismatch):
        registry.check_call(joined, [STRING, STRING, BOOL], [",", None, None])
    with pytest.raises(TypeMismatch, match="constant"):
        registry.check_call(joined, [STRING], [None])


def test_overloads_spell_out_prefixes() -> None:
    a, b, c = (Param(n, typeset(INT)) for n in "abc")
    assert overloads([a], b, c) == (sig(a), sig(a, b), sig(a, b, c))


def test_register_custom_spec() -> None:
    registry = REGISTRY.copy()
    custom = FunctionSpec("geo", "distance", "scalar",
                          (sig(*(Param(n, typeset(DOUBLE)) for n in ("lat1", "lon1", "lat2",
                                                                      "lon2"))),),
                          fixed(DOUBLE), "Great-circle distance in metres.")
    registry.register(custom)
    assert registry.lookup("scalar", "geo", "distance") is custom
    assert "geo:distance" in registry.names("scalar")
    assert registry.check_call(custom, [DOUBLE] * 4, [None] * 4) == DOUBLE
    with pytest.raises(TypeMismatch, match=r"geo:distance\(\)"):
        registry.check_call(custom, [DOUBLE] * 3, [None] * 3)
    assert REGISTRY.lookup("scalar", "geo", "distance") is None  # the copy is independent
    with pytest.raises(ValueError):
        registry.register(custom)
    registry.register(custom, replace=True)
    with pytest.raises(ValueError):
        registry.register(FunctionSpec("", "x", "scalar", (sig(),), fixed(INT), "x"))


def test_constants_must_match_arguments() -> None:
    with pytest.raises(ValueError):
        REGISTRY.check_call(spec("aggregate", "sum"), [INT], [])


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

CONSTANTS = st.one_of(st.none(), st.integers(-5, 10**6), st.floats(allow_nan=True),
                      st.booleans(), st.sampled_from(
                          ["int", "LONG", "double", "string", "bool", "object", "asc", "desc",
                           "INFO", "loud", "", "ASC", "x y"]))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(REGISTRY.specs()),
       st.lists(st.tuples(st.sampled_from(list(AttrType)), CONSTANTS), max_size=6))
def test_check_call_returns_a_type_or_raises_type_mismatch(
        s: FunctionSpec, args: list[tuple[AttrType, object | None]]) -> None:
    types = [t for t, _ in args]
    constants = [c for _, c in args]
    try:
        result = REGISTRY.check_call(s, types, constants)
    except TypeMismatch as error:
        assert error.message and isinstance(error.message, str)
        assert s.qualified_name in error.message
        assert error.arg_index is None or 0 <= error.arg_index < len(types)
        return
    if s.returns is None:
        assert result is None
    else:
        assert isinstance(result, AttrType)
    if s.extra_attributes is not None:
        extra = s.extra_attributes(types, constants)
        assert all(isinstance(n, str) and isinstance(t, AttrType) for n, t in extra)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REGISTRY.specs()), st.data())
def test_every_signature_accepts_its_own_shape(s: FunctionSpec, data: st.DataObject) -> None:
    """Arguments drawn from a signature's own types pass arity/type matching (they may still
    fail a cross-argument check, which must then be a TypeMismatch)."""
    signature = data.draw(st.sampled_from(s.signatures))
    count = data.draw(st.integers(0, len(signature.params) + 2))
    layouts = list(signature.layouts(count))
    if not layouts:
        return
    layout = data.draw(st.sampled_from(layouts))
    types = [data.draw(st.sampled_from(sorted(p.types))) for p in layout]
    constants: list[object | None] = []
    for p, t in zip(layout, types):
        if p.choices:
            constants.append(data.draw(st.sampled_from(p.choices)))
        elif p.constant:
            constants.append({INT: 1, LONG: 1000, FLOAT: 0.5, DOUBLE: 0.5, STRING: "asc",
                              BOOL: True}.get(t, "x"))
        else:
            constants.append(None)
    try:
        REGISTRY.check_call(s, types, constants)
    except TypeMismatch as error:
        assert "takes" not in error.message, error.message  # not a signature mismatch


# ---------------------------------------------------------------------------------------------
# Against the reference engine's schemas in the conformance cases
# ---------------------------------------------------------------------------------------------

def _cases_dir() -> Path:
    if override := os.environ.get("EDDY_CONFORMANCE_DIR"):
        return Path(override)
    return Path(__file__).resolve().parents[3] / "shared" / "conformance" / "cases"


def _cases() -> Iterator[dict[str, object]]:
    directory = _cases_dir()
    if not directory.is_dir():
        pytest.skip(f"no conformance cases at {directory}")
    for path in sorted(directory.glob("*.json")):
        yield json.loads(path.read_text())


_LITERALS: list[tuple[str, AttrType]] = [
    (r"'[^']*'", STRING), (r"\d+L", LONG), (r"\d+\.\d+[fF]", FLOAT), (r"\d+\.\d+", DOUBLE),
    (r"\d+", INT), (r"true|false", BOOL),
]
_UNITS = r"(?:milliseconds?|millis|ms|sec|secs|seconds?|min|mins|minutes?|hours?|days?)"


def _literal_value(t: AttrType, text: str) -> object:
    if t == STRING:
        return text[1:-1]
    if t == BOOL:
        return text == "true"
    if t in (LONG, FLOAT):
        text = text[:-1]
    return float(text) if t in (FLOAT, DOUBLE) else int(text)


def _argument(text: str, schema: dict[str, AttrType]) -> tuple[AttrType, object | None] | None:
    """Type and constant value of a simple argument: an attribute, a literal or a time."""
    text = text.strip()
    if re.fullmatch(rf"\d+\s+{_UNITS}", text):
        return LONG, 1000  # a time value; its size does not matter here
    for pattern, t in _LITERALS:
        if re.fullmatch(pattern, text):
            return t, _literal_value(t, text)
    if text in schema:
        return schema[text], None
    return None


def _split_args(text: str) -> list[str]:
    return [a for a in (x.strip() for x in text.split(",")) if a] if text.strip() else []


def _schema(case: dict[str, object], stream: str) -> dict[str, AttrType]:
    schemas = case.get("schemas") or {}
    assert isinstance(schemas, dict)
    return {n: AttrType(t) for n, t in schemas.get(stream, [])}


def test_windows_of_the_conformance_cases() -> None:
    checked = 0
    for case in _cases():
        app = str(case["app"])
        for match in re.finditer(r"from\s+(\w+)(?:\[[^\]]*\])?#window\.(\w+)\(([^()]*)\)", app):
            stream, name, arg_text = match.groups()
            schema = _schema(case, stream)
            args = [_argument(a, schema) for a in _split_args(arg_text)]
            if any(a is None for a in args):
                continue
            typed = [a for a in args if a is not None]
            window = spec("window", name)
            error = case.get("expected_error")
            if isinstance(error, dict) and f"parameterOverload for '{name}'" in error["message"]:
                with pytest.raises(TypeMismatch):
                    REGISTRY.check_call(window, [t for t, _ in typed], [c for _, c in typed])
            else:
                REGISTRY.check_call(window, [t for t, _ in typed], [c for _, c in typed])
            checked += 1
    assert checked >= 30


def test_select_functions_of_the_conformance_cases() -> None:
    """For ``fn(simple args) as alias`` in a select, the registry's result type is the type
    the reference engine gave ``alias`` in the output schema."""
    checked = 0
    for case in _cases():
        if "expected_error" in case:
            continue
        app = str(case["app"])
        for query in re.split(r";", app):
            source = re.search(r"from\s+(\w+)", query)
            target = re.search(r"insert\s+(?:\w+\s+events\s+)?into\s+(\w+)", query)
            if source is None or target is None:
                continue
            schema = _schema(case, source.group(1))
            out = _schema(case, target.group(1))
            pattern = r"(?<![\w.])(\w+(?::\w+)?)\(([^()]*)\)\s+as\s+(\w+)"
            for fn, arg_text, alias in re.findall(pattern, query):
                args = [_argument(a, schema) for a in _split_args(arg_text)]
                if alias not in out or any(a is None for a in args):
                    continue
                typed = [a for a in args if a is not None]
                namespace, _, name = fn.rpartition(":")
                s = (REGISTRY.lookup("scalar", namespace or None, name)
                     or REGISTRY.lookup("aggregate", namespace or None, name))
                assert s is not None, fn
                result = REGISTRY.check_call(s, [t for t, _ in typed], [c for _, c in typed])
                assert result == out[alias], f"{case['name']}: {fn}({arg_text}) as {alias}"
                checked += 1
    assert checked >= 40
