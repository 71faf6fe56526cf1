"""Siddhi's core scalar functions (``io.siddhi.core.executor.function``) and its two core
stream functions, ``#log`` and ``#pol2Cart``.

Beyond the ``@Extension`` overloads, several functions check their arguments in ``init``;
those checks are the ``validate`` hooks here: ``coalesce``, ``maximum`` and ``minimum`` want
one type throughout, ``ifThenElse`` the same type in both branches, ``default`` a constant of
the attribute's type, and ``convert`` turns an OBJECT into nothing but a string.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.ast import AttrType
from eddy.lang.functions import (
    ANY,
    NUMERIC,
    PRIMITIVE,
    FunctionSpec,
    Param,
    TypeMismatch,
    all_same_type,
    fixed,
    same_as,
    sig,
    typeset,
)

_STRING = typeset(AttrType.STRING)
_BOOL = typeset(AttrType.BOOL)
_DOUBLE = typeset(AttrType.DOUBLE)
_OBJECT = typeset(AttrType.OBJECT)

# The type names convert() and cast() accept (Siddhi compares them ignoring case).
TARGET_TYPES: dict[str, AttrType] = {
    "int": AttrType.INT, "long": AttrType.LONG, "float": AttrType.FLOAT,
    "double": AttrType.DOUBLE, "string": AttrType.STRING, "bool": AttrType.BOOL,
}

LOG_PRIORITIES: tuple[str, ...] = ("INFO", "DEBUG", "WARN", "ERROR", "FATAL", "TRACE", "OFF")


def _target(types: Sequence[AttrType], constants: Sequence[object | None]) -> AttrType:
    """The type named by the constant second argument of convert()/cast()."""
    name = constants[1] if len(constants) > 1 else None
    return TARGET_TYPES.get(name.lower(), AttrType.OBJECT) if isinstance(name, str) \
        else AttrType.OBJECT


def _check_convert(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    if types[0] == AttrType.OBJECT and _target(types, constants) != AttrType.STRING:
        raise TypeMismatch(f"convert() can turn an OBJECT only into 'string', not "
                           f"{constants[1]!r}; use cast() to treat an OBJECT as another type",
                           arg_index=1)


def _check_if_then_else(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    if types[1] != types[2]:
        raise TypeMismatch(f"ifThenElse() needs its then and else values to have one type, but "
                           f"got {types[1].value} and {types[2].value}", arg_index=2)


def _check_default(types: Sequence[AttrType], constants: Sequence[object | None]) -> None:
    if types[0] != types[1]:
        raise TypeMismatch(f"default() needs a default value of the attribute's type "
                           f"{types[0].value}, not {types[1].value}", arg_index=1)


def _pol2cart_attributes(types: Sequence[AttrType], constants: Sequence[object | None]
                         ) -> tuple[tuple[str, AttrType], ...]:
    names = ("x", "y", "z") if len(types) == 3 else ("x", "y")
    return tuple((n, AttrType.DOUBLE) for n in names)


def _instance_of(suffix: str, what: str) -> FunctionSpec:
    return FunctionSpec(None, f"instanceOf{suffix}", "scalar", (sig(Param("arg", ANY)),),
                        fixed(AttrType.BOOL), f"True when the value is {what}.")


SCALARS: tuple[FunctionSpec, ...] = (
    FunctionSpec(None, "cast", "scalar",
                 (sig(Param("to.be.caster", ANY), Param("cast.to", _STRING, constant=True,
                                                        choices=tuple(TARGET_TYPES))),),
                 _target, "Treats a value (typically an OBJECT) as the named type, e.g. "
                 "cast(x, 'double'); the value itself is not converted."),
    FunctionSpec(None, "convert", "scalar",
                 (sig(Param("to.be.converted", ANY), Param("converted.to", _STRING,
                                                           constant=True,
                                                           choices=tuple(TARGET_TYPES))),),
                 _target, "Converts a value to the named type, e.g. convert(s, 'double').",
                 validate=_check_convert),
    FunctionSpec(None, "coalesce", "scalar", (sig(Param("arg", ANY, variadic=True)),),
                 same_as(0), "The first argument that is not null; all must have one type.",
                 validate=all_same_type("coalesce()")),
    FunctionSpec(None, "default", "scalar",
                 (sig(Param("attribute", ANY), Param("default", ANY, constant=True)),),
                 same_as(0), "The attribute, or the constant default when it is null.",
                 validate=_check_default),
    FunctionSpec(None, "ifThenElse", "scalar",
                 (sig(Param("condition", _BOOL), Param("if.expression", ANY),
                      Param("else.expression", ANY)),),
                 same_as(1), "The second argument when the condition is true, else the third.",
                 validate=_check_if_then_else),
    _instance_of("Boolean", "a BOOL"),
    _instance_of("Double", "a DOUBLE"),
    _instance_of("Float", "a FLOAT"),
    _instance_of("Integer", "an INT"),
    _instance_of("Long", "a LONG"),
    _instance_of("String", "a STRING"),
    FunctionSpec(None, "maximum", "scalar", (sig(Param("arg", NUMERIC, variadic=True)),),
                 same_as(0), "Largest of the arguments, which must all have one numeric type.",
                 validate=all_same_type("maximum()")),
    FunctionSpec(None, "minimum", "scalar", (sig(Param("arg", NUMERIC, variadic=True)),),
                 same_as(0), "Smallest of the arguments, which must all have one numeric type.",
                 validate=all_same_type("minimum()")),
    FunctionSpec(None, "UUID", "scalar", (sig(),), fixed(AttrType.STRING),
                 "A new random UUID string."),
    FunctionSpec(None, "currentTimeMillis", "scalar", (sig(),), fixed(AttrType.LONG),
                 "The engine's current time in epoch milliseconds (event time in playback)."),
    FunctionSpec(None, "eventTimestamp", "scalar", (sig(), sig(Param("event", _OBJECT))),
                 fixed(AttrType.LONG),
                 "Timestamp of the current event, or of the given pattern event (e.g. e1)."),
    FunctionSpec(None, "createSet", "scalar", (sig(Param("input", PRIMITIVE)),),
                 fixed(AttrType.OBJECT), "A set holding the value, for unionSet()."),
    FunctionSpec(None, "sizeOfSet", "scalar", (sig(Param("set", _OBJECT)),),
                 fixed(AttrType.INT), "Number of elements in a set (0 for null)."),
)

_PRIORITY = Param("priority", _STRING, constant=True, choices=LOG_PRIORITIES)
_MESSAGE = Param("log.message", _STRING)
_LOGGED = Param("is.event.logged", _BOOL, constant=True)
_THETA, _RHO, _Z = (Param(n, _DOUBLE) for n in ("theta", "rho", "z"))

STREAM_FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec(None, "log", "stream",
                 (sig(), sig(_MESSAGE), sig(_LOGGED), sig(_MESSAGE, _LOGGED),
                  sig(_PRIORITY, _MESSAGE), sig(_PRIORITY, _MESSAGE, _LOGGED)),
                 None, "Logs each event passing through (priority, message, whether to "
                 "include the event), and passes it on unchanged."),
    FunctionSpec(None, "pol2Cart", "stream", (sig(_THETA, _RHO), sig(_THETA, _RHO, _Z)), None,
                 "Adds Cartesian coordinates x, y (and z) computed from polar theta (degrees) "
                 "and rho.", extra_attributes=_pol2cart_attributes),
)


SPECS: tuple[FunctionSpec, ...] = SCALARS + STREAM_FUNCTIONS
"""Every spec of this module, in registration order."""
