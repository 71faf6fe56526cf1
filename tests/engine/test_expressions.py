"""The two expression compilers agree with each other and with Siddhi.

Every expression below is compiled twice, to a Spark column (``SparkExpressionCompiler``) and
to a Python closure (``compile_python``), and both are evaluated on *every* test row, not just
the rows written for it: each row checks the expected Siddhi value, and every (expression,
row) cell checks that the JVM and Python give the same value (NaN equals NaN; -0.0 differs
from 0.0). Spark work is batched: one DataFrame holds all rows and one ``select`` all the
columns. Then the conformance cases' filters and projections, and random expressions
(hypothesis) over random rows with nulls, zeros and extremes.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from functools import reduce
from typing import Any

import pytest
from conformance import load_cases, values_equal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.scope import Scope, Source
from eddy.lang.typecheck import ExpressionTyper, promote

pytest.importorskip("pyspark")

from pyspark.sql import Column, DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from eddy.engine.expressions import SparkExpressionCompiler, UnsupportedInSpark, spark_type  # noqa: E402
from eddy.engine.runtime.evaluate import (  # noqa: E402
    compile_python,
    java_float_text,
    to_float32,
)
from eddy.lang.parser import parse_expression  # noqa: E402

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
COLUMNS = {"i": INT, "j": INT, "l": LONG, "m": LONG, "f": FLOAT, "g": FLOAT, "d": DOUBLE,
           "e": DOUBLE, "s": STRING, "t": STRING, "b": BOOL, "c": BOOL, "o": OBJECT}
SCOPE = Scope((Source("S", "stream", tuple(Attribute(n, t) for n, t in COLUMNS.items()),
                      frozenset({"S"})),))
IMAX, IMIN, LMAX, LMIN = 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)
NAN, INF = math.nan, math.inf
F01, F02 = to_float32(0.1), to_float32(0.2)

# ---------------------------------------------------------------------------------------------
# Evaluation in both engines
# ---------------------------------------------------------------------------------------------


def typed(expr: ast.Expression) -> Callable[[ast.Expression], AttrType]:
    typer = ExpressionTyper(functions={}, tables=lambda name: None)
    typer.infer(expr, SCOPE)
    return lambda node: typer.types[id(node)]


def spark_column(expr: ast.Expression) -> Column:
    compiler = SparkExpressionCompiler(typed(expr), lambda v: F.col(v.attribute), F.col("ts"))
    return compiler.compile(expr)


def python_closure(expr: ast.Expression) -> Callable[[Any], Any]:
    return compile_python(expr, typed(expr), lambda v: (lambda row: row[v.attribute]),
                          lambda row: row["ts"])


def frame(spark: SparkSession, rows: Sequence[dict[str, Any]]) -> DataFrame:
    """Rows as a DataFrame; OBJECT values become variants of their Python type."""
    fields = [T.StructField(n, spark_type(t)) for n, t in COLUMNS.items() if t != OBJECT]
    holders = {"o_b": (bool, T.BooleanType()), "o_l": (int, T.LongType()),
               "o_d": (float, T.DoubleType()), "o_s": (str, T.StringType())}
    fields += [T.StructField(n, dt) for n, (_, dt) in holders.items()]
    fields += [T.StructField("ts", T.LongType()), T.StructField("row", T.IntegerType())]
    data = []
    for index, row in enumerate(rows):
        o = row.get("o")
        hold = [o if type(o) is kind else None for kind, _ in holders.values()]
        data.append(tuple(row.get(n) for n, t in COLUMNS.items() if t != OBJECT)
                    + tuple(hold) + (row.get("ts", 1000), index))
    df = spark.createDataFrame(data, T.StructType(fields))
    variant = F.coalesce(*(F.col(n).cast("variant") for n in holders))
    return df.withColumn("o", variant).drop(*holders)


def evaluate(spark: SparkSession, exprs: Sequence[ast.Expression],
             rows: Sequence[dict[str, Any]]) -> tuple[list[list[Any]], list[list[Any]]]:
    """(spark, python) values, indexed [expression][row]."""
    df = frame(spark, rows)
    cols = [spark_column(e).alias(f"x{k}") for k, e in enumerate(exprs)]
    got = sorted(df.select("row", *cols).collect(), key=lambda r: r["row"])
    sparks = [[plain(r[f"x{k}"]) for r in got] for k in range(len(exprs))]
    contexts = [{"ts": 1000, **{n: None for n in COLUMNS}, **row} for row in rows]
    pythons = [[plain(fn(ctx)) for ctx in contexts] for fn in map(python_closure, exprs)]
    return sparks, pythons


def plain(value: Any) -> Any:
    """Variants as Python values; sets (Spark arrays, Python frozensets) as sorted lists."""
    if hasattr(value, "toPython"):
        value = value.toPython()
    if isinstance(value, (list, frozenset, set)):
        return sorted(value, key=repr)
    return value


def same(a: Any, b: Any, approx: bool = False) -> bool:
    """Exact equality that tells True from 1, matches NaN with NaN and -0.0 from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if approx:
            return math.isclose(a, b, rel_tol=1e-14, abs_tol=1e-300)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------------------------
# The table: expression -> [(row, expected Siddhi value)]
# ---------------------------------------------------------------------------------------------

Rows = list[tuple[dict[str, Any], Any]]

TABLE: dict[str, Rows] = {
    # arithmetic: promotion, Java wrap-around, truncating division, null on / or % by zero
    "i + j": [({"i": 1, "j": 2}, 3), ({"i": IMAX, "j": 1}, IMIN), ({"i": None, "j": 1}, None)],
    "i * 1000000": [({"i": 1000000}, -727379968)],
    "l * m": [({"l": LMAX, "m": 2}, -2), ({"l": 3, "m": -4}, -12)],
    "i - l": [({"i": IMIN, "l": 1}, IMIN - 1)],
    "i / j": [({"i": 7, "j": 2}, 3), ({"i": -7, "j": 2}, -3), ({"i": 7, "j": -2}, -3),
              ({"i": 5, "j": 0}, None), ({"i": IMIN, "j": -1}, IMIN), ({"j": 1}, None)],
    "i % j": [({"i": 7, "j": 2}, 1), ({"i": -7, "j": 2}, -1), ({"i": 7, "j": -2}, 1),
              ({"i": 5, "j": 0}, None), ({"i": IMIN, "j": -1}, 0)],
    "l / m": [({"l": LMIN, "m": -1}, LMIN), ({"l": 9, "m": 0}, None)],
    "d / e": [({"d": 1.0, "e": 0.0}, None), ({"d": 1.0, "e": -0.0}, None),
              ({"d": 7.5, "e": 2.0}, 3.75), ({"d": -0.0, "e": 2.0}, -0.0)],
    "d % e": [({"d": 7.5, "e": 2.0}, 1.5), ({"d": -7.5, "e": 2.0}, -1.5),
              ({"d": 5.0, "e": 0.0}, None), ({"d": INF, "e": 2.0}, NAN), ({"d": 5.0, "e": INF}, 5.0)],
    "d / j": [({"d": 1.5, "j": 2}, 0.75), ({"d": 2.0, "j": 0}, None)],
    "d * 1e308": [({"d": 10.0}, INF)],
    "f + g": [({"f": F01, "g": F02}, to_float32(F01 + F02))],
    "f / g": [({"f": 1.0, "g": 3.0}, to_float32(1 / 3)), ({"f": 1.0, "g": 0.0}, None)],
    "f % g": [({"f": 5.5, "g": 2.0}, 1.5)],
    "f * i": [({"f": 0.5, "i": 16777217}, 8388608.0)],
    "l + f": [({"l": 16777217, "f": 0.0}, 16777216.0)],
    "l + d": [({"l": 2**53 + 1, "d": 0.0}, float(2**53))],
    "0.1f + 0.2f": [({}, to_float32(F01 + F02))],
    "-(i + j)": [({"i": IMAX, "j": 1}, IMIN), ({"i": 1, "j": 2}, -3)],
    "-d": [({"d": 0.0}, -0.0)],
    "l + 10 sec": [({"l": 5}, 10005)],
    # comparisons: Java's promotion, NaN, null is false
    "i > f": [({"i": 16777217, "f": 16777216.0}, False), ({"i": 2, "f": 1.5}, True)],
    "l == f": [({"l": 16777217, "f": 16777216.0}, False)],
    "l > f": [({"l": 16777217, "f": 16777216.0}, False)],
    "l == d": [({"l": 2**53 + 1, "d": float(2**53)}, True)],
    "i == l": [({"i": 5, "l": 5}, True), ({"i": None, "l": 5}, False)],
    "f < d": [({"f": F01, "d": 0.1}, False)],
    "d < e": [({"d": NAN, "e": 1.0}, False), ({"d": 1.0, "e": NAN}, False),
              ({"d": 1.0, "e": 2.0}, True)],
    "d == e": [({"d": NAN, "e": NAN}, False), ({"d": -0.0, "e": 0.0}, True),
               ({"d": None, "e": 1.0}, False)],
    "d != e": [({"d": NAN, "e": NAN}, True), ({"d": None, "e": NAN}, False)],
    "s == t": [({"s": "a", "t": "a"}, True), ({"s": "a"}, False), ({}, False)],
    "s != t": [({"s": "a", "t": "b"}, True), ({"s": "a"}, False)],
    "b == c": [({"b": True, "c": True}, True), ({}, False)],
    "null == s": [({"s": "a"}, False)],
    # logic: null is false, 'not null' is true
    "b and c": [({"c": True}, False), ({"b": True, "c": True}, True)],
    "b or c": [({"c": True}, True), ({}, False)],
    "not b": [({}, True), ({"b": True}, False)],
    "not (b and c)": [({"c": True}, True)],
    "not (d > e)": [({"d": NAN, "e": 1.0}, True)],
    "i is null": [({}, True), ({"i": 0}, False)],
    "d is null": [({"d": NAN}, False)],
    "coalesce(s, t) is null": [({}, True), ({"t": "x"}, False)],
    # core functions
    "ifThenElse(b, i, j)": [({"i": 1, "j": 2}, 2), ({"b": True, "i": 1, "j": 2}, 1)],
    "coalesce(s, t, 'x')": [({}, "x"), ({"t": "b"}, "b")],
    "default(d, 0.0)": [({}, 0.0), ({"d": 1.5}, 1.5)],
    "convert(s, 'double')": [({"s": "3.25"}, 3.25), ({"s": "42"}, 42.0), ({"s": "true"}, None),
                             ({"s": " 1.5d "}, 1.5), ({"s": "0x1p3"}, 8.0), ({"s": "inf"}, None),
                             ({"s": "Infinity"}, INF), ({"s": "-NaN"}, NAN), ({"s": "1e999"}, INF),
                             ({"s": ""}, None), ({"s": "1_000"}, None), ({"s": ".5"}, 0.5)],
    "convert(s, 'long')": [({"s": "3.25"}, None), ({"s": "42"}, 42), ({"s": " 42"}, None),
                           ({"s": "+42"}, 42), ({"s": str(LMAX + 1)}, None), ({"s": str(LMIN)}, LMIN)],
    "convert(s, 'int')": [({"s": str(IMAX + 1)}, None), ({"s": "-12"}, -12), ({"s": "12.0"}, None)],
    "convert(s, 'bool')": [({"s": "true"}, True), ({"s": "TRUE"}, True), ({"s": "3.25"}, False)],
    "convert(s, 'float')": [({"s": "0.1"}, F01), ({"s": "1.000000178813934326171874999"},
                                                    to_float32(1 + 2**-23))],
    "convert(d, 'string')": [({"d": 1.0}, "1.0"), ({"d": 1e10}, "1.0E10"), ({"d": 0.0001}, "1.0E-4"),
                             ({"d": 1e7}, "1.0E7"), ({"d": 9999999.0}, "9999999.0"),
                             ({"d": 0.001}, "0.001"), ({"d": -0.0}, "-0.0"), ({"d": NAN}, "NaN"),
                             ({"d": -INF}, "-Infinity"), ({"d": 100.0}, "100.0"),
                             ({"d": 5e-324}, "4.9E-324"),
                             ({"d": 2.82879384806159e17}, "2.82879384806159008E17"),
                             ({"d": 1e23}, "9.999999999999999E22"), ({"d": 0.1 + 0.2},
                                                                      "0.30000000000000004"),
                             ({"d": 1.7976931348623157e308}, "1.7976931348623157E308"),
                             ({"d": 123456789.125}, "1.23456789125E8")],
    "convert(f, 'string')": [({"f": to_float32(1.1)}, "1.1"), ({"f": 1e10}, "1.0E10"),
                             ({"f": F01}, "0.1"), ({"f": to_float32(2.82879384806159e17)},
                                                   "2.82879379E17"),
                             ({"f": to_float32(1.4e-45)}, "1.4E-45"),
                             ({"f": to_float32(3.4028235e38)}, "3.4028235E38")],
    "convert(i, 'string')": [({"i": -5}, "-5")],
    "convert(b, 'string')": [({"b": True}, "true")],
    "convert(d, 'int')": [({"d": 3.99}, 3), ({"d": -3.99}, -3), ({"d": NAN}, 0),
                          ({"d": 1e20}, IMAX), ({"d": -1e20}, IMIN)],
    "convert(d, 'long')": [({"d": 1e19}, LMAX)],
    "convert(l, 'int')": [({"l": 2**32 + 1}, 1)],
    "convert(i, 'bool')": [({"i": 1}, True), ({"i": 2}, False)],
    "convert(d, 'bool')": [({"d": 1.0}, True)],
    "convert(b, 'double')": [({"b": True}, 1.0)],
    "convert(b, 'int')": [({"b": False}, 0)],
    "convert(l, 'float')": [({"l": 16777217}, 16777216.0), ({"l": LMAX}, 9.223372036854776e18)],
    "convert(d, 'float')": [({"d": 0.1}, F01), ({"d": 1e40}, INF)],
    "cast(o, 'double')": [({"o": 2.5}, 2.5), ({"o": "x"}, None)],
    "cast(o, 'string')": [({"o": "x"}, "x"), ({"o": 2.5}, None)],
    "cast(o, 'long')": [({"o": 5}, 5)],
    "cast(i, 'long')": [({"i": 5}, 5)],
    "cast(i, 'double')": [({"i": 5}, 5.0)],
    "cast(s, 'int')": [({"s": "5"}, None)],
    "instanceOfDouble(o)": [({"o": 2.5}, True), ({"o": "x"}, False), ({}, False)],
    "instanceOfString(o)": [({"o": "x"}, True)],
    "instanceOfBoolean(o)": [({"o": True}, True)],
    "instanceOfInteger(o)": [({"o": 5}, True), ({"o": 2**40}, False)],
    "instanceOfLong(o)": [({"o": 2**40}, True)],
    "instanceOfInteger(i)": [({"i": 5}, True), ({}, False)],
    "instanceOfLong(i)": [({"i": 5}, False)],
    "instanceOfFloat(f)": [({"f": 1.5}, True)],
    "maximum(i, j)": [({"i": -5, "j": -3}, 0), ({"j": 4}, 4), ({}, 0)],  # Siddhi's MIN_VALUE start
    "minimum(i, j)": [({"i": 5, "j": 3}, 3), ({}, IMAX)],
    "maximum(l, m)": [({"l": 2**53 + 1, "m": 1}, 2**53)],
    "maximum(d, e)": [({"d": NAN, "e": 1.0}, 1.0), ({"d": -1.0, "e": -2.0}, 5e-324)],
    "maximum(f, g)": [({"f": -1.0, "g": -2.0}, 0.0)],
    "maximum(i)": [({"i": -5}, -5), ({}, None)],
    "eventTimestamp()": [({"ts": 1234}, 1234)],
    "currentTimeMillis()": [({"ts": 99}, 99)],
    "sizeOfSet(createSet(s))": [({"s": "a"}, 1), ({}, 1)],
    "createSet(i)": [({"i": 5}, [5])],
    "sizeOfSet(o)": [({}, 0), ({"o": 2.5}, None)],
    "convert(createSet(s), 'string')": [({"s": "a"}, "[a]")],
    # str:
    "str:charAt(s, i)": [({"s": "abc", "i": 1}, "b"), ({"s": "abc", "i": 3}, None),
                         ({"s": "abc", "i": -1}, None)],
    "str:charFrequency(s, t)": [({"s": "banana", "t": "a"}, 3), ({"s": "banana", "t": "an"}, None),
                                ({"s": "", "t": "a"}, 0)],
    "str:coalesce(s, t)": [({"t": "x"}, "x")],
    "str:concat(s, t)": [({"t": "x"}, "x"), ({}, "")],
    "str:concat(s, i, d, f, b, l)": [({"s": "a", "i": 1, "d": 1e10, "f": F01, "b": True, "l": 5},
                                      "a11.0E100.1true5")],
    "str:contains(s, t)": [({"s": "abc", "t": "b"}, True), ({"t": "b"}, False),
                           ({"s": "abc"}, None), ({"s": "abc", "t": ""}, True)],
    "str:equalsIgnoreCase(s, t)": [({"s": "ABC", "t": "abc"}, True), ({"t": "a"}, None),
                                   ({"s": "a"}, False)],
    "str:fillTemplate('{{1}} is {{2}} ({{3}}, {{1}})', s, i, d)": [
        ({"s": "x", "i": 5, "d": 1.5}, "x is 5 (1.5, x)"), ({"i": 5}, "1 is 5 (3, 1)")],
    "str:fillTemplate('id={{ 1 }}', i)": [({"i": 7}, "id=7")],
    "str:fillTemplate('bad {{9}}', s)": [({"s": "x"}, None)],
    "str:hex(s)": [({"s": "AB"}, "4142"), ({"s": "\n"}, "a"), ({"s": "é"}, "e9"), ({"s": ""}, "")],
    "str:length(s)": [({"s": "abc"}, 3), ({"s": ""}, 0), ({}, None)],
    "str:locate(t, s)": [({"t": "b", "s": "abcb"}, 1), ({"t": "x", "s": "abc"}, -1),
                         ({"t": "", "s": "abc"}, 0)],
    "str:locate(t, s, i)": [({"t": "b", "s": "abcb", "i": 2}, 3), ({"t": "x", "s": "abc", "i": 2}, 1),
                            ({"t": "", "s": "abc", "i": 3}, 3), ({"t": "a", "s": "abc", "i": 4}, None),
                            ({"t": "a", "s": "abc", "i": -1}, None)],
    "str:lower(s)": [({"s": "AbC"}, "abc")],
    "str:upper(s)": [({"s": "AbC"}, "ABC")],
    "str:regexp(s, '[a-c]+')": [({"s": "abc"}, True), ({"s": "abcd"}, False), ({"s": "ab\n"}, False)],
    "str:regexp(s, '(?i)ABC')": [({"s": "abc"}, True)],
    "str:regexp(s, '[')": [({"s": "abc"}, None)],
    "str:repeat(s, i)": [({"s": "ab", "i": 3}, "ababab"), ({"s": "ab", "i": -2}, "")],
    "str:replaceAll(s, '[0-9]+', '#')": [({"s": "a1b22"}, "a#b#")],
    "str:replaceAll(s, '([a-z])([0-9])', '$2$1')": [({"s": "a1b2"}, "1a2b")],
    "str:replaceAll(s, 'x*', '-')": [({"s": "abc"}, "-a-b-c-")],
    "str:replaceAll(s, 'b', '$2')": [({"s": "abc"}, None), ({"s": "xyz"}, "xyz")],
    "str:replaceFirst(s, '[0-9]+', '<$0>')": [({"s": "a1b22"}, "a<1>b22")],
    "str:replaceFirst(s, '(?<=a)b', 'X')": [({"s": "abab"}, "aXab")],
    "str:replaceFirst(s, '(?<n>[0-9])', '${n}$10')": [({"s": "a1b2"}, "a110b2")],
    "str:reverse(s)": [({"s": "abc"}, "cba")],
    "str:split(s, ',', i)": [({"s": "a,b,,", "i": 1}, "b"), ({"s": "a,b,,", "i": 2}, None),
                             ({"s": ",", "i": 0}, None), ({"s": "", "i": 0}, ""),
                             ({"s": "abc", "i": 0}, "abc"), ({"s": "a,b", "i": -1}, None)],
    "str:split(s, '(?=b)', i)": [({"s": "abcb", "i": 1}, "bc")],
    "str:strcmp(s, t)": [({"s": "abc", "t": "abd"}, -1), ({"s": "b", "t": "a"}, 1),
                         ({"s": "ab", "t": "abc"}, -1), ({"s": "", "t": ""}, 0),
                         ({"s": "", "t": "xy"}, -2), ({"s": "é", "t": "e"}, 132)],
    "str:substr(s, i)": [({"s": "hello", "i": 2}, "llo"), ({"s": "hello", "i": 5}, ""),
                         ({"s": "hello", "i": 6}, None), ({"s": "hello", "i": -1}, None)],
    "str:substr(s, i, j)": [({"s": "hello", "i": 1, "j": 3}, "ell"), ({"s": "hello", "i": 1, "j": 5}, None),
                            ({"s": "hello", "i": 2, "j": 0}, ""), ({"s": "hello", "i": 1, "j": -1}, None)],
    "str:substr(s, '[0-9]+')": [({"s": "ab12cd34"}, "12"), ({"s": "abc"}, "")],
    "str:substr(s, '([a-z]+)([0-9]+)', 2)": [({"s": "ab12"}, "12"), ({"s": "---"}, "")],
    "str:substr(s, '(a)|(b)', 2)": [({"s": "a"}, "")],  # Java: null (group did not take part)
    "str:substr(s, '(a)', 2)": [({"s": "a"}, None)],
    "str:trim(s)": [({"s": "\t a \n"}, "a"), ({"s": "\u00a0a"}, "\u00a0a")],
    "str:unhex(s)": [({"s": "4142"}, "AB"), ({"s": "414"}, None), ({"s": "zz"}, None),
                     ({"s": ""}, ""), ({"s": "e9"}, "é")],
    # math:
    "math:abs(i)": [({"i": -5}, 5.0)],
    "math:acos(d)": [({"d": 2.0}, NAN), ({"d": 1.0}, 0.0)],
    "math:asin(d)": [({"d": 1.0}, math.pi / 2)],
    "math:atan(d, e)": [({"d": 1.0, "e": 1.0}, math.pi / 4)],
    "math:atan(d)": [({"d": 1.0}, math.pi / 4)],
    "math:bin(i)": [({"i": 5}, "101"), ({"i": -1}, "1" * 32)],
    "math:bin(l)": [({"l": -1}, "1" * 64)],
    "math:cbrt(d)": [({"d": -27.0}, -3.0)],
    "math:ceil(d)": [({"d": 1.2}, 2.0), ({"d": -0.5}, -0.0), ({"d": NAN}, NAN),
                     ({"d": 1e300}, 1e300), ({"d": -INF}, -INF)],
    "math:ceil(f)": [({"f": 1.5}, 2.0)],
    "math:conv(s, 16, 10)": [({"s": "ff"}, "255"), ({"s": "FF"}, "255"), ({"s": "-ff"}, "-255"),
                             ({"s": "fg"}, None), ({"s": "80000000"}, None),
                             ({"s": "7fffffff"}, "2147483647"), ({"s": ""}, None), ({"s": "+a"}, "10")],
    "math:conv(s, 10, 2)": [({"s": "-5"}, "-101")],
    "math:conv(s, 10, 99)": [({"s": "12"}, "12")],
    "math:copySign(d, e)": [({"d": 2.0, "e": -0.0}, -2.0), ({"d": -2.0, "e": 1.0}, 2.0),
                            ({"d": 2.0, "e": NAN}, 2.0)],
    "math:cos(d)": [({"d": 0.0}, 1.0)],
    "math:cosh(d)": [({"d": 1000.0}, INF)],
    "math:exp(d)": [({"d": 1000.0}, INF), ({"d": 1.0}, math.e)],
    "math:e() + math:pi()": [({}, math.e + math.pi)],
    "math:floor(d)": [({"d": -1.5}, -2.0), ({"d": -0.0}, -0.0), ({"d": 0.5}, 0.0)],
    "math:floor(i)": [({"i": 3}, 3.0)],
    "math:getExponent(d)": [({"d": 8.0}, 3), ({"d": 7.999}, 2), ({"d": 0.0}, -1023),
                            ({"d": 1e-310}, -1023), ({"d": INF}, 1024), ({"d": NAN}, 1024),
                            ({"d": 0.75}, -1), ({"d": 2.0**-1022}, -1022)],
    "math:hex(i)": [({"i": 255}, "ff"), ({"i": -1}, "ffffffff")],
    "math:hex(l)": [({"l": -1}, "f" * 16)],
    "math:hex(d)": [({"d": 1.0}, "0x1.0p0"), ({"d": -0.0}, "-0x0.0p0"),
                    ({"d": 5e-324}, "0x0.0000000000001p-1022"), ({"d": 3.0}, "0x1.8p1")],
    "math:hex(f)": [({"f": 1.0}, "0x1.0p0"), ({"f": to_float32(1.4e-45)}, "0x0.000002p-126")],
    "math:isInfinite(d)": [({"d": INF}, True), ({"d": 1.0}, False), ({}, None)],
    "math:isNan(d)": [({"d": NAN}, True), ({}, None)],
    "math:ln(d)": [({"d": 0.0}, -INF), ({"d": -1.0}, NAN), ({"d": 1.0}, 0.0), ({"d": NAN}, NAN)],
    "math:log10(d)": [({"d": 1000.0}, 3.0), ({"d": 0.0}, -INF)],
    "math:log2(d)": [({"d": 8.0}, math.log(8.0) / math.log(2.0))],
    "math:log(d, e)": [({"d": 8.0, "e": 2.0}, math.log(8.0) / math.log(2.0)), ({"d": 8.0, "e": 1.0}, None)],
    "math:max(d, e)": [({"d": NAN, "e": 1.0}, NAN), ({"d": -0.0, "e": 0.0}, 0.0),
                       ({"d": 1.0, "e": 2.0}, 2.0)],
    "math:min(d, e)": [({"d": -0.0, "e": 0.0}, -0.0), ({"d": 0.0, "e": -0.0}, -0.0),
                       ({"d": NAN, "e": 1.0}, NAN)],
    "math:max(i, j)": [({"i": 1, "j": 2}, 2.0)],
    "math:oct(i)": [({"i": 8}, "10"), ({"i": -1}, "37777777777")],
    "math:oct(l)": [({"l": -1}, "1777777777777777777777")],
    "math:parseDouble(s)": [({"s": " 2.5 "}, 2.5), ({"s": "abc"}, None)],
    "math:parseFloat(s)": [({"s": "0.1"}, F01)],
    "math:parseInt(s)": [({"s": "+7"}, 7), ({"s": "7.0"}, None)],
    "math:parseLong(s)": [({"s": str(LMAX)}, LMAX)],
    "math:power(d, e)": [({"d": 2.0, "e": 10.0}, 1024.0), ({"d": 0.0, "e": -1.0}, INF),
                         ({"d": -8.0, "e": 1 / 3}, NAN), ({"d": 1.0, "e": NAN}, NAN),
                         ({"d": -1.0, "e": INF}, NAN), ({"d": NAN, "e": 0.0}, 1.0),
                         ({"d": -0.0, "e": -3.0}, -INF), ({"d": 10.0, "e": 400.0}, INF),
                         ({"d": -10.0, "e": 401.0}, -INF)],
    "math:round(d)": [({"d": 2.5}, 3), ({"d": -2.5}, -2), ({"d": 0.49999999999999994}, 0),
                      ({"d": NAN}, 0), ({"d": 1e20}, LMAX), ({"d": -0.5}, 0), ({"d": -1e20}, LMIN)],
    "math:round(f)": [({"f": 2.5}, 3), ({"f": -2.5}, -2), ({"f": 3e9}, IMAX), ({"f": NAN}, 0)],
    "math:signum(d)": [({"d": -3.0}, -1), ({"d": NAN}, 0), ({"d": 0.0}, 0)],
    "math:sin(d)": [({"d": INF}, NAN), ({"d": 0.0}, 0.0)],
    "math:sinh(d)": [({"d": -1000.0}, -INF)],
    "math:sqrt(d)": [({"d": -1.0}, NAN), ({"d": 4.0}, 2.0)],
    "math:tan(d)": [({"d": 0.0}, 0.0)],
    "math:tanh(d)": [({"d": 1000.0}, 1.0)],
    "math:toDegrees(d)": [({"d": math.pi}, 180.0)],
    "math:toRadians(d)": [({"d": 180.0}, math.pi)],
}
"""Siddhi expression -> rows and the value Siddhi gives for them. The Java semantics behind
each row are in the docstrings of ``eddy.engine.runtime.evaluate``."""

APPROXIMATE = ("math:acos", "math:asin", "math:atan", "math:cbrt", "math:cos", "math:cosh",
               "math:exp", "math:ln", "math:log", "math:power", "math:sin", "math:sinh",
               "math:tan", "math:tanh")
"""Transcendental functions: Spark calls Java's (Strict)Math, Python the C library; they may
differ in the last bit."""

EXPRESSIONS = list(TABLE)
ROWS = [row for rows in TABLE.values() for row, _ in rows]
START = {text: sum(len(TABLE[t]) for t in EXPRESSIONS[:k]) for k, text in enumerate(EXPRESSIONS)}


@pytest.fixture(scope="module")
def table_results(spark: SparkSession) -> dict[str, tuple[list[Any], list[Any]]]:
    exprs = [parse_expression(text) for text in EXPRESSIONS]
    sparks, pythons = evaluate(spark, exprs, ROWS)
    return {text: (sparks[k], pythons[k]) for k, text in enumerate(EXPRESSIONS)}


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_expression(text: str, table_results: dict[str, tuple[list[Any], list[Any]]]) -> None:
    sparks, pythons = table_results[text]
    approx = text.startswith(APPROXIMATE)
    for offset, (row, expected) in enumerate(TABLE[text]):
        got_spark, got_python = sparks[START[text] + offset], pythons[START[text] + offset]
        assert same(got_python, expected, approx), f"Python: {row} -> {got_python!r}"
        assert same(got_spark, expected, approx), f"Spark: {row} -> {got_spark!r}"
    for row, a, b in zip(ROWS, sparks, pythons):
        assert same(a, b, approx), f"Spark and Python differ on {row}: {a!r} vs {b!r}"


def test_random_functions_are_random(spark: SparkSession) -> None:
    exprs = [parse_expression(t) for t in ("UUID()", "math:rand()", "math:rand(42)")]
    sparks, pythons = evaluate(spark, exprs, [{}, {}])
    for uuids in (sparks[0], pythons[0]):
        assert len(set(uuids)) == 2 and all(len(u) == 36 for u in uuids)
    for values in sparks[1:] + pythons[1:]:
        assert all(0 <= v < 1 for v in values)


def test_what_cannot_run_in_spark_says_so() -> None:
    for text in ("sum(i)", "str:replaceFirst(s, '(a)\\1', 'x')", "str:regexp(s, t)"):
        expr = parse_expression(text)
        typer = ExpressionTyper(functions={}, tables=lambda name: None)
        typer.infer(expr, SCOPE, aggregates=True)
        compiler = SparkExpressionCompiler(lambda n: typer.types[id(n)], lambda v: F.col(v.attribute),
                                           F.col("ts"))
        with pytest.raises(UnsupportedInSpark):
            compiler.compile(expr)


def test_java_double_to_string_samples() -> None:
    assert [java_float_text(x) for x in (1.0, 1e10, 0.0001, 1e-3, 1e7, 123.456, 2.0**63)] == \
        ["1.0", "1.0E10", "1.0E-4", "0.001", "1.0E7", "123.456", "9.223372036854776E18"]
    assert java_float_text(to_float32(0.3), single=True) == "0.3"


# ---------------------------------------------------------------------------------------------
# Conformance cases: their filters and projections, evaluated both ways
# ---------------------------------------------------------------------------------------------

CONFORMANCE = [c for c in load_cases(["filter", "projection", "function"]) if c.expected]


@pytest.mark.parametrize("case", CONFORMANCE, ids=lambda c: c.name)
def test_conformance_expressions(case: Any, spark: SparkSession) -> None:
    from eddy.lang import check

    app = check(case.app)
    query = app.queries[0].query
    assert isinstance(query.input, ast.SingleInputStream)
    assert isinstance(query.output, ast.InsertIntoStream)
    stream = query.input.stream
    attributes = app.streams[stream].attributes
    conditions = [h.expression for h in query.input.handlers if isinstance(h, ast.Filter)]
    outputs = [a.expression for a in query.selector.attributes] if query.selector.attributes \
        else [ast.Variable(a.name) for a in attributes]
    kinds = {a.name: a.type for a in attributes}

    def type_of(node: ast.Expression) -> AttrType:
        if id(node) in app.types:
            return app.types[id(node)]
        assert isinstance(node, ast.Variable)
        return kinds[node.attribute]

    events = [i for i in case.inputs if i.get("stream") == stream]
    schema = T.StructType([T.StructField(a.name, spark_type(a.type)) for a in attributes]
                          + [T.StructField("ts", T.LongType()), T.StructField("row", T.IntegerType())])
    df = spark.createDataFrame([(*e["data"], e["timestamp"], k) for k, e in enumerate(events)],
                               schema)
    compiler = SparkExpressionCompiler(type_of, lambda v: F.col(v.attribute), F.col("ts"))
    keep = reduce(lambda x, y: x & y, (compiler.compile_condition(c) for c in conditions),
                  F.lit(True))
    got = df.where(keep).select("row", *(compiler.compile(o).alias(f"x{k}")
                                         for k, o in enumerate(outputs))).collect()
    spark_rows = [list(r)[1:] for r in sorted(got, key=lambda r: r["row"])]

    def resolve(v: ast.Variable) -> Callable[[Any], Any]:
        return lambda ctx: ctx[v.attribute]
    conds = [compile_python(c, type_of, resolve, lambda ctx: ctx["ts"], condition=True)
             for c in conditions]
    projs = [compile_python(o, type_of, resolve, lambda ctx: ctx["ts"]) for o in outputs]
    python_rows = []
    for e in events:
        ctx = {a.name: to_float32(v) if a.type == FLOAT and v is not None else v
               for a, v in zip(attributes, e["data"])} | {"ts": e["timestamp"]}
        if all(cond(ctx) for cond in conds):
            python_rows.append([p(ctx) for p in projs])

    expected = [e["data"] for e in case.expected[query.output.target]]
    types = [t for _, t in case.schemas[query.output.target]]
    for rows in (spark_rows, python_rows):
        assert len(rows) == len(expected), rows
        for got_row, want in zip(rows, expected):
            assert all(values_equal(w, g, t) for w, g, t in zip(want, got_row, types)), \
                (got_row, want)


# ---------------------------------------------------------------------------------------------
# Random expressions over random rows
# ---------------------------------------------------------------------------------------------

NUMERIC = {INT: ("i", "j"), LONG: ("l", "m"), FLOAT: ("f", "g"), DOUBLE: ("d", "e")}
Typed = tuple[ast.Expression, AttrType]


def call(name: str, *args: ast.Expression) -> ast.FunctionCall:
    namespace, _, local = name.rpartition(":")
    return ast.FunctionCall(namespace or None, local, tuple(args))


def to_type(expr: ast.Expression, kind: AttrType) -> ast.Expression:
    return call("convert", expr, ast.Constant(kind.value.lower(), STRING))


def _constant(kind: AttrType) -> st.SearchStrategy[Typed]:
    values = {INT: st.sampled_from([0, 1, -1, 7, IMAX, IMIN]) | st.integers(IMIN, IMAX),
              LONG: st.sampled_from([0, -1, LMAX, LMIN, 2**53 + 1]) | st.integers(LMIN, LMAX),
              FLOAT: st.floats(width=32, allow_nan=False, allow_infinity=False),
              DOUBLE: st.floats(allow_nan=False, allow_infinity=False)}[kind]
    return values.map(lambda v: (ast.Constant(v, kind), kind))


def numbers(depth: int) -> st.SearchStrategy[Typed]:
    leaves = st.one_of(
        st.sampled_from([(ast.Variable(n), k) for k, names in NUMERIC.items() for n in names]),
        *(_constant(k) for k in NUMERIC))
    if depth == 0:
        return leaves
    sub = numbers(depth - 1)

    def same_type(pair: tuple[Typed, Typed]) -> tuple[ast.Expression, ast.Expression, AttrType]:
        (a, ta), (b, _) = pair
        return a, to_type(b, ta), ta
    pairs = st.tuples(sub, sub).map(same_type)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from("+-*/%"), sub, sub).map(
            lambda x: (ast.BinaryOperation(x[0], x[1][0], x[2][0]), promote(x[1][1], x[2][1]))),
        sub.map(lambda x: (ast.Negate(x[0]), x[1])),
        st.tuples(st.one_of(sub, strings(0).map(lambda s: (s, STRING))),
                  st.sampled_from(list(NUMERIC))).map(lambda x: (to_type(x[0][0], x[1]), x[1])),
        st.tuples(booleans(depth - 1), pairs).map(
            lambda x: (call("ifThenElse", x[0], x[1][0], x[1][1]), x[1][2])),
        st.tuples(st.sampled_from(["maximum", "minimum", "coalesce"]), pairs).map(
            lambda x: (call(x[0], x[1][0], x[1][1]), x[1][2])),
        st.tuples(st.sampled_from(["math:abs", "math:floor", "math:signum"]), sub).map(
            lambda x: (call(x[0], x[1][0]), INT if x[0] == "math:signum" else DOUBLE)),
        st.tuples(st.sampled_from(["math:max", "math:min", "math:copySign"]), sub, sub).map(
            lambda x: (call(x[0], x[1][0], x[2][0]), DOUBLE)),
        sub.map(lambda x: (call("math:round", to_type(x[0], DOUBLE)), LONG)),
        sub.map(lambda x: (call("math:ceil", to_type(x[0], FLOAT)), DOUBLE)),
    )


def booleans(depth: int) -> st.SearchStrategy[ast.Expression]:
    leaves = st.sampled_from([ast.Variable("b"), ast.Variable("c"), ast.Constant(True, BOOL)])
    if depth == 0:
        return leaves
    sub, nums, strs = booleans(depth - 1), numbers(depth - 1), strings(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), nums, nums).map(
            lambda x: ast.BinaryOperation(x[0], x[1][0], x[2][0])),
        st.tuples(st.sampled_from(["==", "!="]), strs, strs).map(
            lambda x: ast.BinaryOperation(x[0], x[1], x[2])),
        st.tuples(st.sampled_from(["and", "or", "==", "!="]), sub, sub).map(
            lambda x: ast.BinaryOperation(x[0], x[1], x[2])),
        sub.map(ast.Not),
        st.one_of(nums.map(lambda x: x[0]), strs).map(ast.IsNull),
        strs.map(lambda s: to_type(s, BOOL)),
        st.tuples(st.sampled_from(["str:contains", "str:equalsIgnoreCase"]), strs, strs).map(
            lambda x: call(x[0], x[1], x[2])),
    )


def strings(depth: int) -> st.SearchStrategy[ast.Expression]:
    leaves = st.one_of(st.sampled_from([ast.Variable("s"), ast.Variable("t")]),
                       st.sampled_from(["", "a", "Ab", "1.5"]).map(lambda v: ast.Constant(v, STRING)))
    if depth == 0:
        return leaves
    sub = strings(depth - 1)
    return st.one_of(
        leaves,
        numbers(depth - 1).map(lambda x: to_type(x[0], STRING)),
        booleans(depth - 1).map(lambda x: to_type(x, STRING)),
        st.tuples(sub, sub).map(lambda x: call("str:concat", *x)),
        st.tuples(st.sampled_from(["str:upper", "str:reverse", "str:trim"]), sub).map(
            lambda x: call(x[0], x[1])),
        st.tuples(booleans(depth - 1), sub, sub).map(lambda x: call("ifThenElse", *x)),
    )


TEXTS = ["", "0", "-12", "+5", "3.25", "1e10", "NaN", "-Infinity", "inf", "true", "TRUE", "abc",
         " 7 ", "0x1p3", "2147483648", "9223372036854775807", "1.5f", "Σ"]
ROW = st.fixed_dictionaries({
    "i": st.none() | st.sampled_from([0, 1, -1, IMAX, IMIN]) | st.integers(IMIN, IMAX),
    "j": st.none() | st.sampled_from([0, 1, -1, IMAX, IMIN]) | st.integers(-100, 100),
    "l": st.none() | st.sampled_from([0, -1, LMAX, LMIN]) | st.integers(LMIN, LMAX),
    "m": st.none() | st.sampled_from([0, 1, -1]) | st.integers(-(2**40), 2**40),
    "f": st.none() | st.sampled_from([0.0, -0.0, 1.5]) | st.floats(width=32),
    "g": st.none() | st.sampled_from([0.0, 16777216.0]) | st.floats(width=32),
    "d": st.none() | st.sampled_from([0.0, -0.0, 0.1, 1e10, 1e-5]) | st.floats(),
    "e": st.none() | st.sampled_from([0.0, 2.5]) | st.floats(),
    "s": st.none() | st.sampled_from(TEXTS) | st.text(max_size=4),
    "t": st.none() | st.sampled_from(TEXTS),
    "b": st.none() | st.booleans(),
    "c": st.none() | st.booleans(),
})
EXPRESSION = st.one_of(numbers(3).map(lambda x: x[0]), booleans(3), strings(2))


@settings(max_examples=6, deadline=None, derandomize=True, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(exprs=st.lists(EXPRESSION, min_size=40, max_size=40),
       rows=st.lists(ROW, min_size=12, max_size=12))
def test_random_expressions_agree(spark: SparkSession, exprs: list[ast.Expression],
                                  rows: list[dict[str, Any]]) -> None:
    sparks, pythons = evaluate(spark, exprs, rows)
    for expr, a_values, b_values in zip(exprs, sparks, pythons):
        for row, a, b in zip(rows, a_values, b_values):
            assert same(a, b), f"{expr}\n  on {row}\n  Spark {a!r} != Python {b!r}"


def test_float32_rounding_matches_java_bits() -> None:
    assert struct.pack("<f", to_float32(0.1)) == struct.pack("<f", 0.1)
    assert to_float32(3.4028235677973366e38) == INF and to_float32(-1e39) == -INF
