"""The ``math:`` namespace (siddhi-execution-math) and its ``math:percentile`` aggregator.

Types follow the extensions' ``@Extension`` overloads and ``init`` checks. Most functions give
a DOUBLE whatever the input — including ``math:abs``, ``math:floor``, ``math:ceil``,
``math:max`` and ``math:min``. The exceptions: ``math:round`` gives INT for a FLOAT and LONG
for a DOUBLE (it takes nothing else), ``math:signum`` and ``math:getExponent`` give INT, the
``parse*`` functions their named type, ``bin``/``oct``/``hex``/``conv`` a STRING and
``isNan``/``isInfinite`` a BOOL. ``math:ceil``, ``math:acos`` and ``math:asin`` take only
FLOAT or DOUBLE.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.ast import AttrType
from eddy.lang.functions import (
    NUMERIC,
    FunctionSpec,
    Param,
    Signature,
    TypeMismatch,
    fixed,
    sig,
    typeset,
)

_FLOATING = typeset(AttrType.FLOAT, AttrType.DOUBLE)
_INTEGRAL = typeset(AttrType.INT, AttrType.LONG)
_STRING = typeset(AttrType.STRING)
_INT = typeset(AttrType.INT)
_DOUBLE = typeset(AttrType.DOUBLE)

_P1 = Param("p1", NUMERIC)


def _math(name: str, signatures: Sequence[Signature], result: AttrType, description: str
          ) -> FunctionSpec:
    return FunctionSpec("math", name, "scalar", tuple(signatures), fixed(result), description)


def _double(name: str, description: str, accepts: frozenset[AttrType] = NUMERIC) -> FunctionSpec:
    return _math(name, [sig(Param("p1", accepts))], AttrType.DOUBLE, description)


def _round_result(types: Sequence[AttrType], constants: Sequence[object | None]) -> AttrType:
    return AttrType.INT if types[0] == AttrType.FLOAT else AttrType.LONG


def _check_percentile(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    p = constants[1]
    if isinstance(p, float) and not 0 < p <= 100:
        raise TypeMismatch(f"math:percentile() needs a percentile p with 0 < p <= 100, not {p!r}",
                           arg_index=1)


_TWO = [sig(Param("p1", NUMERIC), Param("p2", NUMERIC))]

SCALARS: tuple[FunctionSpec, ...] = (
    _double("abs", "Absolute value, as a DOUBLE."),
    _double("acos", "Arc cosine in radians.", _FLOATING),
    _double("asin", "Arc sine in radians.", _FLOATING),
    _math("atan", [sig(_P1), sig(_P1, Param("p2", NUMERIC))], AttrType.DOUBLE,
          "Arc tangent in radians; with two arguments, atan2(p1, p2)."),
    _math("bin", [sig(Param("p1", _INTEGRAL))], AttrType.STRING,
          "Binary representation of an integer."),
    _double("cbrt", "Cube root."),
    _double("ceil", "Smallest whole number not below the value, as a DOUBLE.", _FLOATING),
    _math("conv", [sig(Param("a", _STRING), Param("from.base", _INT), Param("to.base", _INT))],
          AttrType.STRING, "Converts a number written in one base into another base."),
    _math("copySign", [sig(Param("magnitude", NUMERIC), Param("sign", NUMERIC))],
          AttrType.DOUBLE, "The magnitude with the sign of the second argument."),
    _double("cos", "Cosine of an angle in radians."),
    _double("cosh", "Hyperbolic cosine."),
    _math("e", [sig()], AttrType.DOUBLE, "Euler's number e."),
    _double("exp", "e raised to the value."),
    _double("floor", "Largest whole number not above the value, as a DOUBLE."),
    _math("getExponent", [sig(_P1)], AttrType.INT,
          "Unbiased exponent of the value's floating-point representation."),
    _math("hex", [sig(_P1)], AttrType.STRING, "Hexadecimal representation of a number."),
    _math("isInfinite", [sig(Param("p1", _FLOATING))], AttrType.BOOL,
          "True when the value is infinite."),
    _math("isNan", [sig(Param("p1", _FLOATING))], AttrType.BOOL,
          "True when the value is not a number."),
    _double("ln", "Natural logarithm."),
    _math("log", [sig(Param("number", NUMERIC), Param("base", NUMERIC))], AttrType.DOUBLE,
          "Logarithm of a number to a base."),
    _double("log10", "Base-10 logarithm."),
    _double("log2", "Base-2 logarithm."),
    _math("max", _TWO, AttrType.DOUBLE, "The larger of two numbers, as a DOUBLE."),
    _math("min", _TWO, AttrType.DOUBLE, "The smaller of two numbers, as a DOUBLE."),
    _math("oct", [sig(Param("p1", _INTEGRAL))], AttrType.STRING,
          "Octal representation of an integer."),
    _math("parseDouble", [sig(Param("p1", _STRING))], AttrType.DOUBLE, "Parses a DOUBLE."),
    _math("parseFloat", [sig(Param("p1", _STRING))], AttrType.FLOAT, "Parses a FLOAT."),
    _math("parseInt", [sig(Param("p1", _STRING))], AttrType.INT, "Parses an INT."),
    _math("parseLong", [sig(Param("p1", _STRING))], AttrType.LONG, "Parses a LONG."),
    _math("pi", [sig()], AttrType.DOUBLE, "The number pi."),
    _math("power", [sig(Param("value", NUMERIC), Param("to.power", NUMERIC))], AttrType.DOUBLE,
          "The value raised to a power."),
    _math("rand", [sig(), sig(Param("seed", _INTEGRAL, constant=True))], AttrType.DOUBLE,
          "A random DOUBLE in [0, 1), from an optional constant seed."),
    FunctionSpec("math", "round", "scalar", (sig(Param("p1", _FLOATING)),), _round_result,
                 "Nearest whole number: INT for a FLOAT, LONG for a DOUBLE."),
    _math("signum", [sig(_P1)], AttrType.INT, "Sign of the value: -1, 0 or 1."),
    _double("sin", "Sine of an angle in radians."),
    _double("sinh", "Hyperbolic sine."),
    _double("sqrt", "Square root."),
    _double("tan", "Tangent of an angle in radians."),
    _double("tanh", "Hyperbolic tangent."),
    _double("toDegrees", "Converts radians to degrees."),
    _double("toRadians", "Converts degrees to radians."),
)

AGGREGATORS: tuple[FunctionSpec, ...] = (
    FunctionSpec("math", "percentile", "aggregate",
                 (sig(Param("arg", NUMERIC), Param("p", _DOUBLE, constant=True)),),
                 fixed(AttrType.DOUBLE),
                 "The p-th percentile (0 < p <= 100, a DOUBLE constant) of the values.",
                 validate=_check_percentile),
)


SPECS: tuple[FunctionSpec, ...] = SCALARS + AGGREGATORS
"""Every spec of this module, in registration order."""
