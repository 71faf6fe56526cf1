"""Compiling what queries do with tables: ``on`` conditions, ``set`` assignments, the output
callbacks of ``insert into``/``delete``/``update``/``update or insert into`` a table, and
``expr in T``.

A table expression runs over a *table context* ``(event_data, timestamp, row)`` (see
:mod:`.table`): the event is what the query selected (its output attributes), the row a
table row, or None where the reference reads a row it never bound (an indexed table's
``set`` values), so a column read there is null.

``set`` assignments are applied in column order (the reference keeps them in a
``HashMap<Integer, …>``); a query without ``set`` assigns every selected attribute to the
column of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.scope import Scope, SemanticError, Source
from eddy.lang.walk import walk_expression
from eddy.runtime.context import Path
from eddy.runtime.events import Event
from eddy.runtime.expressions import CompileError, ExpressionCompiler, Getter, TypeOf
from eddy.runtime.javahash import java_str
from eddy.runtime.table import (
    ALWAYS,
    Assignment,
    Compare,
    Condition,
    Junction,
    Predicate,
    Table,
)

Resolve = Callable[[ast.Variable], Getter]


class TableExpressionCompiler(ExpressionCompiler):
    """An :class:`ExpressionCompiler` that also compiles ``expr in T`` against the group's
    tables."""

    def __init__(self, *args: Any, tables: Mapping[str, Table], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tables = tables

    def _override(self, expr: ast.Expression, resolve: Resolve,
                  per_group: bool = True) -> Getter | None:
        if isinstance(expr, ast.In):
            return self._in(expr, resolve)
        return super()._override(expr, resolve, per_group)

    def _in(self, expr: ast.In, outer: Resolve) -> Getter:
        table = self.tables.get(expr.source)
        if table is None:
            raise CompileError(f"'in {expr.source}': no such table")
        columns = {a.name: i for i, a in enumerate(table.attributes)}

        def column_of(var: ast.Variable) -> int | None:
            if var.stream == table.name:
                return columns[var.attribute]
            try:
                outer(var)
            except (SemanticError, KeyError, ValueError, CompileError):
                if var.stream is None and var.attribute in columns:
                    return columns[var.attribute]
                raise
            return None

        def resolve(var: ast.Variable) -> Getter:
            column = column_of(var)
            if column is not None:
                return row_getter(column)
            getter = outer(var)
            return lambda ctx: getter(ctx[0])

        test = self.compile(expr.expression, condition=True, resolve=resolve)
        sql = pushdown(expr.expression, column_of,
                       lambda value: self.compile(value, resolve=resolve), table)
        condition = Condition(test, sql=sql)
        return lambda ctx: table.contains(condition, (ctx, None))


def table_compiler(tables: Mapping[str, Table]) -> Callable[..., ExpressionCompiler]:
    """A factory of expression compilers that know ``tables`` (for ``in T``)."""

    def make(*args: Any, **kwargs: Any) -> ExpressionCompiler:
        return TableExpressionCompiler(*args, tables=tables, **kwargs)

    return make


def row_getter(position: int) -> Getter:
    """Reads column ``position`` of a table context's row (null without a row)."""
    def get(ctx: Any) -> Any:
        row = ctx[2]
        return None if row is None else row[position]
    return get


def event_getter(position: int) -> Getter:
    """Reads attribute ``position`` of a table context's event."""
    def get(ctx: Any) -> Any:
        return ctx[0][position]
    return get


class TableExpressions:
    """Compiles the ``on`` and ``set`` of one table operation.

    ``scope`` is what they see (the table and, for an output, the selected attributes);
    ``event_position`` maps a resolved non-table variable to its place in the event data.
    """

    def __init__(self, table: Table, scope: Scope, compiler: ExpressionCompiler,
                 event_position: Callable[[ast.Variable], int], type_of: TypeOf) -> None:
        self.table = table
        self.scope = scope
        self.compiler = compiler
        self.event_position = event_position
        self.type_of = type_of
        self.columns = {a.name: i for i, a in enumerate(table.attributes)}

    def column_of(self, var: ast.Variable) -> int | None:
        """The table column ``var`` names, or None when it names something else."""
        resolved = self.scope.resolve(var)
        if resolved.source.kind == "table" and resolved.source.stream == self.table.name:
            return self.columns[resolved.attribute.name]
        return None

    def resolve(self, var: ast.Variable) -> Getter:
        column = self.column_of(var)
        if column is not None:
            return row_getter(column)
        return event_getter(self.event_position(var))

    def compile(self, expr: ast.Expression, condition: bool = False) -> Getter:
        return self.compiler.compile(expr, condition=condition, resolve=self.resolve)

    def condition(self, on: ast.Expression | None,
                  primary_key: Sequence[int] = ()) -> Condition:
        """The compiled ``on`` (always true when absent), with its primary-key lookup when
        it is exactly an equality on every primary-key column."""
        if on is None:
            return ALWAYS
        return Condition(self.compile(on, condition=True), self._key(on, primary_key),
                         pushdown(on, self.column_of, self.compile, self.table))

    def _key(self, on: ast.Expression, primary_key: Sequence[int]) -> Getter | None:
        if not primary_key:
            return None
        conjuncts = list(_conjuncts(on))
        values: dict[int, ast.Expression] = {}
        for part in conjuncts:
            if not (isinstance(part, ast.BinaryOperation) and part.op == "=="):
                return None
            found = self._column_compare(part)
            if found is None or found[0] in values:
                return None
            values[found[0]] = found[1]
        if sorted(values) != sorted(primary_key) or len(conjuncts) != len(primary_key):
            return None
        if len(primary_key) == 1:
            return self.compile(values[primary_key[0]])
        parts = [(self.compile(values[p]), self.type_of(values[p]) == AttrType.FLOAT)
                 for p in primary_key]
        return lambda ctx: "".join(java_str(get(ctx), single) + ":-:" for get, single in parts)

    def _column_compare(self, compare: ast.BinaryOperation) -> tuple[int, ast.Expression] | None:
        """``(column, value)`` when one side is a table column and the other reads none."""
        for side, other in ((compare.left, compare.right), (compare.right, compare.left)):
            if isinstance(side, ast.Variable):
                column = self.column_of(side)
                if column is not None and not self._reads_table(other):
                    return column, other
        return None

    def _reads_table(self, expr: ast.Expression) -> bool:
        return any(isinstance(e, ast.Variable) and self.column_of(e) is not None
                   for e in walk_expression(expr))

    def assignments(self, assignments: Sequence[ast.SetAssignment] | None,
                    outputs: Sequence[Attribute]) -> list[Assignment]:
        """The ``set`` clause in column order; without one, each selected attribute goes to
        the column of its name."""
        compiled: dict[int, Getter] = {}
        if assignments is None:
            for i, attribute in enumerate(outputs):
                if attribute.name in self.columns:
                    compiled[self.columns[attribute.name]] = event_getter(i)
        else:
            for assignment in assignments:
                column = self.column_of(assignment.variable)
                if column is None:
                    raise CompileError(f"'set {assignment.variable.attribute}' is not a column "
                                       f"of table '{self.table.name}'")
                compiled[column] = self.compile(assignment.value)
        return sorted(compiled.items())


_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def pushdown(expr: ast.Expression, column_of: Callable[[ast.Variable], int | None],
             compile_value: Callable[[ast.Expression], Getter],
             table: Table) -> Predicate | None:
    """The part of an ``on`` condition a database can evaluate, or None (no restriction).

    Comparisons of a column with a value that reads no column, under ``and``/``or``, are
    kept; any other conjunct of an ``and`` is dropped (the database then returns more rows,
    which the compiled test filters), and an ``or`` with such a branch is dropped whole.
    ``not`` is never pushed: SQL's three-valued ``NOT`` differs from Siddhi's null-is-false
    comparisons. FLOAT columns are not pushed either: their single-precision values do not
    compare exactly with double parameters in every database.
    """
    if isinstance(expr, ast.BinaryOperation) and expr.op in ("and", "or"):
        left = pushdown(expr.left, column_of, compile_value, table)
        right = pushdown(expr.right, column_of, compile_value, table)
        if expr.op == "or":
            return None if left is None or right is None else Junction("or", (left, right))
        parts = tuple(p for p in (left, right) if p is not None)
        return parts[0] if len(parts) == 1 else Junction("and", parts) if parts else None
    if not (isinstance(expr, ast.BinaryOperation) and expr.op in _FLIPPED):
        return None
    for side, other, op in ((expr.left, expr.right, expr.op),
                            (expr.right, expr.left, _FLIPPED[expr.op])):
        if not isinstance(side, ast.Variable):
            continue
        column = column_of(side)
        if column is None or table.attributes[column].type in (AttrType.FLOAT,
                                                                 AttrType.OBJECT):
            continue
        if any(isinstance(e, ast.Variable) and column_of(e) is not None
               for e in walk_expression(other)):
            return None
        return Compare(column, op, compile_value(other))
    return None


def _conjuncts(expr: ast.Expression) -> list[ast.Expression]:
    if isinstance(expr, ast.BinaryOperation) and expr.op == "and":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


class TableOutput:
    """A query's output callback into a table: what ``insert into``, ``delete``, ``update``
    and ``update or insert into`` do with each emitted chunk."""

    def __init__(self, table: Table, output: ast.OutputStream, condition: Condition,
                 assignments: Sequence[Assignment]) -> None:
        self.table = table
        self.kind = type(output).__name__
        self.condition = condition
        self.assignments = list(assignments)

    def receive(self, chunk: list[Event], path: Path) -> None:
        """A published chunk (every event current)."""
        self.apply([(e[2], e[1]) for e in chunk])

    def apply(self, events: Sequence[tuple[Any, int]]) -> None:
        """Runs the operation with ``(data, timestamp)`` events, as one chunk."""
        table = self.table
        if self.kind == "InsertIntoStream":
            table.insert([data for data, _ in events])
        elif self.kind == "DeleteStream":
            table.delete(self.condition, events)
        elif self.kind == "UpdateStream":
            table.update(self.condition, self.assignments, events)
        else:
            table.update_or_insert(self.condition, self.assignments,
                                   [(event, event[0]) for event in events])


def table_output(table: Table, output: ast.OutputStream, outputs: Sequence[Attribute],
                 compiler: ExpressionCompiler, type_of: TypeOf) -> TableOutput:
    """The callback for a query writing ``outputs`` into ``table`` through ``output``."""
    if isinstance(output, ast.InsertIntoStream):
        return TableOutput(table, output, ALWAYS, [])
    assert isinstance(output, (ast.DeleteStream, ast.UpdateStream, ast.UpdateOrInsertStream))
    source_scope = Scope((_table_source(table),), outputs=tuple(outputs))
    positions = {a.name: i for i, a in enumerate(outputs)}

    def event_position(var: ast.Variable) -> int:
        resolved = source_scope.resolve(var)
        return positions[resolved.attribute.name]

    expressions = TableExpressions(table, source_scope, compiler, event_position, type_of)
    primary_key = getattr(table, "primary_key", ())
    condition = expressions.condition(output.on, primary_key)
    assignments: list[Assignment] = []
    if isinstance(output, (ast.UpdateStream, ast.UpdateOrInsertStream)):
        assignments = expressions.assignments(output.set, outputs)
    return TableOutput(table, output, condition, assignments)


def _table_source(table: Table) -> Source:
    return Source(table.name, "table", table.attributes, frozenset({table.name}))


__all__ = ["TableExpressionCompiler", "TableExpressions", "TableOutput", "event_getter",
           "pushdown", "row_getter", "table_compiler", "table_output"]
