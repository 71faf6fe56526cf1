"""Values written the way Java's ``toString`` writes them, for output that matches Siddhi's.

Siddhi's log sink prints ``Arrays.toString(data)``, and its text mapper writes values with
``String.valueOf``: doubles as ``25.0`` or ``1.0E7``, floats with the fewest digits that
identify the 32-bit value (``0.1``, not ``0.10000000149011612``), booleans as ``true``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np

from eddy.lang.ast import AttrType


def java_string(value: object, kind: AttrType | None = None) -> str:
    """``String.valueOf(value)`` for a value of a Siddhi attribute of type ``kind``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float(value) if kind is AttrType.FLOAT else java_double(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def java_array(values: Sequence[object], kinds: Sequence[AttrType] | None = None) -> str:
    """``Arrays.toString(values)``: ``[a, 1, 2.5, null]``."""
    if kinds is None:
        return "[" + ", ".join(java_string(v) for v in values) + "]"
    return "[" + ", ".join(java_string(v, k) for v, k in zip(values, kinds)) + "]"


def java_double(value: float) -> str:
    """``Double.toString``: shortest digits; plain between 10^-3 and 10^7, else ``d.dddE±n``."""
    special = _special(value)
    if special is not None:
        return special
    digits, exponent = _shortest(repr(value))
    return _layout(value < 0, digits, exponent)


def java_float(value: float) -> str:
    """``Float.toString`` of ``value`` rounded to 32 bits."""
    special = _special(value)
    if special is not None:
        return special
    text = np.format_float_scientific(np.float32(value), unique=True, trim="-")
    digits, exponent = _shortest(text)
    return _layout(value < 0, digits, exponent)


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _shortest(text: str) -> tuple[str, int]:
    """The significant digits of a number's text and the power of ten of the first digit."""
    mantissa, _, exp = text.lower().lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len((whole + fraction).lstrip("0"))
    exponent = int(exp or 0) + len(whole) - 1 - leading_zeros
    return digits.rstrip("0") or "0", exponent


def _layout(negative: bool, digits: str, exponent: int) -> str:
    sign = "-" if negative else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[:exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1:] or "0"
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"
