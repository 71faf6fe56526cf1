"""Tables: the rows a ``define table`` holds and the operations queries run on them.

:class:`Table` is the interface every table kind implements (in memory here; an RDBMS
``@store`` table in :mod:`eddy.runtime.rdbms_table`): ``insert``, ``find``, ``contains``,
``delete``, ``update``, ``update_or_insert`` and ``rows``. Operations take a :class:`Condition` compiled by the caller
and the *matching events* of one chunk: the ``on`` condition and the ``set`` values are
closures over a table context ``(event_data, timestamp, row)``.

:class:`InMemoryTable` reproduces the reference's ``InMemoryTable`` with its two holders:

- without ``@PrimaryKey``/``@Index`` (``ListEventHolder``): rows in insertion order; an
  update evaluates ``set`` values against the row being updated, column by column in
  column order, each seeing the columns assigned before it;
- with them (``IndexEventHolder``): a primary key keeps one row per key (an insert of an
  existing key is dropped, as the reference logs and drops it) and iterates in
  ``HashMap`` order (``TreeMap`` order for a single numeric key). The reference's
  ``IndexOperator`` evaluates ``set`` values *without* the row (it never binds the stored
  event), so a value that reads a column of the table is null there; an update that changes
  an indexed column deletes and re-adds the rows; and ``update or insert`` whose condition
  is exactly an equality on the primary key *overwrites* the row with the selected event,
  ignoring ``set`` (``OverwriteTableIndexOperator``). All three are kept.

Index-only tables iterate in insertion order (the reference iterates a ``HashSet`` of event
objects, an identity order the conformance cases mark unordered).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, ClassVar

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.events import java_compare
from eddy.runtime.javahash import hash_map_capacity, java_hash, java_str, spread

Row = tuple[Any, ...]
TableContext = tuple[Any, Any, Any]
"""``(event_data, timestamp, row)``: what table conditions and ``set`` values read."""
Getter = Callable[[TableContext], Any]

KEY_DELIMITER = ":-:"
_NUMERIC = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)

log = logging.getLogger("eddy.runtime.table")


@dataclass(frozen=True)
class Condition:
    """A compiled ``on`` condition.

    ``test(ctx)`` is true when the row of ``ctx`` matches its event. ``key`` computes the
    primary-key value from a context without a row when the condition is exactly an equality
    on the whole primary key (the reference's primary-key lookup); a table may use it to
    find the row directly, and must still apply ``test``.
    """

    test: Getter
    key: Getter | None = None
    sql: Predicate | None = None
    """A necessary condition a database can evaluate (a superset of the matches, never
    fewer): ``@store`` tables push it down and still apply ``test`` to what it returns."""


@dataclass(frozen=True)
class Compare:
    """``column <op> value``: ``value`` is computed from a table context without a row."""

    column: int
    op: str
    value: Getter


@dataclass(frozen=True)
class Junction:
    """``and``/``or`` of predicates."""

    op: str
    parts: tuple[Predicate, ...]


Predicate = Compare | Junction


ALWAYS = Condition(lambda ctx: True)

Assignment = tuple[int, Getter]
"""``set T.col = value``: the column's position and the value's closure."""

MatchingEvent = tuple[Any, int | None]
"""An event a chunk operates with: its data and its timestamp (None where there is none)."""


class Table(ABC):
    """The operations queries run on a table; implementations hold the rows."""

    external: ClassVar[bool] = False
    """Whether the rows live outside the runtime's snapshot (a ``@store`` database)."""

    def __init__(self, name: str, attributes: Sequence[Attribute]) -> None:
        self.name = name
        self.attributes = tuple(attributes)

    @abstractmethod
    def insert(self, rows: Sequence[Row]) -> None:
        """Adds rows, in order."""

    @abstractmethod
    def find(self, condition: Condition, event: MatchingEvent) -> list[Row]:
        """The rows matching ``event``, in the table's iteration order."""

    def contains(self, condition: Condition, event: MatchingEvent) -> bool:
        """Whether any row matches ``event`` (``expr in T``)."""
        return bool(self.find(condition, event))

    @abstractmethod
    def delete(self, condition: Condition, events: Sequence[MatchingEvent]) -> None:
        """Deletes, for each event in turn, the rows matching it."""

    @abstractmethod
    def update(self, condition: Condition, assignments: Sequence[Assignment],
               events: Sequence[MatchingEvent]) -> None:
        """Updates, for each event in turn, the rows matching it."""

    @abstractmethod
    def update_or_insert(self, condition: Condition, assignments: Sequence[Assignment],
                         events: Sequence[tuple[MatchingEvent, Row]]) -> None:
        """Updates the rows each event matches; the events that matched none are then
        inserted (each given as the row it would add)."""

    @abstractmethod
    def rows(self) -> list[Row]:
        """Every row, in the table's iteration order."""

    @abstractmethod
    def get_state(self) -> Any:
        """The rows as plain picklable data."""

    @abstractmethod
    def set_state(self, state: Any) -> None:
        """Restores :meth:`get_state`'s data."""


def assign_columns(assignments: Sequence[Assignment], event: MatchingEvent,
                   row: list[Any]) -> None:
    """Sets the columns in place, in column order, each value seeing the earlier ones."""
    for position, value in assignments:
        row[position] = value((event[0], event[1], row))


class InMemoryTable(Table):
    """A table held in the group's state; see the module docstring for the semantics."""

    def __init__(self, name: str, attributes: Sequence[Attribute],
                 primary_key: Sequence[int] = (), indexes: Sequence[int] = ()) -> None:
        super().__init__(name, attributes)
        self.primary_key = tuple(primary_key)
        self.indexes = tuple(indexes)
        self.indexed = bool(self.primary_key or self.indexes)
        pk_types = [self.attributes[p].type for p in self.primary_key]
        self.tree_ordered = len(pk_types) == 1 and pk_types[0] in _NUMERIC
        self._floats = {i for i, a in enumerate(self.attributes) if a.type == AttrType.FLOAT}
        # Rows: a list without a primary key; with one, a dict key -> [insertion, row].
        self.list_rows: list[Row] = []
        self.keyed: dict[Any, list[Any]] = {}
        self.inserted = 0
        self.capacity = 16
        self._ordered: list[tuple[Any, Row]] | None = None

    # -- keys and order ----------------------------------------------------------------------
    def key_of(self, row: Sequence[Any]) -> Any:
        """The primary-key value the reference's holder files ``row`` under."""
        if len(self.primary_key) == 1:
            return row[self.primary_key[0]]
        return "".join(java_str(row[p], p in self._floats) + KEY_DELIMITER
                       for p in self.primary_key)

    def rows(self) -> list[Row]:
        if not self.primary_key:
            return list(self.list_rows)
        return [row for _, row in self._entries()]

    def _entries(self) -> list[tuple[Any, Row]]:
        """``(key, row)`` in the key map's iteration order."""
        if self._ordered is None:
            entries = list(self.keyed.items())
            if self.tree_ordered:
                entries.sort(key=cmp_to_key(_compare_keys))
            else:
                mask = self.capacity - 1
                entries.sort(key=lambda e: (spread(java_hash(e[0])) & mask, e[1][0]))
            self._ordered = [(key, entry[1]) for key, entry in entries]
        return self._ordered

    def _changed(self) -> None:
        self._ordered = None

    # -- adding ------------------------------------------------------------------------------
    def insert(self, rows: Sequence[Row]) -> None:
        for row in rows:
            self._add(tuple(row))

    def _add(self, row: Row) -> None:
        if not self.primary_key:
            self.list_rows.append(row)
            return
        key = self.key_of(row)
        if key in self.keyed or (key is None and self.tree_ordered):
            log.error("table '%s' drops %s: a row with primary key %r is stored already",
                      self.name, list(row), key)
            return
        self._put(key, row)

    def _put(self, key: Any, row: Row) -> None:
        entry = self.keyed.get(key)
        if entry is not None:
            entry[1] = row  # HashMap.put keeps the node where it is
        else:
            self.keyed[key] = [self.inserted, row]
            self.inserted += 1
            self.capacity = hash_map_capacity(len(self.keyed), self.capacity)
        self._changed()

    # -- finding -----------------------------------------------------------------------------
    def find(self, condition: Condition, event: MatchingEvent) -> list[Row]:
        return [row for _, row in self._matches(condition, event)]

    def contains(self, condition: Condition, event: MatchingEvent) -> bool:
        data, ts = event
        test = condition.test
        if condition.key is not None and self.primary_key:
            return bool(self._matches(condition, event))
        return any(test((data, ts, row)) for row in self._scan())

    def _scan(self) -> Iterable[Row]:
        if not self.primary_key:
            return self.list_rows
        return (row for _, row in self._entries())

    def _matches(self, condition: Condition, event: MatchingEvent) -> list[tuple[Any, Row]]:
        """``(locator, row)`` of the rows ``event`` matches, in iteration order; the locator is
        the row's list index, or its key when the table has a primary key."""
        data, ts = event
        test = condition.test
        if not self.primary_key:
            return [(i, row) for i, row in enumerate(self.list_rows) if test((data, ts, row))]
        if condition.key is not None:
            key = condition.key((data, ts, None))
            entry = self.keyed.get(key) if _hashable(key) else None
            if entry is None or not test((data, ts, entry[1])):
                return []
            return [(key, entry[1])]
        return [(key, row) for key, row in self._entries() if test((data, ts, row))]

    # -- deleting ----------------------------------------------------------------------------
    def delete(self, condition: Condition, events: Sequence[MatchingEvent]) -> None:
        for event in events:
            self._remove([locator for locator, _ in self._matches(condition, event)])

    def _remove(self, locators: list[Any]) -> None:
        if not locators:
            return
        if not self.primary_key:
            doomed = set(locators)
            self.list_rows = [r for i, r in enumerate(self.list_rows) if i not in doomed]
            return
        for key in locators:
            del self.keyed[key]
        self._changed()

    # -- updating ----------------------------------------------------------------------------
    def update(self, condition: Condition, assignments: Sequence[Assignment],
               events: Sequence[MatchingEvent]) -> None:
        for event in events:
            self._update_one(condition, assignments, event)

    def _update_one(self, condition: Condition, assignments: Sequence[Assignment],
                    event: MatchingEvent) -> bool:
        """Updates the rows ``event`` matches; whether there were any."""
        found = self._matches(condition, event)
        if not found:
            return False
        if self.indexed:
            self._update_indexed(assignments, event, found)
            return True
        for i, row in found:
            values = list(row)
            assign_columns(assignments, event, values)
            self.list_rows[i] = tuple(values)
        return True

    def _update_indexed(self, assignments: Sequence[Assignment], event: MatchingEvent,
                        found: list[tuple[Any, Row]]) -> None:
        """``IndexOperator.update``: values computed without the row; a changed indexed
        column turns the update into delete and re-add (refused if a primary key clashes)."""
        data, ts = event
        values = [(position, value((data, ts, None))) for position, value in assignments]
        single_key = self.primary_key[0] if len(self.primary_key) == 1 else None
        indexed = set(self.indexes) | ({single_key} if single_key is not None else set())
        delete_update = False
        for position, value in values:
            if position not in indexed:
                continue
            keys = set(self.keyed) if position == single_key else None
            for _, row in found:
                stored = row[position]
                if value is None or stored is None or value == stored:
                    continue
                delete_update = True
                if not keys:
                    break
                keys.discard(stored)
                if value in keys:
                    log.error("table '%s': update refused, a row with primary key %r is "
                              "stored already", self.name, value)
                    return
                keys.add(value)
            if delete_update:
                break
        updated = []
        for _, row in found:
            new = list(row)
            for position, value in values:
                new[position] = value
            updated.append(tuple(new))
        if delete_update:
            self._remove([locator for locator, _ in found])
            self.insert(updated)
            return
        for (locator, _), row in zip(found, updated):
            if self.primary_key:
                self.keyed[locator][1] = row  # the row keeps its place and its old key
            else:
                self.list_rows[locator] = row
        self._changed()

    def update_or_insert(self, condition: Condition, assignments: Sequence[Assignment],
                         events: Sequence[tuple[MatchingEvent, Row]]) -> None:
        if self.primary_key and condition.key is not None:
            for _, row in events:  # OverwriteTableIndexOperator: the event replaces the row
                self._put(self.key_of(row), tuple(row))
            return
        failed = [(event, row) for event, row in events
                  if not self._update_one(condition, assignments, event)]
        if failed:
            self.insert(_reduce_inserts(condition, assignments, failed))

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> Any:
        if not self.primary_key:
            return {"rows": list(self.list_rows)}
        return {"keyed": [(key, entry[0], entry[1]) for key, entry in self.keyed.items()],
                "inserted": self.inserted, "capacity": self.capacity}

    def set_state(self, state: Any) -> None:
        if not self.primary_key:
            self.list_rows = list(state["rows"])
            return
        self.keyed = {key: [inserted, row] for key, inserted, row in state["keyed"]}
        self.inserted = state["inserted"]
        self.capacity = state["capacity"]
        self._changed()


def _compare_keys(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
    """``TreeMap`` order of numeric primary keys."""
    return java_compare(a[0], b[0])


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _reduce_inserts(condition: Condition, assignments: Sequence[Assignment],
                    failed: Sequence[tuple[MatchingEvent, Row]]) -> list[Row]:
    """``reduceEventsForUpdateOrInsert``: a failed event that matches a row already waiting
    to be inserted updates that row (seen by ``set``) instead of adding its own."""
    pending: list[list[Any]] = []
    for event, row in failed:
        data, ts = event
        updated = False
        for waiting in pending:
            if condition.test((data, ts, waiting)):
                assign_columns(assignments, event, waiting)
                updated = True
        if not updated:
            pending.append(list(row))
    return [tuple(row) for row in pending]


def table_keys(definition: ast.TableDefinition,
               attributes: Sequence[Attribute]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The positions of a table's ``@PrimaryKey`` attributes and of its ``@Index`` ones."""
    positions = {a.name: i for i, a in enumerate(attributes)}
    primary: list[int] = []
    indexes: list[int] = []
    for annotation in definition.annotations:
        names = [e.value.strip() for e in annotation.elements]
        if annotation.is_named("primaryKey") and not primary:
            primary = [positions[n] for n in names if n in positions]
        elif annotation.is_named("index"):
            indexes += [positions[n] for n in names if n in positions]
    return tuple(primary), tuple(indexes)


TableFactory = Callable[[AnalyzedApp, ast.TableDefinition, Sequence[Attribute], ast.Annotation],
                        Table]


def _rdbms_table(analyzed: AnalyzedApp, definition: ast.TableDefinition,
                 attributes: Sequence[Attribute], store: ast.Annotation) -> Table:
    # imported on use: only apps with @store tables load SQLAlchemy and a driver
    from eddy.runtime.rdbms_table import rdbms_table

    return rdbms_table(analyzed, definition, attributes, store)


STORE_TYPES: dict[str, TableFactory] = {"rdbms": _rdbms_table}
"""``@store(type=…)`` → the factory of its tables (``inMemory`` or no ``@store``: in memory)."""


def build_tables(analyzed: AnalyzedApp) -> dict[str, Table]:
    """A table for every ``define table`` of the app: in memory, or in the store its
    ``@store(type=…)`` names (an unknown type is an app error at the annotation)."""
    tables: dict[str, Table] = {}
    for name, info in analyzed.streams.items():
        definition = info.definition
        if info.kind != "table" or not isinstance(definition, ast.TableDefinition):
            continue
        store = ast.find_annotation(definition.annotations, "store")
        kind = (store.get("type") or "").lower() if store is not None else ""
        if store is not None and kind not in ("", "inmemory"):
            factory = STORE_TYPES.get(kind)
            if factory is None:
                raise _app_error(analyzed, store, f"table '{name}': @store type "
                                 f"'{store.get('type')}' is not supported (eddy supports "
                                 f"{', '.join(sorted(STORE_TYPES))} and inMemory)")
            tables[name] = factory(analyzed, definition, info.attributes, store)
            continue
        primary, indexes = table_keys(definition, info.attributes)
        tables[name] = InMemoryTable(name, info.attributes, primary, indexes)
    return tables


def _app_error(analyzed: AnalyzedApp, node: ast.Node, message: str) -> Exception:
    from eddy.lang.errors import AppIssue, SiddhiAppError

    return SiddhiAppError([AppIssue("semantic", message, node.span)], analyzed.source,
                          analyzed.filename)


__all__ = ["ALWAYS", "STORE_TYPES", "Assignment", "Compare", "Condition", "Getter", "Junction",
           "Predicate", "assign_columns", "InMemoryTable", "MatchingEvent",
           "Row", "Table", "TableContext", "TableFactory", "build_tables", "table_keys"]
