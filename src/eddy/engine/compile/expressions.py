"""Siddhi expressions compiled to Spark SQL columns, with Siddhi's (Java's) semantics.

Filters, projections, scalar functions and casts run in the JVM as Catalyst expressions
(DESIGN.md §4); nothing here is a Python UDF. The per-event runtime compiles the same AST to
Python closures (:mod:`eddy.runtime.evaluate`, whose docstring lists the semantics
both implement); ``tests/engine/test_expressions.py`` checks that the two agree.

What it takes to make Spark behave like Siddhi:

* ``spark.sql.ansi.enabled=false`` (eddy's session default; the compiler refuses a session
  with ANSI on): int/long arithmetic wraps, casts truncate and saturate like Java's, and
  unparsable strings cast to null. Division and remainder by zero are guarded explicitly
  (null for floating types too).
* Operands are cast to the promoted type before arithmetic; FLOAT arithmetic is done in
  ``FloatType`` (division in double, then rounded: the same single rounding), with a guard
  that keeps the optimizer from skipping an int-to-float rounding. Integer ``/`` is Spark's
  ``div``, which truncates toward zero like Java.
* Comparisons cast both sides to the type Siddhi's compare executor uses, treat NaN as Java
  does (Spark orders NaN above everything and makes NaN = NaN true), and are false when an
  operand is null (``!=`` is true then, as in Siddhi's not-equal executor);
  ``and``/``or``/``not`` read null as false. So conditions are never null.
* Expressions that need the caller's state or Python raise :class:`UnsupportedInSpark`:
  script functions, ``in Table``, pattern-event references, aggregates, and ``str:``
  functions whose regex or template is not a constant. The caller then evaluates them with
  the Python twin, or supplies a column through ``override`` (an aggregate's result, say).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

from eddy.engine.compile import scalar_functions as fs
from eddy.engine.compile.scalar_functions import UnsupportedInSpark, spark_type, typed_lit
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.functions import REGISTRY
from eddy.lang.typecheck import constant_value
from eddy.runtime.evaluate import compare_type

__all__ = ["SparkExpressionCompiler", "UnsupportedInSpark", "spark_type"]

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
ANSI = "spark.sql.ansi.enabled"
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_INSTANCE_OF = {"instanceOfBoolean": BOOL, "instanceOfDouble": DOUBLE, "instanceOfFloat": FLOAT,
                "instanceOfInteger": INT, "instanceOfLong": LONG, "instanceOfString": STRING}


def _false_if_null(c: Column) -> Column:
    return F.coalesce(c, F.lit(False))


class SparkExpressionCompiler:
    """Compiles typed Siddhi expressions of one query to columns.

    ``type_of`` gives each node's Siddhi type (``AnalyzedApp.type_of``); ``resolve`` maps an
    attribute reference to its column (an ``object`` attribute's column holds JSON text);
    ``event_time`` is the event-time clock column that ``eventTimestamp()`` and
    ``currentTimeMillis()`` return. ``override`` is asked first for
    every node and may supply its column (an aggregate computed by the caller).
    ``script_functions`` names the app's ``define function``s, which cannot run in Spark.
    """

    def __init__(self, type_of: Callable[[ast.Expression], AttrType],
                 resolve: Callable[[ast.Variable], Column], event_time: Column, *,
                 override: Callable[[ast.Expression], Column | None] | None = None,
                 script_functions: Collection[str] = ()) -> None:
        session = SparkSession.getActiveSession()
        if session is not None and str(session.conf.get(ANSI)).lower() == "true":
            raise ValueError(f"Siddhi expressions need {ANSI}=false (Java's wrap-around, casts "
                             "and nulls); eddy.engine.spark.session sets it, a user setting "
                             "undid it")
        self.type_of = type_of
        self.resolve = resolve
        self.event_time = event_time
        self.override = override
        self.script_functions = frozenset(script_functions)

    def compile(self, expr: ast.Expression) -> Column:
        """The column computing ``expr``, of the Spark type matching its Siddhi type."""
        if self.override is not None and (given := self.override(expr)) is not None:
            return given
        return self._node(expr).cast(spark_type(self.type_of(expr)))

    def compile_condition(self, expr: ast.Expression) -> Column:
        """``expr`` as a filter condition: never null (a null BOOL attribute is false)."""
        return _false_if_null(self.compile(expr))

    # -----------------------------------------------------------------------------------------

    def _node(self, expr: ast.Expression) -> Column:
        match expr:
            case ast.Constant() | ast.TimeConstant():
                return typed_lit(constant_value(expr), self.type_of(expr))
            case ast.Variable():
                if expr.stream_index is not None:
                    raise UnsupportedInSpark(f"indexed pattern event '{expr.stream}' is per-event")
                if self.type_of(expr) == OBJECT:  # columns hold an object as JSON text
                    return fs.object_from_json(self.resolve(expr))
                return self.resolve(expr)
            case ast.Not():
                return ~self.compile_condition(expr.expression)
            case ast.IsNull():
                if self._is_event_reference(expr.expression):
                    raise UnsupportedInSpark("'e is null' on a pattern event is per-event")
                return self.compile(expr.expression).isNull()
            case ast.Negate():
                return -self.compile(expr.expression)
            case ast.BinaryOperation():
                return self._binary(expr)
            case ast.FunctionCall():
                return self._call(expr)
        raise UnsupportedInSpark(f"{type(expr).__name__} needs per-event state "
                                 "(a table or a pattern's events)")

    def _is_event_reference(self, expr: ast.Expression) -> bool:
        """``e1 is null`` names a pattern event, not an attribute: the analyser leaves such a
        bare name untyped."""
        if not isinstance(expr, ast.Variable) or expr.stream is not None:
            return False
        try:
            self.type_of(expr)
        except KeyError:
            return True
        return False

    def _numeric(self, expr: ast.Expression, target: AttrType) -> Column:
        return fs.cast_number(self.compile(expr), self.type_of(expr), target)

    def _binary(self, expr: ast.BinaryOperation) -> Column:
        op = expr.op
        if op == "and":
            return self.compile_condition(expr.left) & self.compile_condition(expr.right)
        if op == "or":
            return self.compile_condition(expr.left) | self.compile_condition(expr.right)
        lt, rt = self.type_of(expr.left), self.type_of(expr.right)
        if op in ("+", "-", "*", "/", "%"):
            return self._arithmetic(op, expr, self.type_of(expr))
        if OBJECT in (lt, rt):
            return self._compare_object(op, expr)
        ct = compare_type(op, lt, rt)
        a = self._numeric(expr.left, ct) if ct.is_numeric else self.compile(expr.left)
        b = self._numeric(expr.right, ct) if ct.is_numeric else self.compile(expr.right)
        compared: Column = _COMPARE[op](a, b)
        if ct in (FLOAT, DOUBLE):  # Java: NaN is unequal to everything, itself included
            compared = F.when(F.isnan(a) | F.isnan(b), F.lit(op == "!=")).otherwise(compared)
        return F.when(a.isNull() | b.isNull(), F.lit(op == "!=")).otherwise(compared)

    def _compare_object(self, op: str, expr: ast.BinaryOperation) -> Column:
        """Siddhi cannot compare OBJECTs; comparing with the ``null`` literal is false (``!=``:
        true, as with any null operand)."""
        for side in (expr.left, expr.right):
            if isinstance(side, ast.Constant) and side.value is None:
                return F.lit(op == "!=")
        raise UnsupportedInSpark(f"comparing OBJECT values with '{op}' runs in Python")

    def _arithmetic(self, op: str, expr: ast.BinaryOperation, result: AttrType) -> Column:
        a, b = self._numeric(expr.left, result), self._numeric(expr.right, result)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "%":
            return F.when(b != 0, a % b)
        if result in (INT, LONG):  # Spark's '/' is floating; 'div' truncates like Java
            return F.when(b != 0, F.call_function("div", a, b))
        return F.when(b != 0, a.cast(DoubleType()) / b.cast(DoubleType()))

    # -----------------------------------------------------------------------------------------

    def _call(self, call: ast.FunctionCall) -> Column:
        spec = REGISTRY.lookup("scalar", call.namespace, call.name)
        if spec is None or (call.namespace is None and call.name in self.script_functions):
            raise UnsupportedInSpark(f"'{call.qualified_name}' is an aggregate or a script "
                                     "function: it does not compile to a Spark expression")
        name, result = spec.qualified_name, self.type_of(call)
        if name in ("eventTimestamp", "currentTimeMillis"):
            if call.args:
                raise UnsupportedInSpark("eventTimestamp(event) of a pattern event is per-event")
            return self.event_time
        if name == "UUID":
            return F.uuid()
        types = [self.type_of(a) for a in call.args]
        args = [self.compile(a) for a in call.args]
        consts = [constant_value(a) for a in call.args]
        if name in fs.FUNCTIONS:
            return fs.FUNCTIONS[name](args, types, consts, result)
        return self._core(name, args, types, result)

    def _core(self, name: str, args: list[Column], types: list[AttrType],
              result: AttrType) -> Column:
        """siddhi-core's functions (``io.siddhi.core.executor.function``)."""
        if name == "ifThenElse":
            return F.when(args[0], args[1]).otherwise(args[2])  # a null condition is false
        if name in ("coalesce", "str:coalesce", "default"):
            return F.coalesce(*args)
        if name == "convert":
            return fs.convert(args[0], types[0], result)
        if name == "cast":
            return fs.cast(args[0], types[0], result)
        if name in _INSTANCE_OF:  # Java: null is an instance of nothing
            wanted = _INSTANCE_OF[name]
            if types[0] == OBJECT:
                return _false_if_null(fs.variant_is(args[0], wanted))
            return args[0].isNotNull() if types[0] == wanted else F.lit(False)
        if name in ("maximum", "minimum"):
            return args[0] if len(args) == 1 else self._extreme(name == "maximum", args)
        if name == "createSet":
            return F.to_variant_object(F.array(args[0]))
        if name == "sizeOfSet":
            size = F.array_size(F.try_variant_get(args[0], "$", "array<variant>"))
            return F.when(args[0].isNull(), F.lit(0)).otherwise(size)
        raise UnsupportedInSpark(f"function '{name}' has no Spark implementation")

    @staticmethod
    def _extreme(larger: bool, args: list[Column]) -> Column:
        """Siddhi's ``maximum``/``minimum``: a double running from Double.MIN_VALUE (so all
        negative arguments give 0) / Double.MAX_VALUE; nulls and NaN skipped."""
        best = F.lit(5e-324 if larger else 1.7976931348623157e308)
        for arg in args:
            d = arg.cast(DoubleType())
            better = d > best if larger else d < best
            best = F.when(~F.isnan(d) & better, d).otherwise(best)
        return best

