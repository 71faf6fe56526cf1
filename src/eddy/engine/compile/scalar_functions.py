"""Siddhi's scalar functions as native Spark columns, with Java's semantics.

The Spark half of the function library (the Python twins are in
:mod:`eddy.runtime.functions` and :mod:`eddy.runtime.evaluate`; the tests
check they agree). Every function here runs in the JVM as a Catalyst expression; none is
a Python UDF. Where Spark's built-in differs from the Java method Siddhi calls, the column
patches the difference: ``ln(0)`` is -Infinity not null, ``ceil`` returns a double,
``Math.round`` rounds half up, ``Math.max`` lets NaN win, ``Integer.toHexString`` is
unsigned lower case, NaN compares false, and so on.

Where the reference engine throws at run time (null arguments to most ``str:`` functions, an
index out of range, a number that does not parse), the column is null. Functions that need a
constant where Spark would otherwise fail a whole micro-batch on one bad value (regexes,
replacement strings, ``math:conv`` radices, ``str:fillTemplate`` templates, regex group
numbers) raise :class:`UnsupportedInSpark` when given a non-constant, so the caller
evaluates them in Python. OBJECT values are Spark variants (see :func:`spark_type`).

Two compromises: ``math:hex`` of a FLOAT/DOUBLE calls Java's ``toHexString`` through
``reflect`` (still JVM, but Spark treats it as nondeterministic), and ``str:substr`` by
regex and group gives '' where the group took no part in the match (Java: null), because
``regexp_extract`` cannot tell; the Python twin does the same.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    VariantType,
)

from eddy.lang.ast import AttrType
from eddy.runtime.functions import TEMPLATE_BRACES
from eddy.runtime.java import (
    JAVA_SPACE,
    RADIX_DIGITS,
    java_regex,
    java_split,
    parse_integral,
    parse_replacement,
    to_float32,
)

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
INT_MIN, INT_MAX, LONG_MIN, LONG_MAX = -(2 ** 31), 2 ** 31 - 1, -(2 ** 63), 2 ** 63 - 1


class UnsupportedInSpark(Exception):
    """The expression cannot run in the JVM (a script function, ``in Table``, a pattern-event
    reference, an aggregate, a non-constant regex): evaluate it in Python instead."""


_SPARK_TYPES: dict[AttrType, DataType] = {
    INT: IntegerType(), LONG: LongType(), FLOAT: FloatType(), DOUBLE: DoubleType(),
    STRING: StringType(), BOOL: BooleanType(), OBJECT: VariantType(),
}


def spark_type(t: AttrType) -> DataType:
    """The Spark type holding a Siddhi type. OBJECT is a VARIANT: it keeps the runtime type
    (``instanceOfDouble``, ``cast``) that Siddhi's Java objects carry, and holds sets
    (``createSet``) as variant arrays."""
    return _SPARK_TYPES[t]


def object_from_json(text: Column) -> Column:
    """An ``object`` attribute's JSON text (as columns and the bus carry it) as the variant
    expressions compute with. Spark parses ``1.5`` as a DECIMAL; a JSON fraction is a
    ``java.lang.Double`` in the reference and in the Python twin, so it becomes a DOUBLE
    variant (integral JSON numbers stay BIGINT: an Integer or a Long, by range)."""
    parsed = F.try_parse_json(text)
    decimal = F.schema_of_variant(parsed).startswith("DECIMAL")
    return F.when(decimal, F.try_variant_get(parsed, "$", "double").cast(VariantType())) \
        .otherwise(parsed)


def object_to_json(value: Column) -> Column:
    """The JSON text of an ``object`` variant (the inverse of :func:`object_from_json`)."""
    return F.to_json(value)


def typed_lit(value: object, t: AttrType) -> Column:
    """A literal of Siddhi type ``t`` (FLOAT rounded once, in Python, like the twin)."""
    if t == FLOAT and isinstance(value, (int, float)):
        value = to_float32(float(value))
    return F.lit(value).cast(spark_type(t))


def null(t: AttrType) -> Column:
    return F.lit(None).cast(spark_type(t))


def _dbl(c: Column) -> Column:
    return c.cast(DoubleType())


# ---------------------------------------------------------------------------------------------
# Java's String.valueOf, parse* and casts
# ---------------------------------------------------------------------------------------------

def java_string(c: Column, t: AttrType) -> Column:
    """``String.valueOf``: Spark's casts to string use Java's ``Double.toString`` /
    ``Float.toString`` (``1.0E10``), ``true``/``false`` and decimal integers already; a
    variant set prints like ``HashSet.toString`` (``[a, b]``)."""
    if t != OBJECT:
        return c.cast(StringType())
    items = F.try_variant_get(c, "$", "array<variant>")
    listed = F.array_join(F.transform(items, lambda e: e.cast(StringType())), ", ", "null")
    return F.when(items.isNotNull(), F.concat(F.lit("["), listed, F.lit("]"))) \
        .otherwise(c.cast(StringType()))


def parse_number(c: Column, t: AttrType) -> Column:
    """``Integer.parseInt`` … ``Double.parseDouble`` of a string column; null where Java
    throws. Spark's casts are more lenient (``' 12 '`` and ``'3.25'`` as ints, ``'inf'``),
    so the text is checked first."""
    if t in (INT, LONG):
        return F.when(c.rlike(r"^[+-]?[0-9]+\z"), c.cast(spark_type(t)))
    ws = "[\\x00-\\x20]*"
    spark_only = c.rlike(f"^{ws}[+-]?(?i:inf|infinity|nan){ws}\\z") \
        & ~c.rlike(f"^{ws}[+-]?(Infinity|NaN){ws}\\z")
    return F.when(~spark_only, c.cast(spark_type(t)))


def cast_number(c: Column, source: AttrType, target: AttrType) -> Column:
    """Java's primitive conversion between numeric types (non-ANSI casts truncate and
    saturate like Java's). An int or long rounded to float gets ``+ 0.0f``: Spark's
    optimizer would otherwise merge ``cast(cast(l as float) as double)`` into
    ``cast(l as double)`` and lose the rounding Java does."""
    if target == FLOAT and source in (INT, LONG):
        return c.cast(FloatType()) + F.lit(0.0).cast(FloatType())
    return c.cast(spark_type(target))


def convert(c: Column, source: AttrType, target: AttrType) -> Column:
    """``convert(x, 'type')``: Java's primitive casts between numbers (non-ANSI Spark casts
    truncate and saturate the same way), parse* from strings, ``Boolean.parseBoolean``."""
    if target == STRING:
        return java_string(c, source)
    if source == target:
        return c
    if target == BOOL:
        return F.lower(c) == "true" if source == STRING else c == F.lit(1)
    if source == STRING:
        return parse_number(c, target)
    return cast_number(c, source, target)


def variant_is(v: Column, t: AttrType) -> Column:
    """Whether a variant holds a value of Siddhi type ``t`` (an integral that fits 32 bits
    is an INT, a larger one a LONG, as in the Python twin)."""
    name = F.schema_of_variant(v)
    if t in (INT, LONG):
        fits = F.try_variant_get(v, "$", "bigint").between(INT_MIN, INT_MAX)
        return (name == "BIGINT") & (fits if t == INT else ~fits)
    return name == {FLOAT: "FLOAT", DOUBLE: "DOUBLE", STRING: "STRING", BOOL: "BOOLEAN"}[t]


def cast(c: Column, source: AttrType, target: AttrType) -> Column:
    """``cast(x, 'type')``; see :func:`eddy.runtime.evaluate._cast` for the rules."""
    if source == OBJECT:
        accept = variant_is(c, target) | variant_is(c, INT) if target == LONG \
            else variant_is(c, target)
        same = F.when(accept, F.try_variant_get(c, "$", spark_type(target).simpleString()))
        if not target.is_numeric:
            return same
        integral = variant_is(c, INT) | variant_is(c, LONG)
        floating = variant_is(c, FLOAT) | variant_is(c, DOUBLE)
        return (same.when(integral, cast_number(F.try_variant_get(c, "$", "bigint"), LONG,
                                                target))
                .when(floating, cast_number(F.try_variant_get(c, "$", "double"), DOUBLE,
                                            target)))
    if source == target or target == STRING or (source.is_numeric and target.is_numeric):
        return convert(c, source, target)
    return null(target)


# ---------------------------------------------------------------------------------------------
# Java Math
# ---------------------------------------------------------------------------------------------

def java_ln(c: Column, log: Callable[[Column], Column] = F.ln) -> Column:
    """``Math.log``: Spark gives null for x <= 0; Java -Infinity for 0 and NaN below."""
    d = _dbl(c)
    return F.when(d > 0, log(d)).when(d == 0, F.lit(-math.inf)) \
        .when(d.isNotNull(), F.lit(math.nan))


def _floor_like(c: Column, fn: Callable[[Column], Column]) -> Column:
    """``Math.floor``/``Math.ceil``: a double (Spark's give a long), signed zeros kept."""
    d = _dbl(c)
    r = fn(d).cast(DoubleType())
    return F.when(F.abs(d) < 2.0 ** 52, F.when(r == 0, d * 0.0).otherwise(r)).otherwise(d)


def _round(c: Column, t: AttrType) -> Column:
    """``Math.round``: floor(x) + (frac >= 0.5), saturating; NaN gives 0."""
    d, (lo, hi) = _dbl(c), ((INT_MIN, INT_MAX) if t == INT else (LONG_MIN, LONG_MAX))
    fl = F.floor(d)
    r = fl + F.when(d - fl.cast(DoubleType()) >= 0.5, 1).otherwise(0)
    return F.when(F.isnan(d), F.lit(0)).when(d >= float(hi), F.lit(hi)) \
        .when(d <= float(lo), F.lit(lo)).when(d.isNotNull(), F.least(F.greatest(r, F.lit(lo)),
                                                                     F.lit(hi))) \
        .cast(spark_type(t))


def _extreme(a: Column, b: Column, larger: bool) -> Column:
    """``Math.max``/``Math.min``: NaN wins; +0.0 is larger than -0.0."""
    a, b = _dbl(a), _dbl(b)
    zeros = -((-a) + (-b)) if not larger else a + b  # -0.0 + 0.0 is 0.0
    pick = F.greatest(a, b) if larger else F.least(a, b)
    return F.when(a.isNull() | b.isNull(), F.lit(None)) \
        .when(F.isnan(a) | F.isnan(b), F.lit(math.nan)) \
        .when((a == b) & (a == 0), zeros).otherwise(pick)


def _negative(d: Column) -> Column:
    """Whether a double's sign bit is set (-0.0 included: Spark has no bit access, but its
    string is ``-0.0``); false for NaN."""
    return (d < 0) | ((d == 0) & d.cast(StringType()).startswith("-"))


def _copy_sign(m: Column, s: Column) -> Column:
    s = _dbl(s)
    magnitude = F.abs(_dbl(m))
    return F.when(s.isNotNull(), F.when(_negative(s), -magnitude).otherwise(magnitude))


def _atan2(y: Column, x: Column) -> Column:
    """``Math.atan2``: Spark's adds 0.0 to both sides, which loses Java's signed zeros."""
    y, x = _dbl(y), _dbl(x)
    at_zero = F.when((y == 0) & (x == 0), F.when(_negative(x), F.lit(math.pi)).otherwise(0.0))
    r = F.coalesce(at_zero, F.atan2(y, x))
    return F.when((y == 0) & _negative(y), -r).otherwise(r)


def _get_exponent(c: Column) -> Column:
    """``Math.getExponent`` without the bits: log2, corrected at powers of two."""
    d = F.abs(_dbl(c))
    e = F.floor(F.log2(d))
    e = F.when(F.pow(F.lit(2.0), e) > d, e - 1) \
        .when(F.pow(F.lit(2.0), e + 1) <= d, e + 1).otherwise(e)
    return F.when(F.isnan(d) | (d == math.inf), F.lit(1024)) \
        .when(d < 2.2250738585072014e-308, F.lit(-1023)).otherwise(e).cast(IntegerType())


def _unsigned(c: Column, t: AttrType) -> Column:
    """An int as Java's ``toBinaryString``/``toHexString`` see it: unsigned 32 bits."""
    return c.cast(LongType()).bitwiseAND(F.lit(0xFFFFFFFF)) if t == INT else c


def _float_hex(c: Column, t: AttrType) -> Column:
    cls = "java.lang.Float" if t == FLOAT else "java.lang.Double"
    return F.when(c.isNotNull(), F.reflect(F.lit(cls), F.lit("toHexString"), c))


def _const(consts: Sequence[object | None], i: int, what: str) -> object:
    value = consts[i] if i < len(consts) else None
    if value is None:
        raise UnsupportedInSpark(f"{what} must be a constant to run in Spark")
    return value


def _const_int(consts: Sequence[object | None], i: int, what: str) -> int:
    value = _const(consts, i, what)
    if not isinstance(value, int):
        raise UnsupportedInSpark(f"{what} must be an integer constant")
    return value


def _math_conv(args: Sequence[Column], consts: Sequence[object | None]) -> Column:
    """``Integer.toString(Integer.parseInt(a, from), to)`` for constant radices."""
    src, dst = _const_int(consts, 1, "the radix"), _const_int(consts, 2, "the radix")
    if not 2 <= src <= 36:
        return null(STRING)
    dst = dst if 2 <= dst <= 36 else 10
    a = args[0]
    digits = RADIX_DIGITS[:src] + RADIX_DIGITS[10:src].upper()
    magnitude = F.conv(F.regexp_replace(a, "^[+-]", ""), src, 10).cast(LongType())
    value = F.when(a.startswith("-"), -magnitude).otherwise(magnitude)
    text = F.lower(F.conv(F.abs(value).cast(StringType()), 10, dst))
    return F.when(a.rlike(f"^[+-]?[{digits}]+\\z") & value.between(INT_MIN, INT_MAX),
                  F.concat(F.when(value < 0, F.lit("-")).otherwise(F.lit("")), text))


# ---------------------------------------------------------------------------------------------
# Strings and regexes
# ---------------------------------------------------------------------------------------------

def _regex(consts: Sequence[object | None], i: int) -> str | None:
    """A constant Java regex, or None when it does not compile (every call then throws in
    Java: null). Spark would fail the batch on a bad regex, so it is checked here."""
    pattern = str(_const(consts, i, "the regex"))
    try:
        java_regex(pattern)
    except (re.error, KeyError):
        return None
    return pattern


def _replace(args: Sequence[Column], consts: Sequence[object | None], first: bool) -> Column:
    """``replaceAll``/``replaceFirst`` with a constant regex and replacement: Spark's
    ``regexp_replace`` is Java's ``Matcher.appendReplacement`` loop already."""
    pattern, text = _regex(consts, 1), str(_const(consts, 2, "the replacement"))
    if pattern is None:
        return null(STRING)
    parts, problem = parse_replacement(java_regex(pattern), text)
    if problem is not None:  # Java throws on a match; no match leaves the string as it is
        return F.when(F.regexp_like(args[0], F.lit(pattern)), null(STRING)).otherwise(args[0])
    if not first:
        return F.regexp_replace(args[0], F.lit(pattern), F.lit(text))
    if re.search(r"\\[1-9]|\\k<", pattern):
        raise UnsupportedInSpark("str:replaceFirst with back-references runs in Python")
    # The first match is the one after the shortest prefix. With the prefix as group 1 and
    # the match as group 2, group n of the regex becomes n + 2 (and $0 is $2). A shifted $n
    # can't absorb a following digit d: Java stopped because 10n + d exceeded the group
    # count, and 10(n + 2) + d exceeds the new count, which is 2 more.
    shifted = "".join(p.replace("\\", "\\\\").replace("$", "\\$") if isinstance(p, str)
                      else f"${p + 2 if p else 2}" for p in parts)
    return F.regexp_replace(args[0], F.lit(f"\\A([\\s\\S]*?)({pattern})"),
                            F.lit("$1" + shifted))


def _split(args: Sequence[Column], consts: Sequence[object | None]) -> Column:
    """``s.split(regex)[n]``: Java drops trailing empty pieces unless nothing matched."""
    pattern = _regex(consts, 1)
    if pattern is None:
        return null(STRING)
    pieces = F.split(args[0], pattern, -1)
    last_filled = F.aggregate(
        pieces, F.struct(F.lit(0).alias("i"), F.lit(0).alias("k")),
        lambda acc, x: F.struct((acc["i"] + 1).alias("i"),
                                F.when(x != "", acc["i"] + 1).otherwise(acc["k"]).alias("k")))
    kept = F.when(F.size(pieces) == 1, F.lit(1)).otherwise(last_filled["k"])
    n = args[2]
    return F.when((n >= 0) & (n < kept), F.get(pieces, n))


def _strcmp(a: Column, b: Column) -> Column:
    """``String.compareTo``: the difference of the first differing characters, else of the
    lengths."""
    n = F.least(F.length(a), F.length(b))
    differ = F.filter(F.sequence(F.lit(1), n),
                      lambda i: F.substring(a, i, 1) != F.substring(b, i, 1))
    at = F.try_element_at(differ, F.lit(1))
    by_char = F.ascii(F.substring(a, at, 1)) - F.ascii(F.substring(b, at, 1))
    return F.when((n == 0) | at.isNull(), F.length(a) - F.length(b)).otherwise(by_char)


def _substr(args: Sequence[Column], types: Sequence[AttrType],
            consts: Sequence[object | None]) -> Column:
    s = args[0]
    if types[1] == STRING:  # by regex: the first match (or group), '' when none
        pattern = _regex(consts, 1)
        group = _const_int(consts, 2, "the group") if len(args) == 3 else 0
        if pattern is None or not 0 <= group <= java_regex(pattern).groups:
            return null(STRING)
        return F.call_function("regexp_extract", s, F.lit(pattern), F.lit(group))
    begin = args[1]
    if len(args) == 2:
        return F.when((begin >= 0) & (begin <= F.length(s)), s.substr(begin + 1, F.length(s)))
    end = begin + args[2]
    return F.when((begin >= 0) & (begin <= end) & (end <= F.length(s)),
                  s.substr(begin + 1, args[2]))


def _locate(args: Sequence[Column]) -> Column:
    """``b.substring(start).indexOf(a) + start`` (so -1 + start when absent)."""
    a, b = args[0], args[1]
    if len(args) == 2:
        return (F.position(a, b) - 1).cast(IntegerType())
    start = args[2]
    found = F.position(a, b, start + 1)
    return F.when((start < 0) | (start > F.length(b)), null(INT)).when(a == "", start) \
        .otherwise(F.when(found == 0, start - 1).otherwise(found - 1)).cast(IntegerType())


def _fill_template(args: Sequence[Column], types: Sequence[AttrType],
                   consts: Sequence[object | None]) -> Column:
    """``{{n}}`` is argument n; a null argument leaves the key's text."""
    template = _const(consts, 0, "the template of str:fillTemplate")
    if types[1] == OBJECT and len(args) == 2:
        raise UnsupportedInSpark("str:fillTemplate with a map runs in Python")
    parts: list[Column] = []
    for i, piece in enumerate(java_split(str(template), TEMPLATE_BRACES)):
        if i % 2 == 0:
            parts.append(F.lit(piece))
            continue
        index = parse_integral(piece.strip(JAVA_SPACE))
        if index is None or not 0 <= index < len(args):
            return null(STRING)
        parts.append(F.coalesce(java_string(args[index], types[index]), F.lit(piece)))
    return F.concat(*parts) if parts else F.lit("")


def _hex_chars(s: Column) -> Column:
    codes = F.transform(F.split(s, ""),
                        lambda c: F.lower(F.conv(F.ascii(c).cast(StringType()), 10, 16)))
    return F.when(s == "", F.lit("")).otherwise(F.array_join(codes, ""))


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

Builder = Callable[[Sequence[Column], Sequence[AttrType], Sequence[object | None], AttrType],
                   Column]

FUNCTIONS: dict[str, Builder] = {
    "str:charAt": lambda a, t, k, r: F.when((a[1] >= 0) & (a[1] < F.length(a[0])),
                                            a[0].substr(a[1] + 1, F.lit(1))),
    "str:charFrequency": lambda a, t, k, r: F.when(
        F.length(a[1]) == 1,
        (F.length(a[0]) - F.length(F.replace(a[0], a[1], F.lit("")))).cast(LongType())),
    "str:concat": lambda a, t, k, r: F.concat_ws("", *(java_string(c, ty) for c, ty in zip(a, t))),
    "str:contains": lambda a, t, k, r: F.when(a[0].isNull(), F.lit(False))
    .otherwise(F.contains(a[0], a[1])),
    "str:equalsIgnoreCase": lambda a, t, k, r: F.when(a[0].isNull(), null(BOOL))
    .when(a[1].isNull(), F.lit(False)).otherwise(F.lower(a[0]) == F.lower(a[1])),
    "str:fillTemplate": lambda a, t, k, r: _fill_template(a, t, k),
    "str:hex": lambda a, t, k, r: _hex_chars(a[0]),
    "str:length": lambda a, t, k, r: F.length(a[0]),
    "str:locate": lambda a, t, k, r: _locate(a),
    "str:lower": lambda a, t, k, r: F.lower(a[0]),
    "str:upper": lambda a, t, k, r: F.upper(a[0]),
    "str:regexp": lambda a, t, k, r: null(BOOL) if (p := _regex(k, 1)) is None
    else F.regexp_like(a[0], F.lit(f"\\A(?:{p})\\z")),
    "str:repeat": lambda a, t, k, r: F.repeat(a[0], a[1]),
    "str:replaceAll": lambda a, t, k, r: _replace(a, k, first=False),
    "str:replaceFirst": lambda a, t, k, r: _replace(a, k, first=True),
    "str:reverse": lambda a, t, k, r: F.reverse(a[0]),
    "str:split": lambda a, t, k, r: _split(a, k),
    "str:strcmp": lambda a, t, k, r: _strcmp(a[0], a[1]),
    "str:substr": lambda a, t, k, r: _substr(a, t, k),
    "str:trim": lambda a, t, k, r: F.trim(a[0], F.lit(JAVA_SPACE)),
    "str:unhex": lambda a, t, k, r: F.when(F.length(a[0]) % 2 == 0,
                                           F.decode(F.unhex(a[0]), "ISO-8859-1")),
    "math:abs": lambda a, t, k, r: F.abs(_dbl(a[0])),
    "math:acos": lambda a, t, k, r: F.acos(_dbl(a[0])),
    "math:asin": lambda a, t, k, r: F.asin(_dbl(a[0])),
    "math:atan": lambda a, t, k, r: F.atan(_dbl(a[0])) if len(a) == 1 else _atan2(a[0], a[1]),
    "math:bin": lambda a, t, k, r: F.bin(_unsigned(a[0], t[0])),
    "math:cbrt": lambda a, t, k, r: F.cbrt(_dbl(a[0])),
    "math:ceil": lambda a, t, k, r: _floor_like(a[0], F.ceil),
    "math:conv": lambda a, t, k, r: _math_conv(a, k),
    "math:copySign": lambda a, t, k, r: _copy_sign(a[0], a[1]),
    "math:cos": lambda a, t, k, r: F.cos(_dbl(a[0])),
    "math:cosh": lambda a, t, k, r: F.cosh(_dbl(a[0])),
    "math:e": lambda a, t, k, r: F.lit(math.e),
    "math:exp": lambda a, t, k, r: F.exp(_dbl(a[0])),
    "math:floor": lambda a, t, k, r: _floor_like(a[0], F.floor),
    "math:getExponent": lambda a, t, k, r: _get_exponent(a[0]),
    "math:hex": lambda a, t, k, r: F.lower(F.hex(_unsigned(a[0], t[0]))) if t[0] in (INT, LONG)
    else _float_hex(a[0], t[0]),
    "math:isInfinite": lambda a, t, k, r: F.abs(_dbl(a[0])) == math.inf,
    "math:isNan": lambda a, t, k, r: F.when(a[0].isNotNull(), F.isnan(a[0])),
    "math:ln": lambda a, t, k, r: java_ln(a[0]),
    "math:log": lambda a, t, k, r: F.when(_dbl(a[1]) != 1, java_ln(a[0]) / java_ln(a[1])),
    "math:log10": lambda a, t, k, r: java_ln(a[0], F.log10),
    "math:log2": lambda a, t, k, r: java_ln(a[0]) / F.lit(math.log(2.0)),
    "math:max": lambda a, t, k, r: _extreme(a[0], a[1], larger=True),
    "math:min": lambda a, t, k, r: _extreme(a[0], a[1], larger=False),
    "math:oct": lambda a, t, k, r: F.conv(F.hex(_unsigned(a[0], t[0])), 16, 8),
    "math:parseDouble": lambda a, t, k, r: parse_number(a[0], DOUBLE),
    "math:parseFloat": lambda a, t, k, r: parse_number(a[0], FLOAT),
    "math:parseInt": lambda a, t, k, r: parse_number(a[0], INT),
    "math:parseLong": lambda a, t, k, r: parse_number(a[0], LONG),
    "math:pi": lambda a, t, k, r: F.lit(math.pi),
    "math:power": lambda a, t, k, r: F.pow(_dbl(a[0]), _dbl(a[1])),
    "math:rand": lambda a, t, k, r: F.rand(_const_int(k, 0, "the seed")) if a else F.rand(),
    "math:round": lambda a, t, k, r: _round(a[0], r),
    "math:signum": lambda a, t, k, r: F.signum(_dbl(a[0])).cast(IntegerType()),
    "math:sin": lambda a, t, k, r: F.sin(_dbl(a[0])),
    "math:sinh": lambda a, t, k, r: F.sinh(_dbl(a[0])),
    "math:sqrt": lambda a, t, k, r: F.sqrt(_dbl(a[0])),
    "math:tan": lambda a, t, k, r: F.tan(_dbl(a[0])),
    "math:tanh": lambda a, t, k, r: F.tanh(_dbl(a[0])),
    "math:toDegrees": lambda a, t, k, r: F.degrees(_dbl(a[0])),
    "math:toRadians": lambda a, t, k, r: F.radians(_dbl(a[0])),
}
"""``str:`` and ``math:`` functions: (argument columns, their types, constant values, result
type) -> column. The compiler casts the result to the Siddhi result type."""
