"""Walking the AST: the sub-expressions of an expression, the states of a pattern.

The analyser asks the same questions of several trees — does a selection aggregate, which
streams does a pattern read, which states are counted — and answers them by filtering one of
these pre-order walks rather than recursing over the node types each time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from eddy.lang import ast


def walk_nodes(node: ast.Node) -> Iterator[ast.Node]:
    """``node`` and every node reachable through its fields (in lists and tuples too),
    parents first: for a question about a whole query, whatever its shape."""
    yield node
    for spec in dataclasses.fields(node):
        value = getattr(node, spec.name)
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, ast.Node):
                yield from walk_nodes(item)


def walk_expression(expr: ast.Expression) -> Iterator[ast.Expression]:
    """``expr`` and every expression nested in it, parents before children."""
    yield expr
    match expr:
        case ast.BinaryOperation():
            yield from walk_expression(expr.left)
            yield from walk_expression(expr.right)
        case ast.Not() | ast.Negate() | ast.IsNull() | ast.In():
            yield from walk_expression(expr.expression)
        case ast.FunctionCall():
            for arg in expr.args:
                yield from walk_expression(arg)


def walk_states(state: ast.StateElement) -> Iterator[ast.StateElement]:
    """``state`` and every state nested in it, parents before children, in written order."""
    yield state
    match state:
        case ast.LogicalStateElement():
            yield from walk_states(state.left)
            yield from walk_states(state.right)
        case ast.CountStateElement() | ast.EveryStateElement():
            yield from walk_states(state.element)
        case ast.NextStateElement():
            yield from walk_states(state.element)
            yield from walk_states(state.next)


def state_streams(state: ast.StateElement) -> Iterator[ast.SingleInputStream]:
    """The stream of every stream and absent (``not S``) state, in written order."""
    for element in walk_states(state):
        if isinstance(element, (ast.StreamStateElement, ast.AbsentStreamStateElement)):
            yield element.stream
