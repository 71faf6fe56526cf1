"""``f(*)``: a function or stream function given every attribute of its input.

Siddhi expands the ``*`` when it builds the executor (``ExpressionParser.parseInnerExpression``,
``SingleInputStreamParser.generateProcessor``): the attributes of the input as it reaches the
call, in order (after any stream function that added attributes), or those of every input of
a join or pattern, where a name in two inputs is a fault. Analysis does the same and then
writes the attributes into the query's AST in place of the ``*``, so later layers only ever
see ordinary arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from eddy.lang import ast
from eddy.lang.scope import SemanticError, Source, first_shared

_N = TypeVar("_N")


def is_star(args: tuple[ast.Expression, ...]) -> bool:
    """Whether a call's arguments are the single ``*``."""
    return len(args) == 1 and isinstance(args[0], ast.AllAttributes)


def star_arguments(star: ast.Expression, sources: tuple[Source, ...],
                   what: str) -> tuple[ast.Variable, ...]:
    """The attributes ``*`` stands for over ``sources``, as variables at the ``*``;
    ``what`` names the call in the fault raised when two inputs share a name."""
    shared = first_shared(sources)
    if shared is not None:
        name, first, second = shared
        raise SemanticError(f"'{what}(*)' cannot pass every attribute: '{name}' is in both "
                            f"{first.label} and {second.label}", star.span,
                            "list the attributes to pass instead of '*'")
    return tuple(ast.Variable(a.name, span=star.span) for s in sources for a in s.attributes)


def with_arguments(node: _N, expanded: Mapping[int, tuple[ast.Expression, ...]]) -> _N:
    """``node`` with the ``args`` of every call whose id is in ``expanded`` replaced; the
    nodes on the way are rebuilt, everything else is shared."""
    return _rebuild(node, expanded) if expanded else node


def _rebuild(value: Any, expanded: Mapping[int, tuple[ast.Expression, ...]]) -> Any:
    if isinstance(value, tuple):
        items = tuple(_rebuild(v, expanded) for v in value)
        return items if any(a is not b for a, b in zip(items, value)) else value
    if not isinstance(value, ast.Node):
        return value
    changes = {}
    for field in dataclasses.fields(value):
        if field.name == "span":
            continue
        old = getattr(value, field.name)
        new = _rebuild(old, expanded)
        if new is not old:
            changes[field.name] = new
    if id(value) in expanded:
        changes["args"] = expanded[id(value)]
    return dataclasses.replace(value, **changes) if changes else value
