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

import json
import math
from collections.abc import Callable, Sequence
from functools import reduce
from typing import Any

import pytest
from conformance import load_cases, values_equal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from pyspark.sql import Column, DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from eddy.engine.compile.expressions import (  # noqa: E402
    SparkExpressionCompiler,
    UnsupportedInSpark,
)
from eddy.engine.compile.expressions import spark_type  # noqa: E402
from eddy.lang import ast, check  # noqa: E402
from eddy.lang.ast import Attribute, AttrType  # noqa: E402
from eddy.lang.parser import parse_expression  # noqa: E402
from eddy.lang.scope import Scope, Source  # noqa: E402
from eddy.lang.typecheck import ExpressionTyper, promote  # noqa: E402
from eddy.runtime.evaluate import compile_python  # noqa: E402
from eddy.runtime.java import to_float32  # noqa: E402

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
COLUMNS = {"i": INT, "j": INT, "l": LONG, "m": LONG, "f": FLOAT, "g": FLOAT, "d": DOUBLE,
           "e": DOUBLE, "s": STRING, "t": STRING, "b": BOOL, "c": BOOL, "o": OBJECT}
SCOPE = Scope((Source("S", "stream", tuple(Attribute(n, t) for n, t in COLUMNS.items()),
                      frozenset({"S"})),))
IMAX, IMIN, LMAX, LMIN = 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)
NAN, INF = math.nan, math.inf
F01, F02 = to_float32(0.1), to_float32(0.2)

# Evaluation in both engines ----------------------------------------------------------------------


def typed(expr: ast.Expression, aggregates: bool = False) -> Callable[[ast.Expression], AttrType]:
    typer = ExpressionTyper(functions={}, tables=lambda name: None)
    typer.infer(expr, SCOPE, aggregates=aggregates)
    return lambda node: typer.types[id(node)]


def spark_column(expr: ast.Expression, aggregates: bool = False) -> Column:
    compiler = SparkExpressionCompiler(typed(expr, aggregates), lambda v: F.col(v.attribute),
                                       F.col("ts"))
    return compiler.compile(expr)


def python_closure(expr: ast.Expression) -> Callable[[Any], Any]:
    return compile_python(expr, typed(expr), lambda v: (lambda row: row[v.attribute]),
                          lambda row: row["ts"])


def frame(spark: SparkSession, rows: Sequence[dict[str, Any]]) -> DataFrame:
    """Rows as a DataFrame; an OBJECT value as the JSON text columns carry it (the compiler
    reads it as a variant of its Python type)."""
    fields = [T.StructField(n, spark_type(t)) for n, t in COLUMNS.items() if t != OBJECT]
    fields += [T.StructField("o", T.StringType()), T.StructField("ts", T.LongType()),
               T.StructField("row", T.IntegerType())]
    data = [(*(row.get(n) for n, t in COLUMNS.items() if t != OBJECT),
             None if row.get("o") is None else json.dumps(row["o"]),
             row.get("ts", 1000), index) for index, row in enumerate(rows)]
    return spark.createDataFrame(data, T.StructType(fields))


def evaluate(spark: SparkSession, exprs: Sequence[ast.Expression],
             rows: Sequence[dict[str, Any]]) -> tuple[list[list[Any]], list[list[Any]]]:
    """(spark, python) values, indexed [expression][row]."""
    df, sparks = frame(spark, rows).cache(), []
    for start in range(0, len(exprs), 30):  # Spark compiles 30 columns faster than 180
        cols = [spark_column(e).alias(f"x{k}") for k, e in enumerate(exprs[start:start + 30])]
        got = sorted(df.select("row", *cols).collect(), key=lambda r: r["row"])
        sparks += [[plain(r[f"x{k}"]) for r in got] for k in range(len(cols))]
    df.unpersist()
    contexts = [{"ts": 1000, **{n: None for n in COLUMNS}, **row} for row in rows]
    pythons = [[plain(fn(ctx)) for ctx in contexts] for fn in map(python_closure, exprs)]
    return sparks, pythons


def plain(value: Any) -> Any:
    """Variants as Python values; sets (Spark arrays, Python frozensets) as sorted lists."""
    value = value.toPython() if hasattr(value, "toPython") else value
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


# The table: expression -> [(row, expected Siddhi value)] -----------------------------------------

def r(expected: Any, **row: Any) -> tuple[dict[str, Any], Any]:
    """A row of the table: the attribute values (missing ones are null), then the result."""
    return row, expected


# Siddhi expression -> rows and the value Siddhi gives for them (the Java semantics behind
# each row are in the docstrings of eddy.runtime.evaluate).
TABLE: dict[str, list[tuple[dict[str, Any], Any]]] = {
    # arithmetic: promotion, Java wrap-around, truncating division, null on / or % by zero
    "i + j": [r(3, i=1, j=2), r(IMIN, i=IMAX, j=1), r(None, i=None, j=1)],
    "i * 1000000": [r(-727379968, i=1000000)],
    "l * m": [r(-2, l=LMAX, m=2), r(-12, l=3, m=-4)],
    "i - l": [r(IMIN - 1, i=IMIN, l=1)],
    "i / j": [r(3, i=7, j=2), r(-3, i=-7, j=2), r(-3, i=7, j=-2), r(None, i=5, j=0),
        r(IMIN, i=IMIN, j=-1), r(None, j=1)],
    "i % j": [r(1, i=7, j=2), r(-1, i=-7, j=2), r(1, i=7, j=-2), r(None, i=5, j=0),
        r(0, i=IMIN, j=-1)],
    "l / m": [r(LMIN, l=LMIN, m=-1), r(None, l=9, m=0)],
    "d / e": [r(None, d=1.0, e=0.0), r(None, d=1.0, e=-0.0), r(3.75, d=7.5, e=2.0),
        r(-0.0, d=-0.0, e=2.0)],
    "d % e": [r(1.5, d=7.5, e=2.0), r(-1.5, d=-7.5, e=2.0), r(None, d=5.0, e=0.0),
        r(NAN, d=INF, e=2.0), r(5.0, d=5.0, e=INF)],
    "d / j": [r(0.75, d=1.5, j=2), r(None, d=2.0, j=0)],
    "d * 1e308": [r(INF, d=10.0)],
    "f + g": [r(to_float32(F01 + F02), f=F01, g=F02)],
    "f / g": [r(to_float32(1 / 3), f=1.0, g=3.0), r(None, f=1.0, g=0.0)],
    "f % g": [r(1.5, f=5.5, g=2.0)],
    "f * i": [r(8388608.0, f=0.5, i=16777217)],
    "l + f": [r(16777216.0, l=16777217, f=0.0)],
    "l + d": [r(float(2**53), l=2**53 + 1, d=0.0)],
    "0.1f + 0.2f": [r(to_float32(F01 + F02))],
    "0 - (i + j)": [r(IMIN, i=IMAX, j=1), r(-3, i=1, j=2)],
    "d * -1": [r(-0.0, d=0.0)],
    "l + 10 sec": [r(10005, l=5)],
    # comparisons: Java's promotion, NaN, null is false
    "i > f": [r(False, i=16777217, f=16777216.0), r(True, i=2, f=1.5)],
    "l == f": [r(False, l=16777217, f=16777216.0)],
    "l > f": [r(False, l=16777217, f=16777216.0)],
    "l == d": [r(True, l=2**53 + 1, d=float(2**53))],
    "i == l": [r(True, i=5, l=5), r(False, i=None, l=5)],
    "f < d": [r(False, f=F01, d=0.1)],
    "d < e": [r(False, d=NAN, e=1.0), r(False, d=1.0, e=NAN), r(True, d=1.0, e=2.0)],
    "d == e": [r(False, d=NAN, e=NAN), r(True, d=-0.0, e=0.0), r(False, d=None, e=1.0)],
    "d != e": [r(True, d=NAN, e=NAN), r(True, d=None, e=NAN), r(True)],  # null: '!=' holds
    "s == t": [r(True, s="a", t="a"), r(False, s="a"), r(False)],
    "s != t": [r(True, s="a", t="b"), r(True, s="a"), r(False, s="a", t="a")],
    "b == c": [r(True, b=True, c=True), r(False)],
    "null == s": [r(False, s="a")],
    # logic: null is false, 'not null' is true
    "b and c": [r(False, c=True), r(True, b=True, c=True)],
    "b or c": [r(True, c=True), r(False)],
    "not b": [r(True), r(False, b=True)],
    "not (b and c)": [r(True, c=True)],
    "not (d > e)": [r(True, d=NAN, e=1.0)],
    "i is null": [r(True), r(False, i=0)],
    "d is null": [r(False, d=NAN)],
    "coalesce(s, t) is null": [r(True), r(False, t="x")],
    # core functions
    "ifThenElse(b, i, j)": [r(2, i=1, j=2), r(1, b=True, i=1, j=2)],
    "coalesce(s, t, 'x')": [r("x"), r("b", t="b")],
    "default(d, 0.0)": [r(0.0), r(1.5, d=1.5)],
    "convert(s, 'double')": [r(3.25, s="3.25"), r(42.0, s="42"), r(None, s="true"),
        r(1.5, s=" 1.5d "), r(8.0, s="0x1p3"), r(None, s="inf"), r(INF, s="Infinity"),
        r(NAN, s="-NaN"), r(INF, s="1e999"), r(None, s=""), r(None, s="1_000"), r(0.5, s=".5")],
    "convert(s, 'long')": [r(None, s="3.25"), r(42, s="42"), r(None, s=" 42"), r(42, s="+42"),
        r(None, s=str(LMAX + 1)), r(LMIN, s=str(LMIN))],
    "convert(s, 'int')": [r(None, s=str(IMAX + 1)), r(-12, s="-12"), r(None, s="12.0")],
    "convert(s, 'bool')": [r(True, s="true"), r(True, s="TRUE"), r(False, s="3.25")],
    "convert(s, 'float')": [r(F01, s="0.1"),
        r(to_float32(1 + 2**-23), s="1.000000178813934326171874999")],
    "convert(d, 'string')": [r("1.0", d=1.0), r("1.0E10", d=1e10), r("1.0E-4", d=0.0001),
        r("1.0E7", d=1e7), r("9999999.0", d=9999999.0), r("0.001", d=0.001), r("-0.0", d=-0.0),
        r("NaN", d=NAN), r("-Infinity", d=-INF), r("100.0", d=100.0), r("4.9E-324", d=5e-324),
        r("2.82879384806159008E17", d=2.82879384806159e17), r("9.999999999999999E22", d=1e23),
        r("0.30000000000000004", d=0.1 + 0.2),
        r("1.7976931348623157E308", d=1.7976931348623157e308),
        r("1.23456789125E8", d=123456789.125)],
    "convert(f, 'string')": [r("1.1", f=to_float32(1.1)), r("1.0E10", f=1e10), r("0.1", f=F01),
        r("2.82879379E17", f=to_float32(2.82879384806159e17)), r("1.4E-45", f=to_float32(1.4e-45)),
        r("3.4028235E38", f=to_float32(3.4028235e38))],
    "convert(i, 'string')": [r("-5", i=-5)],
    "convert(b, 'string')": [r("true", b=True)],
    "convert(d, 'int')": [r(3, d=3.99), r(-3, d=-3.99), r(0, d=NAN), r(IMAX, d=1e20),
        r(IMIN, d=-1e20)],
    "convert(d, 'long')": [r(LMAX, d=1e19)],
    "convert(l, 'int')": [r(1, l=2**32 + 1)],
    "convert(i, 'bool')": [r(True, i=1), r(False, i=2)],
    "convert(d, 'bool')": [r(True, d=1.0)],
    "convert(b, 'double')": [r(1.0, b=True)],
    "convert(b, 'int')": [r(0, b=False)],
    "convert(l, 'float')": [r(16777216.0, l=16777217), r(9.223372036854776e18, l=LMAX)],
    "convert(d, 'float')": [r(F01, d=0.1), r(INF, d=1e40)],
    "cast(o, 'double')": [r(2.5, o=2.5), r(None, o="x")],
    "cast(o, 'string')": [r("x", o="x"), r(None, o=2.5)],
    "cast(o, 'long')": [r(5, o=5), r(7, o=7.0), r(-3, o=-3.9)],
    "cast(o, 'int')": [r(7, o=7.0), r(5, o=5), r(None, o="x"), r(None, o=True)],
    "cast(o, 'float')": [r(2.5, o=2.5), r(5.0, o=5)],
    "cast(i, 'long')": [r(5, i=5)],
    "cast(i, 'double')": [r(5.0, i=5)],
    "cast(s, 'int')": [r(None, s="5")],
    "instanceOfDouble(o)": [r(True, o=2.5), r(False, o="x"), r(False)],
    "instanceOfString(o)": [r(True, o="x")],
    "instanceOfBoolean(o)": [r(True, o=True)],
    "instanceOfInteger(o)": [r(True, o=5), r(False, o=2**40)],
    "instanceOfLong(o)": [r(True, o=2**40)],
    "instanceOfInteger(i)": [r(True, i=5), r(False)],
    "instanceOfLong(i)": [r(False, i=5)],
    "instanceOfFloat(f)": [r(True, f=1.5)],
    "maximum(i, j)": [r(0, i=-5, j=-3), r(4, j=4), r(0)],  # Siddhi's MIN_VALUE start
    "minimum(i, j)": [r(3, i=5, j=3), r(IMAX)],
    "maximum(l, m)": [r(2**53, l=2**53 + 1, m=1)],
    "maximum(d, e)": [r(1.0, d=NAN, e=1.0), r(5e-324, d=-1.0, e=-2.0)],
    "maximum(f, g)": [r(0.0, f=-1.0, g=-2.0)],
    "maximum(i)": [r(-5, i=-5), r(None)],
    "eventTimestamp()": [r(1234, ts=1234)],
    "currentTimeMillis()": [r(99, ts=99)],
    "sizeOfSet(createSet(s))": [r(1, s="a"), r(1)],
    "createSet(i)": [r([5], i=5)],
    "sizeOfSet(o)": [r(0), r(None, o=2.5)],
    "convert(createSet(s), 'string')": [r("[a]", s="a")],
    # str:
    "str:charAt(s, i)": [r("b", s="abc", i=1), r(None, s="abc", i=3), r(None, s="abc", i=-1)],
    "str:charFrequency(s, t)": [r(3, s="banana", t="a"), r(None, s="banana", t="an"),
        r(0, s="", t="a")],
    "str:coalesce(s, t)": [r("x", t="x")],
    "str:concat(s, t)": [r("x", t="x"), r("")],
    "str:concat(s, i, d, f, b, l)": [r("a11.0E100.1true5", s="a", i=1, d=1e10, f=F01, b=True, l=5)],
    "str:contains(s, t)": [r(True, s="abc", t="b"), r(False, t="b"), r(None, s="abc"),
        r(True, s="abc", t="")],
    "str:equalsIgnoreCase(s, t)": [r(True, s="ABC", t="abc"), r(None, t="a"), r(False, s="a")],
    "str:fillTemplate('{{1}} is {{2}} ({{3}}, {{1}})', s, i, d)": [
        r("x is 5 (1.5, x)", s="x", i=5, d=1.5), r("1 is 5 (3, 1)", i=5)],
    "str:fillTemplate('id={{ 1 }}', i)": [r("id=7", i=7)],
    "str:fillTemplate('bad {{9}}', s)": [r(None, s="x")],
    "str:hex(s)": [r("4142", s="AB"), r("a", s="\n"), r("e9", s="é"), r("", s="")],
    "str:length(s)": [r(3, s="abc"), r(0, s=""), r(None)],
    "str:locate(t, s)": [r(1, t="b", s="abcb"), r(-1, t="x", s="abc"), r(0, t="", s="abc")],
    "str:locate(t, s, i)": [r(3, t="b", s="abcb", i=2), r(1, t="x", s="abc", i=2),
        r(3, t="", s="abc", i=3), r(None, t="a", s="abc", i=4), r(None, t="a", s="abc", i=-1)],
    "str:lower(s)": [r("abc", s="AbC")],
    "str:upper(s)": [r("ABC", s="AbC")],
    "str:regexp(s, '[a-c]+')": [r(True, s="abc"), r(False, s="abcd"), r(False, s="ab\n")],
    "str:regexp(s, '(?i)ABC')": [r(True, s="abc")],
    "str:regexp(s, '[')": [r(None, s="abc")],
    "str:repeat(s, i)": [r("ababab", s="ab", i=3), r("", s="ab", i=-2)],
    "str:replaceAll(s, '[0-9]+', '#')": [r("a#b#", s="a1b22")],
    "str:replaceAll(s, '([a-z])([0-9])', '$2$1')": [r("1a2b", s="a1b2")],
    "str:replaceAll(s, 'x*', '-')": [r("-a-b-c-", s="abc")],
    "str:replaceAll(s, 'b', '$2')": [r(None, s="abc"), r("xyz", s="xyz")],
    "str:replaceFirst(s, '[0-9]+', '<$0>')": [r("a<1>b22", s="a1b22")],
    "str:replaceFirst(s, '(?<=a)b', 'X')": [r("aXab", s="abab")],
    "str:replaceFirst(s, '(?<n>[0-9])', '${n}$10')": [r("a110b2", s="a1b2")],
    "str:reverse(s)": [r("cba", s="abc")],
    "str:split(s, ',', i)": [r("b", s="a,b,,", i=1), r(None, s="a,b,,", i=2), r(None, s=",", i=0),
        r("", s="", i=0), r("abc", s="abc", i=0), r(None, s="a,b", i=-1)],
    "str:split(s, '(?=b)', i)": [r("bc", s="abcb", i=1)],
    "str:strcmp(s, t)": [r(-1, s="abc", t="abd"), r(1, s="b", t="a"), r(-1, s="ab", t="abc"),
        r(0, s="", t=""), r(-2, s="", t="xy"), r(132, s="é", t="e")],
    "str:substr(s, i)": [r("llo", s="hello", i=2), r("", s="hello", i=5), r(None, s="hello", i=6),
        r(None, s="hello", i=-1)],
    "str:substr(s, i, j)": [r("ell", s="hello", i=1, j=3), r(None, s="hello", i=1, j=5),
        r("", s="hello", i=2, j=0), r(None, s="hello", i=1, j=-1)],
    "str:substr(s, '[0-9]+')": [r("12", s="ab12cd34"), r("", s="abc")],
    "str:substr(s, '([a-z]+)([0-9]+)', 2)": [r("12", s="ab12"), r("", s="---")],
    "str:substr(s, '(a)|(b)', 2)": [r("", s="a")],  # Java: null (group did not take part)
    "str:substr(s, '(a)', 2)": [r(None, s="a")],
    "str:trim(s)": [r("a", s="\t a \n"), r("\u00a0a", s="\u00a0a")],
    "str:unhex(s)": [r("AB", s="4142"), r(None, s="414"), r(None, s="zz"), r("", s=""),
        r("é", s="e9")],
    # math:
    "math:abs(i)": [r(5.0, i=-5)],
    "math:acos(d)": [r(NAN, d=2.0), r(0.0, d=1.0)],
    "math:asin(d)": [r(math.pi / 2, d=1.0)],
    "math:atan(d, e)": [r(math.pi / 4, d=1.0, e=1.0)],
    "math:atan(d)": [r(math.pi / 4, d=1.0)],
    "math:bin(i)": [r("101", i=5), r("1" * 32, i=-1)],
    "math:bin(l)": [r("1" * 64, l=-1)],
    "math:cbrt(d)": [r(-3.0, d=-27.0)],
    "math:ceil(d)": [r(2.0, d=1.2), r(-0.0, d=-0.5), r(NAN, d=NAN), r(1e300, d=1e300),
        r(-INF, d=-INF)],
    "math:ceil(f)": [r(2.0, f=1.5)],
    "math:conv(s, 16, 10)": [r("255", s="ff"), r("255", s="FF"), r("-255", s="-ff"),
        r(None, s="fg"), r(None, s="80000000"), r("2147483647", s="7fffffff"), r(None, s=""),
        r("10", s="+a")],
    "math:conv(s, 10, 2)": [r("-101", s="-5")],
    "math:conv(s, 10, 99)": [r("12", s="12")],
    "math:copySign(d, e)": [r(-2.0, d=2.0, e=-0.0), r(2.0, d=-2.0, e=1.0), r(2.0, d=2.0, e=NAN)],
    "math:cos(d)": [r(1.0, d=0.0)],
    "math:cosh(d)": [r(INF, d=1000.0)],
    "math:exp(d)": [r(INF, d=1000.0), r(math.e, d=1.0)],
    "math:e() + math:pi()": [r(math.e + math.pi)],
    "math:floor(d)": [r(-2.0, d=-1.5), r(-0.0, d=-0.0), r(0.0, d=0.5)],
    "math:floor(i)": [r(3.0, i=3)],
    "math:getExponent(d)": [r(3, d=8.0), r(2, d=7.999), r(-1023, d=0.0), r(-1023, d=1e-310),
        r(1024, d=INF), r(1024, d=NAN), r(-1, d=0.75), r(-1022, d=2.0**-1022)],
    "math:hex(i)": [r("ff", i=255), r("ffffffff", i=-1)],
    "math:hex(l)": [r("f" * 16, l=-1)],
    "math:hex(d)": [r("0x1.0p0", d=1.0), r("-0x0.0p0", d=-0.0),
        r("0x0.0000000000001p-1022", d=5e-324), r("0x1.8p1", d=3.0)],
    "math:hex(f)": [r("0x1.0p0", f=1.0), r("0x0.000002p-126", f=to_float32(1.4e-45))],
    "math:isInfinite(d)": [r(True, d=INF), r(False, d=1.0), r(None)],
    "math:isNan(d)": [r(True, d=NAN), r(None)],
    "math:ln(d)": [r(-INF, d=0.0), r(NAN, d=-1.0), r(0.0, d=1.0), r(NAN, d=NAN)],
    "math:log10(d)": [r(3.0, d=1000.0), r(-INF, d=0.0)],
    "math:log2(d)": [r(math.log(8.0) / math.log(2.0), d=8.0)],
    "math:log(d, e)": [r(math.log(8.0) / math.log(2.0), d=8.0, e=2.0), r(None, d=8.0, e=1.0)],
    "math:max(d, e)": [r(NAN, d=NAN, e=1.0), r(0.0, d=-0.0, e=0.0), r(2.0, d=1.0, e=2.0)],
    "math:min(d, e)": [r(-0.0, d=-0.0, e=0.0), r(-0.0, d=0.0, e=-0.0), r(NAN, d=NAN, e=1.0)],
    "math:max(i, j)": [r(2.0, i=1, j=2)],
    "math:oct(i)": [r("10", i=8), r("37777777777", i=-1)],
    "math:oct(l)": [r("1777777777777777777777", l=-1)],
    "math:parseDouble(s)": [r(2.5, s=" 2.5 "), r(None, s="abc")],
    "math:parseFloat(s)": [r(F01, s="0.1")],
    "math:parseInt(s)": [r(7, s="+7"), r(None, s="7.0")],
    "math:parseLong(s)": [r(LMAX, s=str(LMAX))],
    "math:power(d, e)": [r(1024.0, d=2.0, e=10.0), r(INF, d=0.0, e=-1.0), r(NAN, d=-8.0, e=1 / 3),
        r(NAN, d=1.0, e=NAN), r(NAN, d=-1.0, e=INF), r(1.0, d=NAN, e=0.0), r(-INF, d=-0.0, e=-3.0),
        r(INF, d=10.0, e=400.0), r(-INF, d=-10.0, e=401.0)],
    "math:round(d)": [r(3, d=2.5), r(-2, d=-2.5), r(0, d=0.49999999999999994), r(0, d=NAN),
        r(LMAX, d=1e20), r(0, d=-0.5), r(LMIN, d=-1e20)],
    "math:round(f)": [r(3, f=2.5), r(-2, f=-2.5), r(IMAX, f=3e9), r(0, f=NAN)],
    "math:signum(d)": [r(-1, d=-3.0), r(0, d=NAN), r(0, d=0.0)],
    "math:sin(d)": [r(NAN, d=INF), r(0.0, d=0.0)],
    "math:sinh(d)": [r(-INF, d=-1000.0)],
    "math:sqrt(d)": [r(NAN, d=-1.0), r(2.0, d=4.0)],
    "math:tan(d)": [r(0.0, d=0.0)],
    "math:tanh(d)": [r(1.0, d=1000.0)],
    "math:toDegrees(d)": [r(180.0, d=math.pi)],
    "math:toRadians(d)": [r(math.pi, d=180.0)],
}

# Transcendental functions: Spark calls Java's (Strict)Math, Python the C library.
APPROXIMATE = ("math:acos", "math:asin", "math:atan", "math:cbrt", "math:cos", "math:cosh",
               "math:exp", "math:ln", "math:log", "math:power", "math:sin", "math:sinh",
               "math:tan", "math:tanh")

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


def test_what_cannot_run_in_spark_says_so(spark: SparkSession) -> None:
    for text in ("max(i)", "str:replaceFirst(s, '(a)\\1', 'x')", "str:regexp(s, t)"):
        with pytest.raises(UnsupportedInSpark):
            spark_column(parse_expression(text), aggregates=True)


# Conformance cases: their filters and projections, evaluated both ways ---------------------------

CONFORMANCE = [c for c in load_cases(["filter", "projection", "function"]) if c.expected]


@pytest.mark.parametrize("case", CONFORMANCE, ids=lambda c: c.name)
def test_conformance_expressions(case: Any, spark: SparkSession) -> None:
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
                          + [T.StructField("ts", T.LongType()),
                             T.StructField("row", T.IntegerType())])
    df = spark.createDataFrame([(*e["data"], e["timestamp"], k) for k, e in enumerate(events)],
                               schema)
    compiler = SparkExpressionCompiler(type_of, lambda v: F.col(v.attribute), F.col("ts"))
    keep = reduce(lambda x, y: x & y, (compiler.compile_condition(c) for c in conditions),
                  F.lit(True))
    got = df.where(keep).select("row", *(compiler.compile(o).alias(f"x{k}")
                                         for k, o in enumerate(outputs))).collect()
    spark_rows = [list(r)[1:] for r in sorted(got, key=lambda r: r["row"])]

    def closure(expr: ast.Expression, condition: bool = False) -> Callable[[Any], Any]:
        return compile_python(expr, type_of, lambda v: lambda ctx: ctx[v.attribute],
                              lambda ctx: ctx["ts"], condition=condition)
    conds, projs = [closure(c, True) for c in conditions], [closure(o) for o in outputs]
    contexts = [{a.name: to_float32(v) if a.type == FLOAT and v is not None else v
                 for a, v in zip(attributes, e["data"])} | {"ts": e["timestamp"]} for e in events]
    python_rows = [[p(c) for p in projs] for c in contexts if all(k(c) for k in conds)]

    expected = [e["data"] for e in case.expected[query.output.target]]
    types = [t for _, t in case.schemas[query.output.target]]
    for rows in (spark_rows, python_rows):
        assert len(rows) == len(expected), rows
        for got_row, want in zip(rows, expected):
            assert all(values_equal(w, g, t) for w, g, t in zip(want, got_row, types)), \
                (got_row, want)


# Random expressions over random rows -------------------------------------------------------------

NUMERIC = {INT: ("i", "j"), LONG: ("l", "m"), FLOAT: ("f", "g"), DOUBLE: ("d", "e")}
ARITHMETIC: list[ast.BinaryOperator] = ["+", "-", "*", "/", "%"]
ORDERING: list[ast.BinaryOperator] = ["==", "!=", "<", "<=", ">", ">="]
EQUALITY: list[ast.BinaryOperator] = ["==", "!="]
LOGICAL: list[ast.BinaryOperator] = ["and", "or", "==", "!="]
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
        st.tuples(st.sampled_from(ARITHMETIC), sub, sub).map(
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
        st.tuples(st.sampled_from(ORDERING), nums, nums).map(
            lambda x: ast.BinaryOperation(x[0], x[1][0], x[2][0])),
        st.tuples(st.sampled_from(EQUALITY), strs, strs).map(
            lambda x: ast.BinaryOperation(x[0], x[1], x[2])),
        st.tuples(st.sampled_from(LOGICAL), sub, sub).map(
            lambda x: ast.BinaryOperation(x[0], x[1], x[2])),
        sub.map(ast.Not),
        st.one_of(nums.map(lambda x: x[0]), strs).map(ast.IsNull),
        strs.map(lambda s: to_type(s, BOOL)),
        st.tuples(st.sampled_from(["str:contains", "str:equalsIgnoreCase"]), strs, strs).map(
            lambda x: call(x[0], x[1], x[2])),
    )


def strings(depth: int) -> st.SearchStrategy[ast.Expression]:
    constants = st.sampled_from(["", "a", "Ab", "1.5"]).map(lambda v: ast.Constant(v, STRING))
    leaves = st.one_of(st.sampled_from([ast.Variable("s"), ast.Variable("t")]), constants)
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


# One example is one Spark job over many expressions and rows. No shrinking: the failure
# message names the one expression and row already.
BATCHES = settings(max_examples=3, deadline=None, derandomize=True, phases=[Phase.generate],
                   suppress_health_check=list(HealthCheck))


def assert_agree(spark: SparkSession, exprs: list[ast.Expression],
                 rows: list[dict[str, Any]]) -> None:
    sparks, pythons = evaluate(spark, exprs, rows)
    for expr, a_values, b_values in zip(exprs, sparks, pythons):
        for row, a, b in zip(rows, a_values, b_values):
            assert same(a, b), f"{expr}\n  on {row}\n  Spark {a!r} != Python {b!r}"


@BATCHES
@given(exprs=st.lists(EXPRESSION, min_size=40, max_size=40),
       rows=st.lists(ROW, min_size=16, max_size=16))
def test_random_expressions_agree(spark: SparkSession, exprs: list[ast.Expression],
                                  rows: list[dict[str, Any]]) -> None:
    assert_agree(spark, exprs, rows)


NUMBER_TEXT = st.sampled_from(TEXTS) | st.from_regex(
    r"\A[ ]?[+-]?([0-9]{1,20}(\.[0-9]{0,20})?|\.[0-9]{1,5})([eE][+-]?[0-9]{1,3})?[dfDF]?\Z")


@BATCHES
@given(doubles=st.lists(st.floats(), min_size=150, max_size=150),
       floats=st.lists(st.floats(width=32), min_size=150, max_size=150),
       texts=st.lists(NUMBER_TEXT, min_size=150, max_size=150))
def test_numbers_print_and_parse_like_the_jvm(spark: SparkSession, doubles: list[float],
                                              floats: list[float], texts: list[str]) -> None:
    """Java's Double.toString/Float.toString and parse* against the JVM Spark runs on."""
    exprs = [parse_expression(t) for t in ("convert(d, 'string')", "convert(f, 'string')",
                                           "convert(s, 'double')", "convert(s, 'float')",
                                           "convert(s, 'int')", "convert(s, 'long')")]
    rows = [{"d": x, "f": y, "s": z} for x, y, z in zip(doubles, floats, texts)]
    assert_agree(spark, exprs, rows)
