"""Compiled expressions as the JSON eddy's Java operators read (``ops/Expression.java``).

One format for every Java operator that evaluates a condition — the followed-by's residual,
a window aggregate's ``having`` — so the tree :func:`~.columnar_expressions.compile_columnar`
builds means the same in NumPy and in the JVM. A column node names where its value is: a
``side`` (0: the values the operator keeps or selects, 1: the row) and an ``index`` there,
which only the operator's caller knows (``place``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from eddy.engine.operators.columnar_expressions import Node
from eddy.lang.ast import AttrType


def expression_json(tree: Node, place: Callable[[str], tuple[int, int]]) -> dict[str, Any]:
    """``tree`` as ``Expression.java`` parses it; ``place(column)`` is ``(side, index)``."""
    found: dict[str, Any] = {"op": tree.op, "type": tree.type.name,
                             "children": [expression_json(child, place)
                                          for child in tree.children]}
    if tree.operand is not None:
        found["operand"] = tree.operand.name
    if tree.op == "col":
        found["side"], found["index"] = place(tree.value)
    elif tree.op == "const":
        found["value"] = _constant(tree.value, tree.type)
    return found


def _constant(value: Any, kind: AttrType) -> str | None:
    """A constant as the text Java parses back exactly (a double's shortest repr; Java's
    names for the infinities and NaN)."""
    if value is None:
        return None
    if kind is AttrType.DOUBLE:
        number = float(value)
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return repr(number)
    if kind is AttrType.BOOL:
        return "true" if value else "false"
    return str(int(value)) if kind in (AttrType.INT, AttrType.LONG) else str(value)
