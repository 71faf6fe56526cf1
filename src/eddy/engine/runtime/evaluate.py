"""Siddhi expressions compiled to Python closures for the per-event runtime.

The twin of :mod:`eddy.engine.expressions` (which compiles the same AST to Spark columns):
both implement Siddhi 5's Java semantics, and ``tests/engine/test_expressions.py`` checks
that they agree. :func:`compile_python` walks the AST once and returns nested closures; an
event costs only the closure calls, with no AST walking and no exceptions on the normal path.

Semantics (from siddhi-core's executors; README of the conformance cases):

* Arithmetic promotes INT < LONG < FLOAT < DOUBLE and converts both operands first. INT and
  LONG wrap around like Java (32/64-bit two's complement); ``/`` and ``%`` truncate toward
  zero; FLOAT is rounded to single precision after every operation. ``/`` or ``%`` by zero
  gives null, for floating types too. A null operand gives null.
* Comparisons use Java's promotion (``int < float`` compares as float; ``long == float`` as
  double, as Siddhi's executors do) and are false, never null, when an operand is null.
  NaN compares false (``!=`` true), as in Java.
* ``and``/``or`` treat null as false and ``not null`` is true: conditions are never null.
* Functions follow siddhi-core, siddhi-execution-string and -math. Where those throw at run
  time (a null argument to most ``str:`` functions, an index out of range, an unparsable
  number, an invalid regex or replacement), eddy gives null instead of failing the query.
  Number-to-string conversion reproduces Java's ``Double.toString``/``Float.toString``
  (JDK 8-18 ``FloatingDecimal``, the JVM Spark runs on), e.g. ``1.0E10`` and ``1.0E-4``.
* Strings are sequences of code points (Java counts UTF-16 units: positions differ only
  after characters outside the BMP). Regexes are Java syntax translated to :mod:`re`
  (named groups, ``\\z``, ``\\Q…\\E``, POSIX ``\\p{…}`` classes); exotic Java constructs may
  differ. ``math:`` transcendental functions use the C library and may differ from Java's
  in the last bit; ``math:rand`` and ``UUID()`` are random in both.
* Values are plain Python values: ``int`` for INT/LONG, ``float`` for FLOAT/DOUBLE (FLOAT
  ones already single precision), ``str``, ``bool``, None for null; ``resolve`` must hand
  them in that way. An OBJECT holds any of those (an ``int`` is an Integer when it fits 32
  bits, else a Long; a ``float`` is a Double) or a ``frozenset`` from ``createSet``.
"""

from __future__ import annotations

import math
import operator
import random
import re
import struct
import uuid
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.functions import REGISTRY
from eddy.lang.typecheck import constant_value, promote

Getter = Callable[[Any], Any]
TypeOf = Callable[[ast.Expression], AttrType]
Override = Callable[[ast.Expression], Getter | None]

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
_RANGE = {INT: (-(1 << 31), (1 << 31) - 1), LONG: (-(1 << 63), (1 << 63) - 1)}
_ERRORS = (ArithmeticError, ValueError, IndexError, KeyError, re.error)


class UncompilableExpression(ValueError):
    """An expression the closure compiler cannot handle without help from the caller (an
    aggregate, ``in Table``, a pattern-event reference, a script function): supply it
    through ``override``."""


# ---------------------------------------------------------------------------------------------
# Java numbers
# ---------------------------------------------------------------------------------------------

def wrap_int(v: int) -> int:
    """Java ``int`` overflow: keep the low 32 bits, two's complement."""
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def wrap_long(v: int) -> int:
    """Java ``long`` overflow: keep the low 64 bits, two's complement."""
    return ((v + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000


_F32 = struct.Struct("<f")
_F32_LIMIT = 3.4028235677973366e38  # FLT_MAX + half an ulp: from here on a float is infinite


def to_float32(x: float) -> float:
    """Round a double to the nearest single-precision value (Java's ``(float) d``)."""
    if -_F32_LIMIT < x < _F32_LIMIT:
        return float(_F32.unpack(_F32.pack(x))[0])
    return x if x != x else math.copysign(math.inf, x)


def int_to_float32(n: int) -> float:
    """Java's ``(float) long``: one correct rounding (int -> double -> float may round twice)."""
    a = abs(n)
    if a <= 1 << 24:
        return float(n)
    shift = a.bit_length() - 24
    m, rem = a >> shift, a & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and m & 1):
        m += 1
    return math.copysign(float(m << shift), n)


def _to_integral(x: float, kind: AttrType) -> int:
    """Java's ``(int) d`` / ``(long) d``: truncate, saturate, NaN -> 0."""
    lo, hi = _RANGE[kind]
    if x != x:
        return 0
    return hi if x >= hi else lo if x <= lo else int(x)


def _tdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return -q if (x < 0) != (y < 0) else q


def _tmod(x: int, y: int) -> int:
    r = abs(x) % abs(y)
    return -r if x < 0 else r


def _fmod(x: float, y: float) -> float:
    return math.fmod(x, y) if math.isfinite(x) else math.nan


# ---------------------------------------------------------------------------------------------
# Java's number <-> text (FloatingDecimal of JDK 8-18, parse* of java.lang)
# ---------------------------------------------------------------------------------------------

_N5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49,
            52, 54, 56, 59, 61)  # FloatingDecimal.N_5_BITS: about ceil(log2(5**i))


def _estimate_dec_exp(fract: int, bin_exp: int) -> int:
    d2: float = struct.unpack("<d", struct.pack("<Q", 0x3FF << 52 | fract & (1 << 52) - 1))[0]
    return math.floor((d2 - 1.5) * 0.289529654 + 0.176091259 + bin_exp * 0.301029995663981)


def _dtoa(bin_exp: int, fract: int, nsig: int) -> tuple[str, int]:
    """FloatingDecimal.BinaryToASCIIBuffer.dtoa: the digits and decimal exponent Java prints,
    including its quirks (2.82879384806159008E17, 9.999999999999999E22 for 1e23)."""
    tail = (fract & -fract).bit_length() - 1
    nfract = 53 - tail
    ntiny = max(0, nfract - bin_exp - 1)
    if -21 <= bin_exp <= 62 and ntiny == 0:  # a whole number that fits a long
        p2 = bin_exp - nsig - 1  # insignificantDigitsForPow2: digits of 2**p2, less one
        insig = len(str(1 << p2)) - 1 if bin_exp > nsig and 1 < p2 < 64 else 0
        value = fract << (bin_exp - 52) if bin_exp >= 52 else fract >> (52 - bin_exp)
        dec = 0
        if insig:
            pow10 = 10 ** insig
            value, residue = divmod(value, pow10)
            dec, value = insig, value + (residue >= pow10 >> 1)
        text = str(value)
        return text.rstrip("0"), dec + len(text)
    dec_exp = _estimate_dec_exp(fract, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + ntiny + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + ntiny
    m5, m2 = b5, b2 - nsig
    fract >>= tail
    b2 -= nfract - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if nfract == 1:
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = nfract + b2 + (_N5_BITS[b5] if b5 < len(_N5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N5_BITS[s5 + 1] if s5 + 1 < len(_N5_BITS) else (s5 + 1) * 3)
    b, s, m = (fract * 5 ** b5) << b2, 5 ** s5 << s2, 5 ** m5 << m2
    tens = s * 10
    big = b_bits >= 64 or ten_s_bits >= 64  # FDBigInteger: exact, and '>=' in the high test
    wrap = (lambda v: v) if big else wrap_int if b_bits < 32 and ten_s_bits < 32 else wrap_long
    digits: list[int] = []
    q, b = divmod(b, s)
    b, m = 10 * b, wrap(m * 10)
    low, high = b < m, (b + m >= tens) if big else wrap(b + m) > tens
    if q == 0 and not high:
        dec_exp -= 1
    else:
        digits.append(q)
    if dec_exp < -3 or dec_exp >= 8:
        low = high = False
    while not low and not high:
        q, b = divmod(b, s)
        b, m = 10 * b, wrap(m * 10)
        if big or m > 0:
            low, high = b < m, (b + m >= tens) if big else wrap(b + m) > tens
        else:
            low = high = True
        digits.append(q)
    diff = wrap((b << 1) - tens)
    if high and (not low or diff > 0 or (diff == 0 and digits[-1] & 1)):
        i = len(digits) - 1
        while digits[i] == 9 and i > 0:
            digits[i] = 0
            i -= 1
        if digits[i] == 9:
            digits[0] = 1
            dec_exp += 1
        else:
            digits[i] += 1
    return "".join(map(str, digits)), dec_exp + 1


def java_float_text(x: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (or ``Float.toString`` when ``single``)."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if single:
        bits: int = struct.unpack("<I", _F32.pack(x))[0]
        exp, fract, width = (bits >> 23) & 0xFF, bits & 0x7FFFFF, 23
        bias, hob = 127, 1 << 23
    else:
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        exp, fract, width = (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1), 52
        bias, hob = 1023, 1 << 52
    if exp == 0:
        shift = width + 1 - fract.bit_length()
        fract, exp, nsig = fract << shift, 1 - shift, fract.bit_length()
    else:
        fract, nsig = fract | hob, width + 1
    digits, dec = _dtoa(exp - bias, fract << (52 - width), nsig)
    sign = "-" if x < 0 else ""
    if 0 < dec < 8:
        if len(digits) <= dec:
            return f"{sign}{digits}{'0' * (dec - len(digits))}.0"
        return f"{sign}{digits[:dec]}.{digits[dec:]}"
    if -3 < dec <= 0:
        return f"{sign}0.{'0' * -dec}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{dec - 1}"


def java_string(value: Any, kind: AttrType = OBJECT) -> str:
    """``String.valueOf`` of a Siddhi value of type ``kind`` (OBJECT: by its Python type)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_text(value, kind == FLOAT)
    if isinstance(value, (set, frozenset)):
        return "[" + ", ".join("null" if v is None else java_string(v) for v in value) + "]"
    return str(value)


_JAVA_SPACE = "".join(map(chr, range(33)))  # String.trim() strips every char <= ' '
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity)|([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                      r"(?:[eE][+-]?[0-9]+)?)[fFdD]?")
_HEX_FLOAT = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                        r"[pP][+-]?[0-9]+)[fFdD]?")


def parse_integral(text: str, kind: AttrType = INT) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong``; None where Java throws."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    lo, hi = _RANGE[kind]
    return value if lo <= value <= hi else None


def parse_double(text: str) -> float | None:
    """``Double.parseDouble`` (trims, accepts ``1d``, ``0x1p3``, ``NaN``); None if invalid."""
    text = text.strip(_JAVA_SPACE)
    if decimal := _DECIMAL.fullmatch(text):
        return float(decimal.group(1) or text)
    hexa = _HEX_FLOAT.fullmatch(text)
    return math.copysign(float.fromhex(hexa.group(2)), -1.0 if hexa.group(1) == "-" else 1.0) \
        if hexa else None


def parse_float(text: str) -> float | None:
    """``Float.parseFloat``: rounds the decimal once, straight to single precision."""
    d = parse_double(text)
    if d is None or not math.isfinite(d):
        return None if d is None else to_float32(d)
    up, down = to_float32(math.nextafter(d, math.inf)), to_float32(math.nextafter(d, -math.inf))
    if up == down or not (math.isfinite(up) and math.isfinite(down)):
        return to_float32(d)
    # d is (next to) the midpoint of two floats: decide with the exact decimal value.
    decimal = _DECIMAL.fullmatch(text.strip(_JAVA_SPACE))
    if decimal is None or decimal.group(1) is None:
        return to_float32(d)
    exact, mid = Fraction(decimal.group(1)), (Fraction(up) + Fraction(down)) / 2
    return up if exact > mid else down if exact < mid else to_float32(d)


def java_double_hex(x: float, single: bool = False) -> str:
    """``Double.toHexString`` (``Float.toHexString`` when ``single``)."""
    if not math.isfinite(x):
        return java_float_text(x)
    if single and x != 0 and abs(x) < 2.0 ** -126:
        return java_double_hex(x * 2.0 ** -896).replace("p-1022", "p-126")
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    exp, mant = (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
    sign = "-" if bits >> 63 else ""
    if exp == 0 and mant == 0:
        return f"{sign}0x0.0p0"
    frac = f"{mant:013x}".rstrip("0") or "0"
    return f"{sign}0x{'0' if exp == 0 else '1'}.{frac}p{-1022 if exp == 0 else exp - 1023}"


# ---------------------------------------------------------------------------------------------
# Java regexes on Python's re
# ---------------------------------------------------------------------------------------------

_POSIX = {"Lower": "a-z", "Upper": "A-Z", "Alpha": "a-zA-Z", "Digit": "0-9", "Alnum": "a-zA-Z0-9",
          "XDigit": "0-9a-fA-F", "Space": r" \t\n\x0b\f\r", "Punct": r"!-/:-@\[-`{-~"}
_JAVA_TOKEN = re.compile(r"\\\\|\\Q(.*?)(?:\\E|$)|\\z|\\Z|\\k<(\w+)>|\(\?<(\w+)>|\\([pP])\{(\w+)\}",
                         re.S)


@lru_cache(maxsize=256)
def java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex with :mod:`re`, translating the constructs whose syntax differs."""
    def fix(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return re.escape(m.group(1))
        if m.group(2) or m.group(3):
            return f"(?P={m.group(2)})" if m.group(2) else f"(?P<{m.group(3)}>"
        if m.group(4):
            chars = _POSIX[m.group(5)]  # KeyError for classes re cannot express: null
            return f"[{'^' if m.group(4) == 'P' else ''}{chars}]"
        return {"\\z": r"\Z", "\\Z": r"(?=\n?\Z)"}.get(m.group(0), m.group(0))
    return re.compile(_JAVA_TOKEN.sub(fix, pattern))


_DIGIT = tuple("0123456789")


def parse_replacement(pattern: re.Pattern[str], text: str) -> tuple[list[str | int], str | None]:
    """``Matcher.appendReplacement``'s template (``$1``, ``$12`` while such a group exists,
    ``${name}``, ``\\$``) as literal and group parts, and the error Java would throw."""
    parts: list[str | int] = []
    literal, i = "", 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            literal, i = literal + text[i + 1], i + 2
        elif c == "$" and text[i + 1:i + 2] == "{" and "}" in text[i:]:
            name = text[i + 2:text.index("}", i)]
            if name not in pattern.groupindex:
                return parts, f"no group {name}"
            parts += [literal, pattern.groupindex[name]]
            literal, i = "", text.index("}", i) + 1
        elif c == "$" and text[i + 1:i + 2] in _DIGIT:
            ref, i = int(text[i + 1]), i + 2
            while text[i:i + 1] in _DIGIT and ref * 10 + int(text[i]) <= pattern.groups:
                ref, i = ref * 10 + int(text[i]), i + 1
            if ref > pattern.groups:
                return parts, f"no group {ref}"
            parts += [literal, ref]
            literal = ""
        elif c in "\\$":
            return parts, "illegal group reference or escape"
        else:
            literal, i = literal + c, i + 1
    return parts + [literal], None


@lru_cache(maxsize=256)
def java_replacement(pattern: re.Pattern[str], text: str) -> Callable[[re.Match[str]], str]:
    """The replacement as a function of the match; an invalid template raises only when
    there is a match, as in Java."""
    parts, problem = parse_replacement(pattern, text)

    def expand(m: re.Match[str]) -> str:
        if problem is not None:
            raise ValueError(problem)
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)
    return expand


def java_split(text: str, pattern: re.Pattern[str]) -> list[str]:
    """``String.split(regex)``: no leading empty piece for a zero-width match at 0, trailing
    empty pieces dropped, the whole input when nothing matches."""
    pieces, index = [], 0
    for m in pattern.finditer(text):
        if m.end() == 0:
            continue
        pieces.append(text[index:m.start()])
        index = m.end()
    if not pieces:
        return [text]
    pieces.append(text[index:])
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


# ---------------------------------------------------------------------------------------------
# Functions: value-level twins of eddy.engine.functions_spark
# ---------------------------------------------------------------------------------------------

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
    lo, hi = _RANGE[kind]

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


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _math_conv(text: str, src: int, dst: int) -> str | None:
    """``Integer.toString(Integer.parseInt(text, src), dst)``."""
    if not 2 <= src <= 36 or not re.fullmatch(
            f"[+-]?[{_DIGITS[:src]}{_DIGITS[10:src].upper()}]+", text):
        return None
    value = int(text, src)
    if parse_integral(str(value)) is None:
        return None
    dst = dst if 2 <= dst <= 36 else 10
    n, digits = abs(value), ""
    while True:
        n, d = divmod(n, dst)
        digits = _DIGITS[d] + digits
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


_TEMPLATE = re.compile(r"\{\{|}}")


def _fill_template(values: Sequence[Any], types: Sequence[AttrType]) -> str:
    """``str:fillTemplate``: ``{{n}}`` is argument n (the template is 0), or ``{{key}}`` of a
    map; a null value leaves the key's text."""
    out = []
    for i, piece in enumerate(java_split(values[0], _TEMPLATE)):
        value = piece
        if i % 2:
            key = piece.strip(_JAVA_SPACE)
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

_STRICT: dict[str, StrictFactory] = {
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
    "str:trim": lambda t, k: lambda s: s.strip(_JAVA_SPACE),
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


def _is_one(x: Any) -> bool:
    return bool(x == 1)


_CONVERT: dict[tuple[AttrType, AttrType], Callable[[Any], Any]] = {
    (STRING, INT): parse_integral, (STRING, LONG): lambda s: parse_integral(s, LONG),
    (STRING, FLOAT): parse_float, (STRING, DOUBLE): parse_double,
    (STRING, BOOL): lambda s: s.lower() == "true",
    (LONG, INT): wrap_int, (FLOAT, INT): lambda x: _to_integral(x, INT),
    (DOUBLE, INT): lambda x: _to_integral(x, INT), (FLOAT, LONG): lambda x: _to_integral(x, LONG),
    (DOUBLE, LONG): lambda x: _to_integral(x, LONG),
    (INT, FLOAT): int_to_float32, (LONG, FLOAT): int_to_float32, (DOUBLE, FLOAT): to_float32,
    (INT, DOUBLE): float, (LONG, DOUBLE): float,
    **{(s, BOOL): _is_one for s in (INT, LONG, FLOAT, DOUBLE)},
    (BOOL, INT): int, (BOOL, LONG): int, (BOOL, FLOAT): float, (BOOL, DOUBLE): float,
}
"""``convert()`` between types (Java's casts and parse*); a missing pair is the identity."""


def runtime_type(value: Any) -> AttrType | None:
    """The Siddhi type of an OBJECT's value (an integral is an INT when it fits 32 bits)."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT if parse_integral(str(value)) is not None else LONG
    return {float: DOUBLE, str: STRING}.get(type(value))


def _cast(source: AttrType, target: AttrType) -> Callable[[Any], Any]:
    """``cast()``: Siddhi re-labels the value; eddy converts numbers, stringifies into STRING,
    and for an OBJECT takes a value of the target type (an Integer as a Long) or null."""
    if source == OBJECT:
        accept = {target, INT} if target == LONG else {target}
        return lambda v: v if runtime_type(v) in accept else None
    if source == target or target == STRING or (source.is_numeric and target.is_numeric):
        return _convert(source, target)
    return lambda v: None


def _convert(source: AttrType, target: AttrType) -> Callable[[Any], Any]:
    if target == STRING:
        return lambda v: java_string(v, source)
    return _CONVERT.get((source, target), lambda v: v)


def _extreme(larger: bool, kind: AttrType) -> Callable[..., Any]:
    """Siddhi's ``maximum``/``minimum``: nulls and NaN skipped, compared as doubles starting
    from Double.MIN_VALUE (so maximum(-1, -2) is 0) / Double.MAX_VALUE, cast back to ``kind``."""
    back = {INT: _CONVERT[(DOUBLE, INT)], LONG: _CONVERT[(DOUBLE, LONG)], FLOAT: to_float32,
            DOUBLE: float}[kind]

    def run(*values: Any) -> Any:
        best = 5e-324 if larger else 1.7976931348623157e308
        for v in values:
            if v is not None and ((float(v) > best) if larger else (float(v) < best)):
                best = float(v)
        return back(best)
    return run


# ---------------------------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------------------------

def _strict(fn: Callable[..., Any], getters: Sequence[Getter]) -> Getter:
    """``fn`` over the argument values: null when one is null or where Java would throw."""
    if len(getters) == 1:
        (g,) = getters

        def one(ctx: Any) -> Any:
            v = g(ctx)
            if v is None:
                return None
            try:
                return fn(v)
            except _ERRORS:
                return None
        return one

    def many(ctx: Any) -> Any:
        values = [g(ctx) for g in getters]
        if any(v is None for v in values):
            return None
        try:
            return fn(*values)
        except _ERRORS:
            return None
    return many


def _int_ops(wrap: Callable[[int], int]) -> dict[str, Callable[[Any, Any], Any]]:
    return {"+": lambda x, y: wrap(x + y), "-": lambda x, y: wrap(x - y),
            "*": lambda x, y: wrap(x * y),
            "/": lambda x, y: None if y == 0 else wrap(_tdiv(x, y)),
            "%": lambda x, y: None if y == 0 else _tmod(x, y)}


_ARITHMETIC: dict[AttrType, dict[str, Callable[[Any, Any], Any]]] = {
    INT: _int_ops(wrap_int), LONG: _int_ops(wrap_long),
    FLOAT: {"+": lambda x, y: to_float32(x + y), "-": lambda x, y: to_float32(x - y),
            "*": lambda x, y: to_float32(x * y),
            "/": lambda x, y: None if y == 0 else to_float32(x / y),
            "%": lambda x, y: None if y == 0 else to_float32(_fmod(x, y))},
    DOUBLE: {"+": operator.add, "-": operator.sub, "*": operator.mul,
             "/": lambda x, y: None if y == 0 else x / y,
             "%": lambda x, y: None if y == 0 else _fmod(x, y)},
}
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_NEGATE: dict[AttrType, Callable[[Any], Any]] = {
    INT: lambda v: wrap_int(-v), LONG: lambda v: wrap_long(-v), FLOAT: operator.neg,
    DOUBLE: operator.neg}


def compare_type(op: str, left: AttrType, right: AttrType) -> AttrType:
    """The type Siddhi's compare executors convert both operands to: Java's promotion, except
    that ``long ==/!= float`` compares as double."""
    if left == right or not (left.is_numeric and right.is_numeric):
        return left
    if {left, right} == {LONG, FLOAT} and op in ("==", "!="):
        return DOUBLE
    return promote(left, right)


class _Compiler:
    def __init__(self, type_of: TypeOf, resolve: Callable[[ast.Variable], Getter],
                 event_time: Getter, override: Override | None) -> None:
        self.type_of, self.resolve, self.event_time = type_of, resolve, event_time
        self.override = override

    def __call__(self, expr: ast.Expression) -> Getter:
        if self.override is not None and (given := self.override(expr)) is not None:
            return given
        match expr:
            case ast.Constant() | ast.TimeConstant():
                value = constant_value(expr)
                if self.type_of(expr) == FLOAT and isinstance(value, (int, float)):
                    value = to_float32(float(value))
                return lambda ctx: value
            case ast.Variable():
                return self.resolve(expr)
            case ast.Not():
                inner = self(expr.expression)
                return lambda ctx: not inner(ctx)
            case ast.IsNull():
                inner = self(expr.expression)
                return lambda ctx: inner(ctx) is None
            case ast.Negate():
                return _strict(_NEGATE[self.type_of(expr)], [self(expr.expression)])
            case ast.BinaryOperation():
                return self._binary(expr)
            case ast.FunctionCall():
                return self._call(expr)
        raise UncompilableExpression(f"{type(expr).__name__} needs the caller's context "
                                     "(pass it through 'override')")

    def _numeric(self, expr: ast.Expression, target: AttrType) -> Getter:
        """``expr`` converted to ``target`` (both numeric), as Java widens operands."""
        getter, source = self(expr), self.type_of(expr)
        convert = None if source == target or target == LONG else _CONVERT.get((source, target))
        if convert is None:
            return getter
        return lambda ctx: None if (v := getter(ctx)) is None else convert(v)

    def _binary(self, expr: ast.BinaryOperation) -> Getter:
        op = expr.op
        if op in ("and", "or"):
            left, right = self(expr.left), self(expr.right)
            if op == "and":
                return lambda ctx: bool(left(ctx)) and bool(right(ctx))
            return lambda ctx: bool(left(ctx)) or bool(right(ctx))
        lt, rt = self.type_of(expr.left), self.type_of(expr.right)
        if op in _COMPARE:
            ct = compare_type(op, lt, rt)
            numeric = ct.is_numeric and lt.is_numeric and rt.is_numeric
            left = self._numeric(expr.left, ct) if numeric else self(expr.left)
            right = self._numeric(expr.right, ct) if numeric else self(expr.right)
            cmp = _COMPARE[op]

            def compare(ctx: Any) -> bool:
                x = left(ctx)
                if x is None:
                    return False
                y = right(ctx)
                return False if y is None else bool(cmp(x, y))
            return compare
        result = self.type_of(expr)
        fn = _ARITHMETIC[result][op]
        left, right = self._numeric(expr.left, result), self._numeric(expr.right, result)

        def arithmetic(ctx: Any) -> Any:
            x = left(ctx)
            if x is None:
                return None
            y = right(ctx)
            return None if y is None else fn(x, y)
        return arithmetic

    def _call(self, call: ast.FunctionCall) -> Getter:
        spec = REGISTRY.lookup("scalar", call.namespace, call.name)
        if spec is None:
            raise UncompilableExpression(f"'{call.qualified_name}' is an aggregate or a script "
                                         "function; its value must come from 'override'")
        name, result = spec.qualified_name, self.type_of(call)
        if name in ("eventTimestamp", "currentTimeMillis"):
            if call.args:
                raise UncompilableExpression("eventTimestamp(event) needs 'override'")
            return self.event_time
        if name == "UUID":
            return lambda ctx: str(uuid.uuid4())
        if name == "math:rand":
            seed = constant_value(call.args[0]) if call.args else None
            rng = random.Random(seed if isinstance(seed, int) else None)
            return lambda ctx: rng.random()
        if name in ("math:e", "math:pi"):
            return lambda ctx: math.e if name == "math:e" else math.pi
        args = [self(a) for a in call.args]
        types = [self.type_of(a) for a in call.args]
        consts = [constant_value(a) for a in call.args]
        if name in _STRICT:
            return _strict(_STRICT[name](types, consts), args)
        return self._special(name, args, types, consts, result)

    def _special(self, name: str, args: list[Getter], types: list[AttrType],
                 consts: list[object | None], result: AttrType) -> Getter:
        """Functions with their own null handling."""
        first = args[0] if args else (lambda ctx: None)
        if name == "ifThenElse":
            cond, then, other = args
            return lambda ctx: then(ctx) if cond(ctx) else other(ctx)
        if name in ("coalesce", "str:coalesce", "default"):
            return lambda ctx: next((v for g in args if (v := g(ctx)) is not None), None)
        if name in ("convert", "cast"):
            target = result
            fn = _convert(types[0], target) if name == "convert" else _cast(types[0], target)
            return _strict(fn, [first])
        if name.startswith("instanceOf"):
            wanted = {"Boolean": BOOL, "Double": DOUBLE, "Float": FLOAT, "Integer": INT,
                      "Long": LONG, "String": STRING}[name[len("instanceOf"):]]
            if types[0] == OBJECT:
                return lambda ctx: runtime_type(first(ctx)) == wanted
            return (lambda ctx: first(ctx) is not None) if types[0] == wanted \
                else (lambda ctx: False)
        if name in ("maximum", "minimum"):
            if len(args) == 1:
                return first
            fn = _extreme(name == "maximum", result)
            return lambda ctx: fn(*(g(ctx) for g in args))
        if name == "createSet":
            return lambda ctx: frozenset((first(ctx),))
        if name == "sizeOfSet":
            return lambda ctx: 0 if (v := first(ctx)) is None else \
                len(v) if isinstance(v, (set, frozenset)) else None
        if name == "str:concat":
            pairs = list(zip(args, types))
            return lambda ctx: "".join(java_string(v, t) for g, t in pairs
                                       if (v := g(ctx)) is not None)
        if name == "str:contains":
            text, part = args
            return lambda ctx: False if (s := text(ctx)) is None else \
                None if (p := part(ctx)) is None else p in s
        if name == "str:equalsIgnoreCase":
            one, two = args
            return lambda ctx: None if (a := one(ctx)) is None else \
                False if (b := two(ctx)) is None else a.lower() == b.lower()
        if name == "str:fillTemplate":
            def fill(ctx: Any) -> str | None:
                values = [g(ctx) for g in args]
                try:
                    return None if values[0] is None else _fill_template(values, types)
                except _ERRORS:
                    return None
            return fill
        raise UncompilableExpression(f"function '{name}' has no Python implementation")


def compile_python(expr: ast.Expression, type_of: TypeOf,
                   resolve: Callable[[ast.Variable], Getter], event_time: Getter, *,
                   override: Override | None = None, condition: bool = False) -> Getter:
    """Compile ``expr`` to a closure over an opaque context (an event, a join pair, a pattern
    match: ``resolve`` and ``event_time`` know how to read it) returning the value, None for
    null.

    ``override`` is asked first for every node and may return a getter for it: aggregates,
    ``in Table``, pattern-event references (``e1 is null``, ``eventTimestamp(e1)``) and
    script functions need the caller's state. ``condition=True`` makes the result strictly
    True/False (null is false), as a filter wants.
    """
    getter = _Compiler(type_of, resolve, event_time, override)(expr)
    if condition:
        inner = getter
        return lambda ctx: bool(inner(ctx))
    return getter
