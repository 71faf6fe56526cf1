"""How events look inside the runtime, and the Java arithmetic the reference engine uses.

An event flowing through a query is a plain tuple ``(kind, ts, data)``: the kind (current,
expired, timer or reset, as Siddhi's ``ComplexEvent.Type``), the timestamp and the attribute
values. Tuples pickle as plain data, cost one allocation, and are immutable, so a window can
keep the very tuple it emitted; where Siddhi mutates an event (an expired copy gets the
clock as its timestamp) the runtime builds a new tuple instead.

After the selector an event is ``(kind, ts, data, group_key)``: the key is what Siddhi's
``GroupedComplexEvent`` carries, and the per-group rate limiters need it.

A *chunk* is a list of events: what Siddhi's ``ComplexEventChunk`` holds between processors.
"""

from __future__ import annotations

import math
import struct
from typing import Any, TypeAlias

CURRENT = 0
EXPIRED = 1
TIMER = 2
RESET = 3

KIND_NAMES = ("CURRENT", "EXPIRED", "TIMER", "RESET")

Event: TypeAlias = tuple[int, int, Any]
"""``(kind, ts, data)``; ``data`` is a tuple of attribute values (None for a timer)."""


class DroppedEventError(ValueError):
    """An error an event meets on its way through the app that the reference logs, dropping
    that event where a stream hands it on, while the app keeps running (every
    ``StreamJunction.Publisher.send`` catches it and calls ``handleError``, whose default
    is ``LOG``): a bad ``aggregate by`` timestamp, a ``within``/``per`` an aggregation
    cannot answer."""

OutEvent: TypeAlias = tuple[int, int, Any, Any]
"""``(kind, ts, output_data, group_key)``: an event after the selector."""

Chunk: TypeAlias = list[Any]

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1
_LONG_MOD = 1 << 64

_F32 = struct.Struct("f")


def wrap_long(value: int) -> int:
    """A Python int as Java's ``long`` arithmetic would have left it (two's complement)."""
    if LONG_MIN <= value <= LONG_MAX:
        return value
    return (value - LONG_MIN) % _LONG_MOD + LONG_MIN


def double_to_long(value: float) -> int:
    """Java's ``(long) d``: truncation toward zero, NaN to 0, saturating at the bounds."""
    if value != value:
        return 0
    if value >= 9.223372036854775807e18:
        return LONG_MAX
    if value <= -9.223372036854775808e18:
        return LONG_MIN
    return int(value)


def java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` on integers: the remainder takes the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def to_float32(value: float) -> float:
    """A double rounded to single precision, as a Java ``float`` holds it."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def java_double_compare(a: float, b: float) -> int:
    """``Double.compare``: -0.0 sorts before 0.0 and NaN after everything."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = a != a, b != b
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    if a == 0.0 and b == 0.0:
        sa, sb = math.copysign(1.0, a), math.copysign(1.0, b)
        return (sa > sb) - (sa < sb)
    return 0


def java_compare(a: Any, b: Any) -> int:
    """``Comparable.compareTo`` for two non-null values of one Siddhi type."""
    if isinstance(a, float) or isinstance(b, float):
        return java_double_compare(float(a), float(b))
    return int((a > b) - (a < b))


def java_equals(a: Any, b: Any) -> bool:
    """``Object.equals`` for attribute values: NaN equals NaN, like ``Double.equals``."""
    if a == b:
        return True
    return isinstance(a, float) and isinstance(b, float) and a != a and b != b


def float_key(value: Any) -> Any:
    """A dictionary key that groups doubles the way ``Double.equals``/``hashCode`` do.

    Python's ``0.0 == -0.0`` and ``nan != nan`` would merge or split groups that the
    reference keeps apart or together.
    """
    if isinstance(value, float):
        if value != value:
            return "\0NaN"
        if value == 0.0 and math.copysign(1.0, value) < 0:
            return "\0-0.0"
    return value
