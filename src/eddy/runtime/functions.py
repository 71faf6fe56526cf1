"""The Python twins of Siddhi's ``str:`` and ``math:`` functions (siddhi-execution-string and
-math), value by value; :mod:`eddy.engine.compile.scalar_functions` has the Spark columns, and
``tests/engine/test_expressions.py`` checks they agree.

:data:`STRICT` maps each function that gives null for a null argument to a factory of its
implementation; :mod:`.evaluate` wraps them so that where Java throws (a bad index, regex or
number) the result is null too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from eddy.lang.ast import AttrType
from eddy.runtime.java import (
    INTEGRAL_RANGE,
    JAVA_SPACE,
    RADIX_DIGITS,
    java_double_hex,
    java_regex,
    java_replacement,
    java_split,
    java_string,
    parse_double,
    parse_float,
    parse_integral,
)

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE


def _ieee(fn: Callable[[float], float], fallback: Callable[[float], float]
          ) -> Callable[[float], float]:
    """A :mod:`math` function with Java's IEEE results where Python raises."""
    def run(x: float) -> float:
        try:
            return fn(x)
        except (ValueError, OverflowError):
            return fallback(x)
    return run


def _nan(x: float) -> float:
    return math.nan


_ln = _ieee(math.log, lambda x: -math.inf if x == 0 else math.nan)
_log10 = _ieee(math.log10, lambda x: -math.inf if x == 0 else math.nan)


def _odd_integer(y: float) -> bool:
    return math.isfinite(y) and y == int(y) and int(y) % 2 == 1


def _java_pow(x: float, y: float) -> float:
    if y == 0:
        return 1.0
    if x != x or y != y or (abs(x) == 1 and math.isinf(y)):
        return math.nan
    try:
        return math.pow(x, y)
    except OverflowError:
        return -math.inf if x < 0 and _odd_integer(y) else math.inf
    except ValueError:  # 0 ** negative, or negative ** non-integer
        if x != 0:
            return math.nan
        return -math.inf if math.copysign(1.0, x) < 0 and _odd_integer(y) else math.inf


def _java_extreme(larger: bool) -> Callable[[float, float], float]:
    """``Math.max``/``Math.min``: NaN wins, and +0.0 > -0.0."""
    def run(a: float, b: float) -> float:
        a, b = float(a), float(b)
        if a != a or b != b:
            return math.nan
        if a == b == 0:
            return a if (math.copysign(1.0, a) > 0) == larger else b
        return max(a, b) if larger else min(a, b)
    return run


def _java_floor(fn: Callable[[float], int]) -> Callable[[float], float]:
    """``Math.floor``/``Math.ceil`` returning a double, with Java's signed zeros."""
    def run(x: float) -> float:
        x = float(x)
        if not abs(x) < 2.0 ** 52:
            return x
        r = float(fn(x))
        return r if r != 0 else x * 0.0
    return run


def _java_round(kind: AttrType) -> Callable[[float], int]:
    """``Math.round``: half up, saturating, NaN -> 0 (FLOAT gives INT, DOUBLE gives LONG)."""
    lo, hi = INTEGRAL_RANGE[kind]

    def run(x: float) -> int:
        if x != x:
            return 0
        if not lo < x < hi:
            return hi if x > 0 else lo
        f = math.floor(x)
        return max(lo, min(hi, f + (x - f >= 0.5)))
    return run


def _get_exponent(x: float) -> int:
    x = float(x)
    if not math.isfinite(x):
        return 1024
    return -1023 if abs(x) < 2.2250738585072014e-308 else math.frexp(x)[1] - 1


def _cbrt(x: float) -> float:
    r = math.cbrt(x)
    return float(round(r)) if math.isfinite(r) and round(r) ** 3 == x else r  # exact cubes


def _copy_sign(m: float, s: float) -> float:
    return math.copysign(float(m), 1.0 if s != s else float(s))  # NaN's sign: positive


def _math_conv(text: str, src: int, dst: int) -> str | None:
    """``Integer.toString(Integer.parseInt(text, src), dst)``."""
    if not 2 <= src <= 36 or not re.fullmatch(
            f"[+-]?[{RADIX_DIGITS[:src]}{RADIX_DIGITS[10:src].upper()}]+", text):
        return None
    value = int(text, src)
    if parse_integral(str(value)) is None:
        return None
    dst = dst if 2 <= dst <= 36 else 10
    n, digits = abs(value), ""
    while True:
        n, d = divmod(n, dst)
        digits = RADIX_DIGITS[d] + digits
        if n == 0:
            return ("-" if value < 0 else "") + digits


def _strcmp(a: str, b: str) -> int:
    for x, y in zip(a, b):
        if x != y:
            return ord(x) - ord(y)
    return len(a) - len(b)


def _unhex(s: str) -> str | None:
    if len(s) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", s):
        return None
    return "".join(chr(int(s[i:i + 2], 16)) for i in range(0, len(s), 2))


def _locate(a: str, b: str, start: int = 0) -> int | None:
    if not 0 <= start <= len(b):
        return None
    index = b.find(a, start)
    return index if index >= 0 else start - 1  # Java: indexOf in substring(start), + start


def _substr(s: str, arg: int | str, extra: int | None = None) -> str | None:
    if isinstance(arg, str):  # by regex: the first match, or its group `extra`
        pattern = java_regex(arg)
        if extra is not None and not 0 <= extra <= pattern.groups:
            return None
        m = pattern.search(s)
        return (m.group(extra or 0) or "") if m else ""
    end = len(s) if extra is None else arg + extra
    return s[arg:end] if 0 <= arg <= end <= len(s) else None


TEMPLATE_BRACES = re.compile(r"\{\{|}}")
"""What ``str:fillTemplate`` splits its template at (shared with the Spark twin)."""


def fill_template(values: Sequence[Any], types: Sequence[AttrType]) -> str:
    """``str:fillTemplate``: ``{{n}}`` is argument n (the template is 0), or ``{{key}}`` of a
    map; a null value leaves the key's text."""
    out = []
    for i, piece in enumerate(java_split(values[0], TEMPLATE_BRACES)):
        value = piece
        if i % 2:
            key = piece.strip(JAVA_SPACE)
            if isinstance(values[1], dict) and len(values) == 2:
                value = values[1].get(key, piece)
            else:
                index = parse_integral(key)
                if index is None or index < 0:
                    raise ValueError(key)
                value = values[index]
                value = piece if value is None else java_string(value, types[index])
        out.append(piece if value is None else str(value))
    return "".join(out)


_MASK = {INT: 0xFFFFFFFF, LONG: 0xFFFFFFFFFFFFFFFF, FLOAT: 0, DOUBLE: 0}
StrictFactory = Callable[[Sequence[AttrType], Sequence[object | None]], Callable[..., Any]]

STRICT: dict[str, StrictFactory] = {
    "str:charAt": lambda t, k: lambda s, i: s[i] if 0 <= i < len(s) else None,
    "str:charFrequency": lambda t, k: lambda s, c: s.count(c) if len(c) == 1 else None,
    "str:hex": lambda t, k: lambda s: "".join(f"{ord(c):x}" for c in s),
    "str:length": lambda t, k: len,
    "str:locate": lambda t, k: _locate,
    "str:lower": lambda t, k: str.lower,
    "str:upper": lambda t, k: str.upper,
    "str:regexp": lambda t, k: lambda s, r: java_regex(r).fullmatch(s) is not None,
    "str:repeat": lambda t, k: lambda s, n: s * max(n, 0),
    "str:replaceAll": lambda t, k: lambda s, r, x: java_regex(r).sub(
        java_replacement(java_regex(r), x), s),
    "str:replaceFirst": lambda t, k: lambda s, r, x: java_regex(r).sub(
        java_replacement(java_regex(r), x), s, count=1),
    "str:reverse": lambda t, k: lambda s: s[::-1],
    "str:split": lambda t, k: lambda s, r, n: java_split(s, java_regex(r))[n] if n >= 0 else None,
    "str:strcmp": lambda t, k: _strcmp,
    "str:substr": lambda t, k: _substr,
    "str:trim": lambda t, k: lambda s: s.strip(JAVA_SPACE),
    "str:unhex": lambda t, k: _unhex,
    "math:abs": lambda t, k: lambda x: abs(float(x)),
    "math:acos": lambda t, k: _ieee(math.acos, _nan),
    "math:asin": lambda t, k: _ieee(math.asin, _nan),
    "math:atan": lambda t, k: lambda *x: math.atan(x[0]) if len(x) == 1 else math.atan2(*x),
    "math:bin": lambda t, k: lambda x: f"{x & _MASK[t[0]]:b}",
    "math:cbrt": lambda t, k: _cbrt,
    "math:ceil": lambda t, k: _java_floor(math.ceil),
    "math:conv": lambda t, k: _math_conv,
    "math:copySign": lambda t, k: _copy_sign,
    "math:cos": lambda t, k: _ieee(math.cos, _nan),
    "math:cosh": lambda t, k: _ieee(math.cosh, lambda x: math.inf),
    "math:exp": lambda t, k: _ieee(math.exp, lambda x: math.inf),
    "math:floor": lambda t, k: _java_floor(math.floor),
    "math:getExponent": lambda t, k: _get_exponent,
    "math:hex": lambda t, k: (lambda x: f"{x & _MASK[t[0]]:x}") if _MASK[t[0]]
    else (lambda x: java_double_hex(x, t[0] == FLOAT)),
    "math:isInfinite": lambda t, k: math.isinf,
    "math:isNan": lambda t, k: math.isnan,
    "math:ln": lambda t, k: _ln,
    "math:log": lambda t, k: lambda n, b: None if b == 1 else _ln(n) / _ln(b),
    "math:log10": lambda t, k: _log10,
    "math:log2": lambda t, k: lambda x: _ln(x) / math.log(2.0),
    "math:max": lambda t, k: _java_extreme(True),
    "math:min": lambda t, k: _java_extreme(False),
    "math:oct": lambda t, k: lambda x: f"{x & _MASK[t[0]]:o}",
    "math:parseDouble": lambda t, k: parse_double,
    "math:parseFloat": lambda t, k: parse_float,
    "math:parseInt": lambda t, k: parse_integral,
    "math:parseLong": lambda t, k: lambda s: parse_integral(s, LONG),
    "math:power": lambda t, k: _java_pow,
    "math:round": lambda t, k: _java_round(INT if t[0] == FLOAT else LONG),
    "math:signum": lambda t, k: lambda x: 0 if x != x or x == 0 else 1 if x > 0 else -1,
    "math:sin": lambda t, k: _ieee(math.sin, _nan),
    "math:sinh": lambda t, k: _ieee(math.sinh, lambda x: math.copysign(math.inf, x)),
    "math:sqrt": lambda t, k: _ieee(math.sqrt, _nan),
    "math:tan": lambda t, k: _ieee(math.tan, _nan),
    "math:tanh": lambda t, k: math.tanh,
    "math:toDegrees": lambda t, k: math.degrees,
    "math:toRadians": lambda t, k: math.radians,
}
"""Functions that give null when an argument is null; built from argument types and
constants. An exception where Java throws (bad index, regex, number) also gives null."""
