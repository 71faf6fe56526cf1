"""The ``str:`` namespace (siddhi-execution-string): string functions, the ``str:groupConcat``
aggregator and the ``#str:tokenize`` stream function.

Types follow each extension's ``@Extension`` overloads and ``init`` checks, e.g.
``str:concat`` takes two or more values of any type but OBJECT, ``str:length``,
``str:strcmp`` and ``str:locate`` give INT and ``str:charFrequency`` LONG.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang.ast import AttrType
from eddy.lang.functions import (
    ANY,
    PRIMITIVE,
    FunctionSpec,
    Param,
    Signature,
    all_same_type,
    fixed,
    overloads,
    same_as,
    sig,
    typeset,
)

_STRING = typeset(AttrType.STRING)
_INT = typeset(AttrType.INT)
_BOOL = typeset(AttrType.BOOL)
_OBJECT = typeset(AttrType.OBJECT)

_INPUT = Param("input.string", _STRING)


def _str(name: str, signatures: Sequence[Signature], result: AttrType, description: str
         ) -> FunctionSpec:
    return FunctionSpec("str", name, "scalar", tuple(signatures), fixed(result), description)


def _unary(name: str, description: str) -> FunctionSpec:
    return _str(name, [sig(_INPUT)], AttrType.STRING, description)


def _token_attribute(types: Sequence[AttrType], constants: Sequence[object | None]
                     ) -> tuple[tuple[str, AttrType], ...]:
    return (("token", AttrType.STRING),)


_TWO_STRINGS = [sig(Param("arg1", _STRING), Param("arg2", _STRING))]
_REPLACE = [sig(_INPUT, Param("regex", _STRING), Param("replacement.string", _STRING))]

SCALARS: tuple[FunctionSpec, ...] = (
    _str("charAt", [sig(Param("input.value", _STRING), Param("index", _INT))], AttrType.STRING,
         "The character at a 0-based index, as a STRING."),
    _str("charFrequency", [sig(Param("input.string", _STRING), Param("char", _STRING))],
         AttrType.LONG, "How often a character occurs in the input string."),
    FunctionSpec("str", "coalesce", "scalar", (sig(Param("arg", ANY, variadic=True)),),
                 same_as(0), "The first argument that is not null; all must have one type.",
                 validate=all_same_type("str:coalesce()")),
    _str("concat", [sig(Param("arg", PRIMITIVE), Param("arg", PRIMITIVE, variadic=True))],
         AttrType.STRING, "Joins two or more values into one string."),
    _str("contains", [sig(_INPUT, Param("search.string", _STRING))], AttrType.BOOL,
         "True when the input contains the search string."),
    _str("equalsIgnoreCase", _TWO_STRINGS, AttrType.BOOL,
         "True when the two strings are equal ignoring case."),
    _str("fillTemplate",
         [sig(Param("template", _STRING), Param("replacement", PRIMITIVE, variadic=True)),
          sig(Param("template", _STRING), Param("map", _OBJECT))],
         AttrType.STRING, "Fills {{1}}, {{2}}… (or {{key}} from a map) in a template."),
    _unary("hex", "The hexadecimal codes of the string's characters."),
    _str("length", [sig(_INPUT)], AttrType.INT, "Number of characters in the string."),
    _str("locate",
         [sig(Param("string.to.search.for", _STRING), Param("string.to.search.in", _STRING),
              Param("searching.start.position", _INT, optional=True))],
         AttrType.INT, "0-based position of the first occurrence of a string, or -1."),
    _unary("lower", "The string in lower case."),
    _str("regexp", [sig(_INPUT, Param("regex", _STRING))], AttrType.BOOL,
         "True when the whole string matches the regular expression."),
    _str("repeat", [sig(_INPUT, Param("times", _INT))], AttrType.STRING,
         "The string repeated the given number of times."),
    _str("replaceAll", _REPLACE, AttrType.STRING,
         "Replaces every match of a regular expression."),
    _str("replaceFirst", _REPLACE, AttrType.STRING,
         "Replaces the first match of a regular expression."),
    _unary("reverse", "The string reversed."),
    _str("split", [sig(_INPUT, Param("split.string", _STRING), Param("group.number", _INT))],
         AttrType.STRING, "The n-th (0-based) piece of the string split by a regex."),
    _str("strcmp", _TWO_STRINGS, AttrType.INT,
         "Compares two strings lexicographically: negative, 0 or positive."),
    _str("substr",
         [sig(_INPUT, Param("begin.index", _INT)),
          sig(_INPUT, Param("begin.index", _INT), Param("length", _INT)),
          sig(_INPUT, Param("regex", _STRING)),
          sig(_INPUT, Param("regex", _STRING), Param("group.number", _INT))],
         AttrType.STRING, "Part of a string, by start index and length, or by regex "
         "(and group)."),
    _unary("trim", "The string without leading and trailing white space."),
    _unary("unhex", "The string the hexadecimal character codes spell (inverse of str:hex)."),
    _unary("upper", "The string in upper case."),
)

AGGREGATORS: tuple[FunctionSpec, ...] = (
    FunctionSpec("str", "groupConcat", "aggregate",
                 overloads([Param("key", _STRING)],
                           Param("separator", _STRING),
                           Param("distinct", _BOOL, constant=True),
                           Param("order", _STRING, constant=True, choices=("ASC", "DESC"))),
                 fixed(AttrType.STRING),
                 "Joins the values of the group with a separator (default ','), optionally "
                 "distinct and sorted."),
)

STREAM_FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec("str", "tokenize", "stream",
                 overloads([_INPUT, Param("regex", _STRING, constant=True)],
                           Param("distinct", _BOOL, constant=True)),
                 None, "Emits one event per token of the string split by a regex, adding "
                 "attribute 'token'.", extra_attributes=_token_attribute),
)


SPECS: tuple[FunctionSpec, ...] = SCALARS + AGGREGATORS + STREAM_FUNCTIONS
"""Every spec of this module, in registration order."""
