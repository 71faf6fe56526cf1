"""Whether an expression compiles to Spark SQL, decided without Spark.

The physical planner (:mod:`eddy.plan.physical`) places a query in the JVM only when every
expression of it compiles there, and ``eddy explain`` must show that choice without a
SparkSession — but :class:`~eddy.engine.compile.expressions.SparkExpressionCompiler` builds real
Spark columns, which need a running JVM. So this module answers the same question by
walking the expression the way the compiler does and stopping where the compiler raises
:class:`~eddy.engine.compile.scalar_functions.UnsupportedInSpark`: indexed pattern events,
``e is null`` on a pattern event, ``in Table``, comparisons of OBJECT values, aggregates
and script functions, functions without a Spark implementation, and ``str:``/``math:``
functions whose regex, radix, template or seed is not a constant (or that need Python:
``str:replaceFirst`` with back-references, ``str:fillTemplate`` with a map).

The two must agree; ``tests/engine/test_spark_support.py`` checks them on every expression
of the conformance apps and the golden apps, and the engine refuses to compile a query the
planner placed in Spark if the compiler disagrees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.functions import REGISTRY
from eddy.lang.semantic import AnalyzedApp
from eddy.lang.typecheck import constant_value
from eddy.runtime.java import java_regex, parse_replacement

SPARK_FUNCTIONS = frozenset({
    "math:abs", "math:acos", "math:asin", "math:atan", "math:bin", "math:cbrt", "math:ceil",
    "math:conv", "math:copySign", "math:cos", "math:cosh", "math:e", "math:exp",
    "math:floor", "math:getExponent", "math:hex", "math:isInfinite", "math:isNan",
    "math:ln", "math:log", "math:log10", "math:log2", "math:max", "math:min", "math:oct",
    "math:parseDouble", "math:parseFloat", "math:parseInt", "math:parseLong", "math:pi",
    "math:power", "math:rand", "math:round", "math:signum", "math:sin", "math:sinh",
    "math:sqrt", "math:tan", "math:tanh", "math:toDegrees", "math:toRadians",
    "str:charAt", "str:charFrequency", "str:concat", "str:contains",
    "str:equalsIgnoreCase", "str:fillTemplate", "str:hex", "str:length", "str:locate",
    "str:lower", "str:regexp", "str:repeat", "str:replaceAll", "str:replaceFirst",
    "str:reverse", "str:split", "str:strcmp", "str:substr", "str:trim", "str:unhex",
    "str:upper",
})
"""The ``str:``/``math:`` functions with a Spark implementation (the keys of
:data:`eddy.engine.compile.scalar_functions.FUNCTIONS`; a test keeps the two equal)."""

CORE_FUNCTIONS = frozenset({
    "eventTimestamp", "currentTimeMillis", "UUID", "ifThenElse", "coalesce", "str:coalesce",
    "default", "convert", "cast", "instanceOfBoolean", "instanceOfDouble", "instanceOfFloat",
    "instanceOfInteger", "instanceOfLong", "instanceOfString", "maximum", "minimum",
    "createSet", "sizeOfSet",
})
"""siddhi-core's functions the compiler builds itself (``_call`` and ``_core``)."""

TypeOf = Callable[[ast.Expression], AttrType]


def script_functions(analyzed: AnalyzedApp) -> list[str]:
    """The app's ``define function``s, which never run in Spark."""
    return [d.name for d in analyzed.app.definitions if isinstance(d, ast.FunctionDefinition)]


def spark_sql_problem(expr: ast.Expression, type_of: TypeOf,
                      script_functions: Collection[str] = ()) -> str | None:
    """None when ``expr`` compiles to a Spark column, else why it does not."""
    return _Walk(type_of, frozenset(script_functions)).node(expr)


def spark_sql_problems(expressions: Sequence[ast.Expression], type_of: TypeOf,
                       script_functions: Collection[str] = ()) -> str | None:
    """The first problem of any of ``expressions``, None when they all compile."""
    walk = _Walk(type_of, frozenset(script_functions))
    for expr in expressions:
        if (problem := walk.node(expr)) is not None:
            return problem
    return None


class _Walk:
    def __init__(self, type_of: TypeOf, scripts: frozenset[str]) -> None:
        self.type_of, self.scripts = type_of, scripts

    def node(self, expr: ast.Expression) -> str | None:
        match expr:
            case ast.Constant() | ast.TimeConstant():
                return None
            case ast.Variable():
                return (f"indexed pattern event '{expr.stream}' is per-event"
                        if expr.stream_index is not None else None)
            case ast.Not() | ast.Negate():
                return self.node(expr.expression)
            case ast.IsNull():
                if self._is_event_reference(expr.expression):
                    return "'e is null' on a pattern event is per-event"
                return self.node(expr.expression)
            case ast.BinaryOperation():
                return self._binary(expr)
            case ast.FunctionCall():
                return self._call(expr)
        return f"{type(expr).__name__} needs per-event state (a table or a pattern's events)"

    def _is_event_reference(self, expr: ast.Expression) -> bool:
        if not isinstance(expr, ast.Variable) or expr.stream is not None:
            return False
        try:
            self.type_of(expr)
        except KeyError:
            return True
        return False

    def _binary(self, expr: ast.BinaryOperation) -> str | None:
        if expr.op not in ("and", "or", "+", "-", "*", "/", "%") and \
                AttrType.OBJECT in (self.type_of(expr.left), self.type_of(expr.right)):
            if any(isinstance(side, ast.Constant) and side.value is None
                   for side in (expr.left, expr.right)):
                return None  # compiled as false, sides unseen
            return f"comparing OBJECT values with '{expr.op}' runs in Python"
        return self.node(expr.left) or self.node(expr.right)

    def _call(self, call: ast.FunctionCall) -> str | None:
        spec = REGISTRY.lookup("scalar", call.namespace, call.name)
        if spec is None or (call.namespace is None and call.name in self.scripts):
            return (f"'{call.qualified_name}' is an aggregate or a script function: it does "
                    "not compile to a Spark expression")
        name = spec.qualified_name
        if name in ("eventTimestamp", "currentTimeMillis"):
            return "eventTimestamp(event) of a pattern event is per-event" if call.args else None
        if name == "UUID":
            return None
        for arg in call.args:
            if (problem := self.node(arg)) is not None:
                return problem
        if name in SPARK_FUNCTIONS:
            return _constants_problem(name, call.args, [self.type_of(a) for a in call.args])
        if name in CORE_FUNCTIONS:
            return None
        return f"function '{name}' has no Spark implementation"


def _constants_problem(name: str, args: Sequence[ast.Expression],
                       types: Sequence[AttrType]) -> str | None:
    """What :mod:`eddy.engine.compile.scalar_functions` needs constant
    (``_const``/``_const_int``/``_regex``), per function."""
    consts = [constant_value(a) for a in args]

    def const(i: int) -> bool:
        return i < len(consts) and consts[i] is not None

    def const_int(i: int) -> bool:
        return const(i) and isinstance(consts[i], int)

    needs_constant = f"{name} needs constant arguments to run in Spark"
    if name == "math:conv":
        return None if const_int(1) and const_int(2) else needs_constant
    if name == "math:rand":
        return None if not args or const_int(0) else needs_constant
    if name in ("str:regexp", "str:split"):
        return None if const(1) else needs_constant
    if name == "str:substr" and types[1] is AttrType.STRING:
        return None if const(1) and (len(args) != 3 or const_int(2)) else needs_constant
    if name == "str:fillTemplate":
        if not const(0):
            return needs_constant
        if len(args) == 2 and types[1] is AttrType.OBJECT:
            return "str:fillTemplate with a map runs in Python"
        return None
    if name in ("str:replaceAll", "str:replaceFirst"):
        if not (const(1) and const(2)):
            return needs_constant
        return _replace_first_problem(str(consts[1]), str(consts[2])) \
            if name == "str:replaceFirst" else None
    return None


def _replace_first_problem(pattern: str, replacement: str) -> str | None:
    """``str:replaceFirst`` runs in Python when its valid regex has back-references."""
    try:
        compiled = java_regex(pattern)
    except (re.error, KeyError):
        return None  # null in Spark, as every call throws in Java
    _, problem = parse_replacement(compiled, replacement)
    if problem is None and re.search(r"\\[1-9]|\\k<", pattern):
        return "str:replaceFirst with back-references runs in Python"
    return None
