"""Checking ``select … group by … having … order by … limit … offset``.

The selection fixes a query's output schema: each attribute's name (its ``as`` name, or the
referenced attribute's own name) and inferred type. ``having`` and ``order by`` see the
selected names; ``group by`` sees the inputs.
"""

from __future__ import annotations

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.functions import REGISTRY
from eddy.lang.scope import Scope, SemanticError, first_shared
from eddy.lang.typecheck import ExpressionTyper, constant_value
from eddy.lang.walk import walk_expression


def has_aggregate(expr: ast.Expression) -> bool:
    """Whether ``expr`` calls an aggregate function anywhere."""
    return any(isinstance(e, ast.FunctionCall) and REGISTRY.is_aggregate(e.namespace, e.name)
               for e in walk_expression(expr))


def check_selector(selector: ast.Selector, scope: Scope, typer: ExpressionTyper, *,
                   single_input: bool = False,
                   output_id: str | None = None) -> tuple[tuple[Attribute, ...], bool]:
    """The output schema of ``selector`` over ``scope``, and whether it aggregates.

    ``single_input`` says the query reads one stream: its ``having`` and ``order by`` then
    see only the selected attributes (qualified, if at all, by ``output_id``)."""
    outputs = _outputs(selector, scope, typer)
    aggregates = any(has_aggregate(a.expression) for a in selector.attributes or ())
    for variable in selector.group_by:
        typer.infer(variable, scope)
    selected = scope.with_outputs(outputs, only=single_input, output_id=output_id)
    if selector.having is not None:
        typer.expect_bool(selector.having, selected, "'having'", aggregates=True)
        aggregates = aggregates or has_aggregate(selector.having)
    for order in selector.order_by:
        typer.infer(order.variable, selected)
    for clause, expr in (("limit", selector.limit), ("offset", selector.offset)):
        if expr is not None:
            _check_count(clause, expr, scope, typer)
    return outputs, aggregates


def _outputs(selector: ast.Selector, scope: Scope,
             typer: ExpressionTyper) -> tuple[Attribute, ...]:
    if selector.attributes is None:
        return _all_attributes(selector, scope)
    outputs: list[Attribute] = []
    seen: dict[str, ast.OutputAttribute] = {}
    for item in selector.attributes:
        attr_type = typer.infer(item.expression, scope, aggregates=True)
        if item.rename is not None:
            name = item.rename
        elif isinstance(item.expression, ast.Variable):
            name = item.expression.attribute
        else:
            raise SemanticError("a computed attribute needs a name", item.span,
                                "add 'as <name>' after the expression")
        if name in seen:
            raise SemanticError(
                f"the output attribute '{name}' is selected twice", item.span,
                f"rename one of them with 'as', e.g. '… as {name}2'")
        seen[name] = item
        outputs.append(Attribute(name, attr_type, span=item.span))
    return tuple(outputs)


def _all_attributes(selector: ast.Selector, scope: Scope) -> tuple[Attribute, ...]:
    """``select *``: every input's attributes; over a join or pattern no name may be in two
    inputs, or the output would have it twice (``SelectorParser``)."""
    shared = first_shared(scope.sources)
    if shared is not None:
        name, first, second = shared
        raise SemanticError(f"'select *' would select '{name}' twice: {first.label} and "
                            f"{second.label} both have it", selector.span,
                            "select the attributes by name, renaming one with 'as'")
    return tuple(Attribute(a.name, a.type) for s in scope.sources for a in s.attributes)


def _check_count(clause: str, expr: ast.Expression, scope: Scope,
                 typer: ExpressionTyper) -> None:
    found = typer.infer(expr, scope)
    value = constant_value(expr)
    if found not in (AttrType.INT, AttrType.LONG) or value is None:
        raise SemanticError(f"'{clause}' takes a whole-number constant", expr.span)
    if isinstance(value, int) and value < 0:
        raise SemanticError(f"'{clause}' cannot be negative", expr.span)
