"""Siddhi expressions over whole numpy columns, with the per-event runtime's Java semantics.

A vectorised operator that must test a condition on many (event, event) pairs at once —
the ``e1.temp + 5 <= temp`` of a pattern — cannot call the runtime's per-event closures
(:mod:`eddy.runtime.evaluate`) a million times a batch. :func:`compile_columnar`
turns an analysed expression into a small picklable tree (:class:`Node`, types resolved in
the driver, where the analyser's types live); :func:`evaluate` runs the tree over columns.

Each value is a :class:`Values`: the numbers and a null mask. The rules are the runtime's,
node by node: ``int`` arithmetic wraps at 32 bits and ``long`` at 64, division truncates,
``/``/``%`` by zero give null, a comparison with a null operand is false (``!=`` true),
never null, ``and``/``or``/``not`` read null as false, and a double NaN is null, as it is when Spark
hands the runtime its rows (:func:`eddy.engine.operators.runtime_operator.to_events`). Only what
those rules cover compiles: attributes, literals, arithmetic, comparisons,
``and``/``or``/``not``, ``is null`` and negation over ``int``, ``long``, ``double``, ``string``
(equality only) and ``bool``. Anything else raises :class:`NotColumnar`, and the caller keeps the
per-event path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.typecheck import constant_value
from eddy.runtime.evaluate import compare_type

__all__ = ["POSITION", "Node", "NotColumnar", "Values", "column_values", "compile_columnar",
           "concat", "dtype_of", "evaluate", "key_groups", "output_frame", "series_of", "take",
           "truthy"]

Array = npt.NDArray[Any]
TYPES = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE, AttrType.STRING, AttrType.BOOL)
_NUMERIC = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE)
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal}
_ARITHMETIC = ("+", "-", "*", "/", "%")
_NULLABLE = {AttrType.INT: "Int32", AttrType.LONG: "Int64", AttrType.BOOL: "boolean"}


class NotColumnar(Exception):
    """The expression uses something :func:`evaluate` does not run."""


@dataclass(frozen=True)
class Node:
    """One node of a compiled expression: ``op`` is ``col`` (``value`` is the column's
    name), ``const``, ``isnull``, ``not``, ``neg``, ``and``/``or``, a comparison or an
    arithmetic operator; ``type`` is the node's result type and ``operand`` the type both
    operands of a comparison or arithmetic are converted to first."""

    op: str
    type: AttrType
    children: tuple[Node, ...] = ()
    value: Any = None
    operand: AttrType | None = None


@dataclass(frozen=True)
class Values:
    """A column of values and its null mask (``values`` holds filler where ``null``)."""

    values: Array
    null: Array


def compile_columnar(expr: ast.Expression, type_of: Callable[[ast.Expression], AttrType],
                     column_of: Callable[[ast.Variable], str | None]) -> Node:
    """``expr`` as a tree :func:`evaluate` runs; ``column_of`` names the column a variable
    reads (None: not available). Raises :class:`NotColumnar`."""
    kind = type_of(expr)
    if kind not in TYPES:
        raise NotColumnar(f"type {kind.value}")
    match expr:
        case ast.Constant() | ast.TimeConstant():
            return Node("const", kind, value=constant_value(expr))
        case ast.Variable():
            column = None if expr.inner or expr.fault else column_of(expr)
            if column is None:
                raise NotColumnar(f"attribute {expr.attribute}")
            return Node("col", kind, value=column)
        case ast.IsNull():
            return Node("isnull", kind, (compile_columnar(expr.expression, type_of, column_of),))
        case ast.Not():
            return Node("not", kind, (compile_columnar(expr.expression, type_of, column_of),))
        case ast.Negate():
            return Node("neg", kind, (compile_columnar(expr.expression, type_of, column_of),))
        case ast.BinaryOperation():
            left = compile_columnar(expr.left, type_of, column_of)
            right = compile_columnar(expr.right, type_of, column_of)
            if expr.op in ("and", "or"):
                return Node(expr.op, kind, (left, right))
            if expr.op in _COMPARE:
                operand = compare_type(expr.op, left.type, right.type)
                numeric = left.type in _NUMERIC and right.type in _NUMERIC
                if not numeric and (left.type != right.type or (
                        left.type is AttrType.STRING and expr.op not in ("==", "!="))):
                    raise NotColumnar(f"{left.type.value} {expr.op} {right.type.value}")
                return Node(expr.op, kind, (left, right), operand=operand)
            if expr.op in _ARITHMETIC and kind in _NUMERIC:
                return Node(expr.op, kind, (left, right), operand=kind)
    raise NotColumnar(type(expr).__name__)


def column_values(series: pd.Series, kind: AttrType) -> Values:
    """A pandas column as :class:`Values` of ``kind`` (Spark's nulls arrive as NaN or None,
    and a double NaN counts as null, as in
    :func:`eddy.engine.operators.runtime_operator.to_events`)."""
    null = series.isna().to_numpy()
    if kind in (AttrType.INT, AttrType.LONG):
        # a long with nulls already arrived as a float64 (as the runtime gets it too)
        return Values(_filled(series, null, 0).astype(np.int64), null)
    if kind is AttrType.DOUBLE:
        return Values(series.to_numpy(dtype=np.float64, na_value=np.nan), null)
    if kind is AttrType.BOOL:
        return Values(_filled(series, null, False).astype(bool), null)
    return Values(series.to_numpy(dtype=object), null)


def logical_columns(frame: pd.DataFrame, physical: Sequence[tuple[str, str]],
                    kinds: Mapping[str, AttrType]) -> dict[str, Values]:
    """An operator's columns (``kinds``: name -> type) read from the row columns
    ``physical`` names for each (several may share one, as ``e1.x`` and ``e2.x`` of one
    stream do: it is converted once)."""
    read: dict[str, Values] = {}
    for logical, column in physical:
        if column not in read:
            read[column] = column_values(frame[column], kinds[logical])
    return {logical: read[column] for logical, column in physical}


def _filled(series: pd.Series, null: Array, filler: Any) -> Array:
    values: Array = series.to_numpy()
    return np.where(null, filler, values) if null.any() else values


def truthy(values: Values) -> Array:
    """Where a condition holds (null counts as false)."""
    return values.values.astype(bool) & ~values.null


def evaluate(node: Node, columns: Mapping[str, Values], size: int) -> Values:
    """``node`` over ``columns`` (each of length ``size``)."""
    with np.errstate(all="ignore"):
        return _evaluate(node, columns, size)


def _evaluate(node: Node, columns: Mapping[str, Values], size: int) -> Values:
    op = node.op
    if op == "col":
        return columns[node.value]
    if op == "const":
        null = np.full(size, node.value is None)
        filler = {AttrType.STRING: "", AttrType.BOOL: False}.get(node.type, 0)
        value = filler if node.value is None else node.value
        dtype = {AttrType.INT: np.int64, AttrType.LONG: np.int64, AttrType.DOUBLE: np.float64,
                 AttrType.BOOL: bool}.get(node.type, object)
        return Values(np.full(size, value, dtype=dtype), null)
    children = [_evaluate(child, columns, size) for child in node.children]
    clean = np.zeros(size, dtype=bool)
    if op == "isnull":
        return Values(children[0].null.copy(), clean)
    if op == "not":
        return Values(~truthy(children[0]), clean)
    if op == "and":
        return Values(truthy(children[0]) & truthy(children[1]), clean)
    if op == "or":
        return Values(truthy(children[0]) | truthy(children[1]), clean)
    if op == "neg":
        (child,) = children
        return Values(_wrap(-child.values, node.type), child.null)
    assert node.operand is not None
    left, right = (_convert(child, kid.type, node.operand)
                   for child, kid in zip(children, node.children))
    null = children[0].null | children[1].null
    if op in _COMPARE:
        if node.operand is AttrType.STRING:
            left, right = np.where(null, "", left), np.where(null, "", right)
        compared = _COMPARE[op](left, right).astype(bool)
        # Siddhi: a null operand makes a comparison false, but '!=' true
        return Values(compared | null if op == "!=" else compared & ~null, clean)
    return _arithmetic(op, node.type, left, right, null)


def _convert(values: Values, source: AttrType, target: AttrType) -> Array:
    """Java's widening of an operand (``int``/``long`` to ``double``; ints are int64)."""
    if target is AttrType.DOUBLE and source in (AttrType.INT, AttrType.LONG):
        return values.values.astype(np.float64)
    return values.values


def _wrap(values: Array, kind: AttrType) -> Array:
    if kind is AttrType.INT:
        return ((values + 2**31) & 0xFFFFFFFF) - 2**31
    return values


def _arithmetic(op: str, kind: AttrType, x: Array, y: Array, null: Array) -> Values:
    if op in ("+", "-", "*"):
        result = x + y if op == "+" else x - y if op == "-" else x * y
        return Values(_wrap(result, kind), null)
    zero = y == 0
    null = null | zero
    if kind is AttrType.DOUBLE:
        safe = np.where(zero, 1.0, y)
        return Values(x / safe if op == "/" else np.fmod(x, safe), null)
    # integers: Java truncates; x / -1 and x % -1 are special-cased, since MIN / -1
    # overflows (Java wraps it to MIN; numpy may trap)
    minus_one = y == -1
    safe = np.where(zero | minus_one, 1, y)
    if op == "/":
        quotient = x // safe
        quotient += ((x % safe) != 0) & ((x < 0) != (safe < 0))
        return Values(_wrap(np.where(minus_one, -x, quotient), kind), null)
    return Values(np.where(minus_one, 0, np.fmod(x, safe)), null)


def key_groups(base: Array, first: list[Values], second: list[Values]) -> Array:
    """One group number per row of ``first``'s columns followed by ``second``'s, equal where
    ``base`` and every key column are (``first[i]`` pairs with ``second[i]``); -1 where a key
    is null, which equals nothing, as in a Siddhi comparison."""
    combined = base.astype(np.int64)
    null = np.zeros(len(base), bool)
    for a, b in zip(first, second):
        values = np.concatenate([a.values, b.values]) if a.values.dtype == b.values.dtype \
            else np.concatenate([a.values.astype(object), b.values.astype(object)])
        part, uniques = pd.factorize(values)
        null |= np.concatenate([a.null, b.null])
        combined = combined * (len(uniques) + 1) + part
        combined, _ = pd.factorize(combined)  # keeps the product small
    return np.where(null, -1, combined).astype(np.int64)


POSITION = "_i"
"""An operator output's place among the outputs of the event that caused it."""
EXPIRED = "_x"
"""An operator output's column saying it is an expired event (operators that emit some)."""


def output_frame(seq: Array, ts: Array, rows: Array,
                 values: list[tuple[Values, AttrType]], *,
                 by_seq: bool = False) -> pd.DataFrame:
    """An operator's outputs: for each, the ``_seq`` of the batch row that caused it
    (``rows``, sorted), its ``_ts`` (``ts`` of that row; with ``by_seq`` ``ts`` is one time
    per output), its :data:`POSITION` among that ``_seq``'s outputs, then ``o<i>`` per
    value."""
    causes = seq[rows]
    first = np.searchsorted(causes, causes, side="left")
    frame: dict[str, Any] = {"_seq": causes, "_ts": ts if by_seq else ts[rows],
                             POSITION: (np.arange(len(rows)) - first).astype(np.int32)}
    for i, (column, kind) in enumerate(values):
        frame[f"o{i}"] = series_of(column, kind)
    return pd.DataFrame(frame)


def series_of(values: Values, kind: AttrType) -> pd.Series:
    """An output column as Spark takes it back: a double null is NaN (Spark makes it null),
    ints and bools nullable, anything else objects with None."""
    if kind is AttrType.DOUBLE:
        return pd.Series(np.where(values.null, np.nan, values.values))  # NaN leaves as null
    nullable = _NULLABLE.get(kind)
    if nullable is None:
        plain = values.values.astype(object)
        plain[values.null] = None
        return pd.Series(plain, dtype=object)
    series = pd.Series(values.values).astype(nullable)
    series[values.null] = pd.NA
    return series


def take(values: Values, index: Array) -> Values:
    """The values at ``index``."""
    return Values(values.values[index], values.null[index])


def take_or_null(values: Values, index: Array) -> Values:
    """The values at ``index``, null where it is -1 (an outer join's missing side, a
    logical state's side that took no part)."""
    missing = index < 0
    if not missing.any():
        return take(values, index)
    padded = concat(values, Values(np.zeros(1, values.values.dtype), np.ones(1, bool)))
    return take(padded, np.where(missing, len(values.values), index))


def concat(a: Values, b: Values) -> Values:
    """``a`` then ``b``."""
    return Values(np.concatenate([a.values, b.values]), np.concatenate([a.null, b.null]))


def dtype_of(kind: AttrType) -> Any:
    """The numpy dtype that holds ``kind``'s values here."""
    return {AttrType.INT: np.int64, AttrType.LONG: np.int64, AttrType.DOUBLE: np.float64,
            AttrType.BOOL: bool}.get(kind, object)
