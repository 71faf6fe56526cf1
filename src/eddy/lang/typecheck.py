"""Expression typing with Siddhi's rules.

Arithmetic promotes INT < LONG < FLOAT < DOUBLE (``int * float`` is FLOAT, ``int / int`` stays
INT); ``<``/``>`` compare numbers only; ``==``/``!=`` compare like with like; ``and``/``or``/
``not`` take BOOL. Functions and aggregators are checked against the registry, which also
gives their result types (``sum(int)`` is LONG, ``avg`` DOUBLE, …).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.errors import did_you_mean
from eddy.lang.functions import REGISTRY, Registry, TypeMismatch
from eddy.lang.scope import Scope, SemanticError, Source
from eddy.lang.star_args import is_star, star_arguments

_NUMERIC_ORDER = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)
_ARITHMETIC = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division",
               "%": "modulus"}
_ORDERING = {"<", "<=", ">", ">="}


def promote(left: AttrType, right: AttrType) -> AttrType:
    """The result type of arithmetic on two numeric types."""
    return _NUMERIC_ORDER[max(_NUMERIC_ORDER.index(left), _NUMERIC_ORDER.index(right))]


def constant_value(expr: ast.Expression) -> object | None:
    """The value of a constant expression (a literal, a time value, a negated literal)."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.TimeConstant):
        return expr.millis
    if isinstance(expr, ast.Negate):
        inner = constant_value(expr.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return None


def is_constant(expr: ast.Expression) -> bool:
    """Whether ``expr`` is a literal, a time value or a negated one; unlike
    :func:`constant_value`, which gives None for it, ``null`` counts."""
    if isinstance(expr, (ast.Constant, ast.TimeConstant)):
        return True
    return isinstance(expr, ast.Negate) and is_constant(expr.expression)


TableLookup = Callable[[str], Source | None]


class ExpressionTyper:
    """Infers and checks expression types; remembers each node's type by identity."""

    def __init__(self, functions: Mapping[str, ast.FunctionDefinition], tables: TableLookup,
                 registry: Registry = REGISTRY) -> None:
        self.registry = registry
        self.functions = functions
        self.tables = tables
        self.types: dict[int, AttrType] = {}
        # Calls written ``f(*)`` (by id) and the arguments the ``*`` stood for; the analyser
        # writes them into the AST (see star_args).
        self.expanded: dict[int, tuple[ast.Expression, ...]] = {}

    def infer(self, expr: ast.Expression, scope: Scope, *, aggregates: bool = False) -> AttrType:
        """The type of ``expr`` in ``scope``; ``aggregates`` allows aggregator calls."""
        result = self._infer(expr, scope, aggregates)
        self.types[id(expr)] = result
        return result

    def expect_bool(self, expr: ast.Expression, scope: Scope, what: str,
                    *, aggregates: bool = False) -> None:
        """Types ``expr`` and faults unless it is a condition (BOOL, or an OBJECT that may
        hold one); ``what`` names it in the message (``"a filter"``)."""
        found = self.infer(expr, scope, aggregates=aggregates)
        if found not in (AttrType.BOOL, AttrType.OBJECT):
            raise SemanticError(f"{what} must be a condition (BOOL), but this is {found.value}",
                                expr.span)

    def _infer(self, expr: ast.Expression, scope: Scope, aggregates: bool) -> AttrType:
        match expr:
            case ast.Constant():
                return expr.type
            case ast.TimeConstant():
                return AttrType.LONG
            case ast.Variable():
                resolved = scope.resolve(expr)
                if (resolved.source.counted and scope.current is None
                        and expr.stream is not None and expr.stream_index is None):
                    # ``select e1.x`` of a counting state ``e1=S<2:5>``: the reference's
                    # MultiValueVariableFunctionExecutor, a list of every event's value.
                    return AttrType.OBJECT
                return resolved.type
            case ast.Not():
                self._operand_bool(expr.expression, scope, aggregates, "not")
                return AttrType.BOOL
            case ast.Negate():
                inner = self.infer(expr.expression, scope, aggregates=aggregates)
                if not inner.is_numeric:
                    raise SemanticError(f"cannot negate a {inner.value} value", expr.span)
                return inner
            case ast.IsNull():
                if self._names_pattern_event(expr.expression, scope):
                    return AttrType.BOOL
                self.infer(expr.expression, scope, aggregates=aggregates)
                return AttrType.BOOL
            case ast.IsNullStream():
                if scope.by_ref(expr.stream) is None:
                    raise SemanticError(f"'{expr.stream}' is not an input of this query",
                                        expr.span)
                return AttrType.BOOL
            case ast.In():
                return self._in(expr, scope, aggregates)
            case ast.BinaryOperation():
                return self._binary(expr, scope, aggregates)
            case ast.FunctionCall():
                return self._call(expr, scope, aggregates)
        raise SemanticError(f"unsupported expression {type(expr).__name__}", expr.span)

    @staticmethod
    def _event_reference(call: ast.FunctionCall, scope: Scope) -> bool:
        """Whether ``call`` is ``eventTimestamp(e)`` of a whole input event: ``e`` names a
        pattern event, or a side of a join (its alias, or its stream when not aliased), and
        no attribute (``ExpressionParser.constructEventExpressionExecutor``)."""
        if call.namespace is not None or call.name != "eventTimestamp" or len(call.args) != 1:
            return False
        arg = call.args[0]
        if not isinstance(arg, ast.Variable) or arg.stream is not None:
            return False
        if any(s.attribute(arg.attribute) for s in scope.sources):
            return False
        source = scope.by_ref(arg.attribute)
        return source is not None and (source.pattern_state or len(scope.sources) > 1)

    @staticmethod
    def _names_pattern_event(expr: ast.Expression, scope: Scope) -> bool:
        if not isinstance(expr, ast.Variable) or expr.stream is not None:
            return False
        source = scope.by_ref(expr.attribute)
        return source is not None and source.pattern_state

    def _operand_bool(self, expr: ast.Expression, scope: Scope, aggregates: bool,
                      op: str) -> None:
        found = self.infer(expr, scope, aggregates=aggregates)
        if found not in (AttrType.BOOL, AttrType.OBJECT):
            raise SemanticError(f"'{op}' needs BOOL operands, but this is {found.value}",
                                expr.span)

    def _in(self, expr: ast.In, scope: Scope, aggregates: bool) -> AttrType:
        table = self.tables(expr.source)
        if table is None:
            raise SemanticError(f"'in {expr.source}' needs a table, and '{expr.source}' is not "
                                "a defined table", expr.span)
        self.expect_bool(expr.expression, scope.with_source(table), "the condition before 'in'",
                         aggregates=aggregates)
        return AttrType.BOOL

    def _binary(self, expr: ast.BinaryOperation, scope: Scope, aggregates: bool) -> AttrType:
        if expr.op in ("and", "or"):
            self._operand_bool(expr.left, scope, aggregates, expr.op)
            self._operand_bool(expr.right, scope, aggregates, expr.op)
            return AttrType.BOOL
        left = self.infer(expr.left, scope, aggregates=aggregates)
        right = self.infer(expr.right, scope, aggregates=aggregates)
        if expr.op in _ARITHMETIC:
            for side, found in ((expr.left, left), (expr.right, right)):
                if not found.is_numeric:
                    raise SemanticError(
                        f"{_ARITHMETIC[expr.op]} ('{expr.op}') needs numbers, but "
                        f"{_describe(side)} is {found.value}", side.span,
                        "use str:concat(a, b) to join strings" if expr.op == "+" else None)
            return promote(left, right)
        if expr.op in _ORDERING:
            for side, found in ((expr.left, left), (expr.right, right)):
                if not found.is_numeric:
                    raise SemanticError(
                        f"'{expr.op}' compares numbers, but {_describe(side)} is {found.value}",
                        expr.span)
            return AttrType.BOOL
        if not _comparable(left, right):
            raise SemanticError(f"'{expr.op}' cannot compare {left.value} with {right.value}",
                                expr.span)
        return AttrType.BOOL

    def _call(self, call: ast.FunctionCall, scope: Scope, aggregates: bool) -> AttrType:
        args = call.args
        if self._event_reference(call, scope):
            self.types[id(args[0])] = AttrType.OBJECT
            return AttrType.LONG
        if is_star(args):
            args = star_arguments(args[0], scope.sources, call.qualified_name)
            self.expanded[id(call)] = args
        if call.namespace is None and call.name in self.functions:
            for arg in args:
                self.infer(arg, scope, aggregates=aggregates)
            return self.functions[call.name].return_type
        spec = self.registry.lookup("scalar", call.namespace, call.name)
        if spec is None:
            spec = self.registry.lookup("aggregate", call.namespace, call.name)
            if spec is not None and not aggregates:
                raise SemanticError(
                    f"aggregate function '{call.qualified_name}' can only be used in "
                    "'select', 'having' or 'order by'", call.span)
        if spec is None:
            guess = (self.registry.suggest("scalar", call.namespace, call.name)
                     or self.registry.suggest("aggregate", call.namespace, call.name)
                     or did_you_mean(call.name, self.functions))
            raise SemanticError(f"function '{call.qualified_name}' is not defined", call.span,
                                f"did you mean '{guess}'?" if guess else None)
        inner_aggregates = aggregates and spec.kind != "aggregate"
        arg_types = [self.infer(a, scope, aggregates=inner_aggregates) for a in args]
        try:
            result = self.registry.check_call(spec, arg_types, [constant_value(a) for a in args])
        except TypeMismatch as mismatch:
            raise SemanticError(mismatch.message, call.span) from None
        return result if result is not None else AttrType.OBJECT


def _comparable(left: AttrType, right: AttrType) -> bool:
    if AttrType.OBJECT in (left, right):
        return True
    if left.is_numeric and right.is_numeric:
        return True
    return left == right


def _describe(expr: ast.Expression) -> str:
    if isinstance(expr, ast.Variable):
        return f"'{expr.attribute}'"
    if isinstance(expr, ast.Constant):
        return f"the constant {expr.value!r}"
    return "the operand"
