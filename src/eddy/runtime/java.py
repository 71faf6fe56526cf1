"""Java's number and string semantics in Python, as Siddhi's executors get them from the JVM.

Two's-complement wrap-around and float32 rounding (:func:`wrap_int`, :func:`to_float32`),
``Double.toString``/``Float.toString`` (a port of JDK 8-18 ``FloatingDecimal``), the
``parse*`` methods of ``java.lang``, ``Double.toHexString``, and Java regexes, replacement
templates and ``String.split`` on top of :mod:`re`. Shared by the closure compiler
(:mod:`.evaluate`), the Python function twins (:mod:`.functions`) and the Spark columns
(:mod:`eddy.engine.compile.scalar_functions`).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

from eddy.lang.ast import AttrType

INT, LONG, FLOAT, OBJECT = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.OBJECT
INTEGRAL_RANGE = {INT: (-(1 << 31), (1 << 31) - 1), LONG: (-(1 << 63), (1 << 63) - 1)}
"""The (min, max) of Java's ``int`` and ``long``."""
RADIX_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
"""``Character.forDigit``'s digits for radices 2 to 36."""


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


def to_integral(x: float, kind: AttrType) -> int:
    """Java's ``(int) d`` / ``(long) d``: truncate, saturate, NaN -> 0."""
    lo, hi = INTEGRAL_RANGE[kind]
    if x != x:
        return 0
    return hi if x >= hi else lo if x <= lo else int(x)


def int_div(x: int, y: int) -> int:
    """Java's integral ``/``: truncates toward zero (``y`` is not 0)."""
    q = abs(x) // abs(y)
    return -q if (x < 0) != (y < 0) else q


def int_mod(x: int, y: int) -> int:
    """Java's integral ``%``: the sign of the dividend (``y`` is not 0)."""
    r = abs(x) % abs(y)
    return -r if x < 0 else r


def float_mod(x: float, y: float) -> float:
    """Java's floating ``%``: ``fmod``, NaN for an infinite dividend (``y`` is not 0)."""
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


JAVA_SPACE = "".join(map(chr, range(33)))  # String.trim() strips every char <= ' '
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
    lo, hi = INTEGRAL_RANGE[kind]
    return value if lo <= value <= hi else None


def parse_double(text: str) -> float | None:
    """``Double.parseDouble`` (trims, accepts ``1d``, ``0x1p3``, ``NaN``); None if invalid."""
    text = text.strip(JAVA_SPACE)
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
    decimal = _DECIMAL.fullmatch(text.strip(JAVA_SPACE))
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
