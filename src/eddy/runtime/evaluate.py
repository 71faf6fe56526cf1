"""Siddhi expressions compiled to Python closures for the per-event runtime.

The twin of :mod:`eddy.engine.compile.expressions` (which compiles the same AST to Spark
columns): both implement Siddhi 5's Java semantics, and ``tests/engine/test_expressions.py``
checks that they agree. :func:`compile_python` walks the AST once and returns nested closures; an
event costs only the closure calls, with no AST walking and no exceptions on the normal path.

Semantics (from siddhi-core's executors; README of the conformance cases):

* Arithmetic promotes INT < LONG < FLOAT < DOUBLE and converts both operands first. INT and
  LONG wrap around like Java (32/64-bit two's complement); ``/`` and ``%`` truncate toward
  zero; FLOAT is rounded to single precision after every operation. ``/`` or ``%`` by zero
  gives null, for floating types too. A null operand gives null.
* Comparisons use Java's promotion (``int < float`` compares as float; ``long == float`` as
  double, as Siddhi's executors do) and are false, never null, when an operand is null —
  except ``!=``, which is true then (``NotEqualCompareConditionExpressionExecutor``).
  NaN compares false (``!=`` true), as in Java.
* ``and``/``or`` treat null as false and ``not null`` is true: conditions are never null.
* Every operand of an arithmetic or comparison operator and every argument of a function is
  evaluated before a null decides the result, as Siddhi's executors do; only ``and``,
  ``or`` and ``ifThenElse`` skip an operand. This matters for aggregates inside an
  expression: ``sum(a * b) / sum(b)`` must feed (and expire, and reset) ``sum(b)`` even when
  ``sum(a * b)`` is null.
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
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.functions import REGISTRY
from eddy.lang.typecheck import constant_value, promote
from eddy.runtime.functions import STRICT, fill_template
from eddy.runtime.java import (
    float_mod,
    int_div,
    int_mod,
    int_to_float32,
    java_string,
    parse_double,
    parse_float,
    parse_integral,
    to_float32,
    to_integral,
    wrap_int,
    wrap_long,
)

Getter = Callable[[Any], Any]
TypeOf = Callable[[ast.Expression], AttrType]
Override = Callable[[ast.Expression], Getter | None]

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
_ERRORS = (ArithmeticError, ValueError, IndexError, KeyError, re.error)


class UncompilableExpression(ValueError):
    """An expression the closure compiler cannot handle without help from the caller (an
    aggregate, ``in Table``, a pattern-event reference, a script function): supply it
    through ``override``."""


# ---------------------------------------------------------------------------------------------
# Conversions: convert(), cast(), maximum()/minimum()
# ---------------------------------------------------------------------------------------------

def _is_one(x: Any) -> bool:
    return bool(x == 1)


_CONVERT: dict[tuple[AttrType, AttrType], Callable[[Any], Any]] = {
    (STRING, INT): parse_integral, (STRING, LONG): lambda s: parse_integral(s, LONG),
    (STRING, FLOAT): parse_float, (STRING, DOUBLE): parse_double,
    (STRING, BOOL): lambda s: s.lower() == "true",
    (LONG, INT): wrap_int, (FLOAT, INT): lambda x: to_integral(x, INT),
    (DOUBLE, INT): lambda x: to_integral(x, INT), (FLOAT, LONG): lambda x: to_integral(x, LONG),
    (DOUBLE, LONG): lambda x: to_integral(x, LONG),
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
    and for an OBJECT takes a value of the target type (an Integer as a Long), converts a
    number of another numeric type as Java's primitive cast would, or gives null.

    The reference (``CastFunctionExecutor``) hands an OBJECT's value on as it is under the
    target type — ``cast(o, 'int')`` of the Double 7.0 is 7.0 — which a typed column cannot
    hold; the conversion keeps that value whenever it is one of the target type's."""
    if source == OBJECT:
        return _cast_object(target)
    if source == target or target == STRING or (source.is_numeric and target.is_numeric):
        return _convert(source, target)
    return lambda v: None


def _cast_object(target: AttrType) -> Callable[[Any], Any]:
    accept = {target, INT} if target == LONG else {target}

    def run(value: Any) -> Any:
        kind = runtime_type(value)
        if kind in accept:
            return value
        if kind is not None and kind.is_numeric and target.is_numeric:
            return _convert(kind, target)(value)
        return None
    return run


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
            "/": lambda x, y: None if y == 0 else wrap(int_div(x, y)),
            "%": lambda x, y: None if y == 0 else int_mod(x, y)}


_ARITHMETIC: dict[AttrType, dict[str, Callable[[Any, Any], Any]]] = {
    INT: _int_ops(wrap_int), LONG: _int_ops(wrap_long),
    FLOAT: {"+": lambda x, y: to_float32(x + y), "-": lambda x, y: to_float32(x - y),
            "*": lambda x, y: to_float32(x * y),
            "/": lambda x, y: None if y == 0 else to_float32(x / y),
            "%": lambda x, y: None if y == 0 else to_float32(float_mod(x, y))},
    DOUBLE: {"+": operator.add, "-": operator.sub, "*": operator.mul,
             "/": lambda x, y: None if y == 0 else x / y,
             "%": lambda x, y: None if y == 0 else float_mod(x, y)},
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
            with_null = op == "!="

            def compare(ctx: Any) -> bool:
                x, y = left(ctx), right(ctx)
                if x is None or y is None:
                    return with_null
                return bool(cmp(x, y))
            return compare
        result = self.type_of(expr)
        fn = _ARITHMETIC[result][op]
        left, right = self._numeric(expr.left, result), self._numeric(expr.right, result)

        def arithmetic(ctx: Any) -> Any:
            x, y = left(ctx), right(ctx)
            return None if x is None or y is None else fn(x, y)
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
        if name in STRICT:
            return _strict(STRICT[name](types, consts), args)
        return self._special(name, args, types, consts, result)

    def _special(self, name: str, args: list[Getter], types: list[AttrType],
                 consts: list[object | None], result: AttrType) -> Getter:
        """Functions with their own null handling."""
        first = args[0] if args else (lambda ctx: None)
        if name == "ifThenElse":
            cond, then, other = args
            return lambda ctx: then(ctx) if cond(ctx) else other(ctx)
        if name in ("coalesce", "str:coalesce", "default"):
            return lambda ctx: next((v for v in [g(ctx) for g in args] if v is not None), None)
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
            return lambda ctx: _contains(text(ctx), part(ctx))
        if name == "str:equalsIgnoreCase":
            one, two = args
            return lambda ctx: _equals_ignore_case(one(ctx), two(ctx))
        if name == "str:fillTemplate":
            def fill(ctx: Any) -> str | None:
                values = [g(ctx) for g in args]
                try:
                    return None if values[0] is None else fill_template(values, types)
                except _ERRORS:
                    return None
            return fill
        raise UncompilableExpression(f"function '{name}' has no Python implementation")


def _contains(text: str | None, part: str | None) -> bool | None:
    return False if text is None else None if part is None else part in text


def _equals_ignore_case(one: str | None, two: str | None) -> bool | None:
    return None if one is None else False if two is None else one.lower() == two.lower()


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
