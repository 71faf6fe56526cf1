"""The attribute columns a columnar operator (a pattern's two states, a join's two sides)
reads, and its selection of them.

Each input of the query (``scope.sources[i]``) gets a column prefix; every attribute an
expression or the selection reads becomes one operator column ``<prefix><n>`` with its
type. Two inputs over the same stream read one *physical* row column for the same
attribute, so its values cross from the JVM into Python once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import TYPES, Node, NotColumnar, compile_columnar
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import Scope, Source
from eddy.lang.semantic import QueryInfo


@dataclass(frozen=True)
class Selected:
    """One selected attribute: ``side`` is the prefix of the input it comes from and
    ``column`` the operator column it copies; or ``expression``, computed over the operator
    columns of both inputs (``side`` and ``column`` empty)."""

    name: str
    type: AttrType
    side: str
    column: str
    expression: Node | None = None


def state_of(source: Source, sources: Sequence[Source]) -> int | None:
    """Which of ``sources`` (pattern states, join sides) ``source`` is."""
    for i, candidate in enumerate(sources):
        if candidate is source or candidate == source:
            return i
    return None


class OperatorColumns:
    """Allocates operator columns for the query's inputs (``prefixes[i]`` for input i)."""

    def __init__(self, sources: Sequence[Source], prefixes: Sequence[str],
                 streams: Sequence[str] | None = None) -> None:
        self.sources, self.prefixes = sources, prefixes
        self.streams = [s.stream for s in sources] if streams is None else list(streams)
        """The stream each input reads, as the rows name it (an inner ``#T``)."""
        self.named: dict[tuple[int, str], str] = {}  # (input, attribute) -> column
        self.types: dict[str, AttrType] = {}
        self.attributes: dict[str, tuple[str, str]] = {}  # physical -> (stream, attribute)
        self.physical: dict[str, str] = {}

    def column(self, side: int, attribute: ast.Attribute) -> str:
        """The operator column of input ``side``'s ``attribute`` (NotColumnar: a type the
        columnar evaluator does not hold)."""
        found = self.named.get((side, attribute.name))
        if found is None:
            if attribute.type not in TYPES:
                raise NotColumnar(attribute.type.value)
            found = f"{self.prefixes[side]}{sum(1 for s, _ in self.named if s == side)}"
            self.named[(side, attribute.name)] = found
            self.types[found] = attribute.type
            read = (self.streams[side], attribute.name)
            self.physical[found] = next((c for c, a in self.attributes.items() if a == read),
                                        found)
            self.attributes.setdefault(self.physical[found], read)
        return found

    def resolver(self, scope: Scope) -> Callable[[ast.Variable], str | None]:
        """A variable's operator column as seen from ``scope`` (None: no input's)."""
        def column_of(var: ast.Variable) -> str | None:
            if var.stream_index is not None:
                return None  # an event of a chain: no column of its own
            resolved = scope.resolve(var)
            side = state_of(resolved.source, self.sources)
            return None if side is None else self.column(side, resolved.attribute)
        return column_of

    def selection(self, info: QueryInfo,
                  type_of: Callable[[ast.Expression], AttrType] | None = None
                  ) -> tuple[Selected, ...] | None:
        """The query's selection when it is plain attributes of the inputs (or, given
        ``type_of``, expressions the columnar evaluator computes), else None
        (NotColumnar: an expression it does not compute)."""
        selected = []
        for item, out in zip(info.query.selector.attributes or (), info.outputs):
            one = self.selected(info, out.name, out.type, item.expression, type_of)
            if one is None:
                return None
            selected.append(one)
        return tuple(selected)

    def selected(self, info: QueryInfo, name: str, kind: AttrType, expr: ast.Expression,
                 type_of: Callable[[ast.Expression], AttrType] | None = None
                 ) -> Selected | None:
        """``expr`` of ``info``'s inputs as the operator's output ``name`` of type ``kind``:
        a copy of an input's attribute, or (given ``type_of``) an expression the columnar
        evaluator computes; None when it is neither (NotColumnar: an expression it does
        not compute)."""
        if type_of is not None and not isinstance(expr, ast.Variable):
            node = compile_columnar(expr, type_of, self.resolver(info.scope))
            return Selected(name, kind, "", "", node) if node.type is kind else None
        if not isinstance(expr, ast.Variable) or expr.stream_index is not None:
            return None
        resolved = info.scope.resolve(expr)
        side = state_of(resolved.source, self.sources)
        if side is None or kind is not resolved.attribute.type:
            return None
        return Selected(name, kind, self.prefixes[side], self.column(side, resolved.attribute))
