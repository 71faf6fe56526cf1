"""Checks shared by every query that writes into a table, streaming or on-demand.

A streaming ``insert into``/``update``/``update or insert`` and the same operations sent as
on-demand queries must accept and reject exactly the same writes with the same words, so
both analysers call these.
"""

from __future__ import annotations

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.errors import Span
from eddy.lang.scope import Scope, SemanticError, schema_text
from eddy.lang.semantic import StreamInfo
from eddy.lang.typecheck import ExpressionTyper


def assignable(value: AttrType, column: AttrType) -> bool:
    """Whether a value of type ``value`` may be stored in a column of type ``column``."""
    return value == column or AttrType.OBJECT in (value, column)


def settable(value: AttrType, column: AttrType) -> bool:
    """Whether ``set column = value`` is accepted: Siddhi does not check the type of a
    ``set`` (``compileUpdateSet``), so a number may go into any numeric column (``set price
    = 100`` on a FLOAT column); other types must match."""
    return assignable(value, column) or (value.is_numeric and column.is_numeric)


def check_insert_compatible(target: StreamInfo, outputs: tuple[Attribute, ...],
                            span: Span) -> None:
    """Rejects a write whose selected values do not line up with ``target``'s columns."""
    have = [a.type for a in target.attributes]
    got = [a.type for a in outputs]
    if len(have) != len(got) or any(not assignable(g, h) for g, h in zip(got, have)):
        raise SemanticError(
            f"this query writes {schema_text(outputs)} into {target.kind} '{target.name}', "
            f"which holds {schema_text(target.attributes)}", span,
            "select one value per column, in order, with the column's type")


def check_assignments(typer: ExpressionTyper, table: StreamInfo,
                      assignments: tuple[ast.SetAssignment, ...], scope: Scope) -> None:
    """Rejects a ``set`` that assigns something other than a column of ``table``, or a value
    of the wrong type."""
    for assignment in assignments:
        column = next((a for a in table.attributes
                       if a.name == assignment.variable.attribute), None)
        if column is None:
            raise SemanticError(
                f"'set' assigns columns of '{table.name}', and "
                f"'{assignment.variable.attribute}' is not one of them",
                assignment.variable.span, f"the columns are {schema_text(table.attributes)}")
        value = typer.infer(assignment.value, scope)
        if not settable(value, column.type):
            raise SemanticError(f"column '{column.name}' is {column.type.value}, "
                                f"but the value is {value.value}", assignment.span)
