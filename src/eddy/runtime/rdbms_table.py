"""``@store(type='rdbms')`` tables: the runtime's :class:`~eddy.runtime.table.Table`
over a real database through SQLAlchemy Core.

``@store(type='rdbms', jdbc.url=…, username=…, password=…, datasource=…, table.name=…,
field.length=…)`` takes WSO2's parameters unchanged (:mod:`eddy.store.connect` maps them to
a pooled engine; :mod:`eddy.store.table_schema` creates or checks the table).
A ``datasource`` names a ``wso2.datasources`` entry of the node (exported to Spark's workers
as :data:`eddy.store.aggregation_settings.DATASOURCES_ENV`). ``jdbc.driver.name`` is
accepted and ignored: eddy talks to the database through Python
drivers (PyMySQL, psycopg, sqlite3), never a JDBC driver class.

The rows live in the database, not in the runtime's snapshot (``get_state`` is None), so
the operator's state holds no engine or connection. Operations run in the micro-batch's
transaction (:mod:`eddy.runtime.stored_batch`), which also makes a replayed micro-batch harmless.
Within a batch, inserts and primary-key overwrites wait until the table is next read or
otherwise written (or the batch ends) and then go as one multi-row statement: a database
round trip per event is what limits a ``@store`` table (``bench/rdbms_table.py``).

How an operation finds its rows: the ``on`` condition's :attr:`Condition.sql` — the
comparisons of columns with event values under ``and``/``or`` — becomes the ``WHERE`` of a
``SELECT``; the compiled Python test then filters what comes back (the database may return
more, never fewer). A delete or update then deletes exactly those candidates by the same
``WHERE`` and re-inserts the ones the test rejected together with the updated rows, which
needs no row identity (a table without a primary key has none in SQL). With a primary-key
equality or a selective pushed condition that touches a few rows; a condition nothing of
which can be pushed scans the table.

Semantics, where the reference defines them, are the in-memory table's:

- an insert whose primary key is stored already is logged and dropped (the in-memory
  table's behaviour; the reference's RDBMS store fails the whole batch instead);
- ``set`` values see the row being updated, column by column, each value seeing the columns
  assigned before it (as the reference's SQL ``UPDATE … SET`` on MySQL, and its list-backed
  in-memory table); an update that would give two rows one primary key is refused and
  logged, as in memory;
- ``update or insert`` on exactly the primary key overwrites the row with the event; else
  each event updates the rows it matches or, matching none, is inserted, event by event;
- rows come back in the database's order (the reference's RDBMS store does not sort);
  FLOAT columns read back as single-precision values, as the runtime holds them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlalchemy import Engine, Table, and_, delete, insert, or_, select, tuple_
from sqlalchemy.sql.elements import ColumnElement as Clause

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.events import to_float32
from eddy.runtime.stored_batch import Batch, connection, current_batch
from eddy.runtime.table import (
    Assignment,
    Compare,
    Condition,
    MatchingEvent,
    Predicate,
    Row,
    assign_columns,
    table_keys,
)
from eddy.runtime.table import (
    Table as RuntimeTable,
)
from eddy.store.connect import StoreError, connect, store_url
from eddy.store.table_schema import (
    TableOptions,
    TableSchemaError,
    ensure_table,
    parse_field_lengths,
)

log = logging.getLogger("eddy.runtime.rdbms_table")

_OPS = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__",
        ">=": "__ge__"}
_PYTHON_TYPES: dict[AttrType, tuple[type, ...]] = {
    AttrType.STRING: (str,), AttrType.INT: (int,), AttrType.LONG: (int,),
    AttrType.DOUBLE: (int, float), AttrType.BOOL: (bool,)}


class RdbmsTable(RuntimeTable):
    """A table whose rows are in a database; see the module docstring."""

    external = True

    def __init__(self, name: str, attributes: Sequence[Attribute], url: str,
                 options: TableOptions, primary_key: Sequence[int] = (),
                 indexes: Sequence[int] = ()) -> None:
        super().__init__(name, attributes)
        self.url = url
        self.options = options
        self.primary_key = tuple(primary_key)
        self.indexes = tuple(indexes)
        self._floats = [i for i, a in enumerate(self.attributes) if a.type is AttrType.FLOAT]
        self._table: Table | None = None
        self._pending: list[tuple[bool, Row]] = []  # (overwrite?, row), see _defer
        self._pending_batch: Batch | None = None

    # -- the database table ------------------------------------------------------------------
    @property
    def engine(self) -> Engine:
        """The process's pooled engine for the table's database."""
        return connect(self.url)

    def ensure(self) -> Table:
        """The database table, created on first use when it does not exist."""
        if self._table is None:
            self._table = ensure_table(self.engine, self.options, self.attributes,
                                       self.primary_key, self.indexes)
        return self._table

    def _columns(self) -> list[Any]:
        table = self.ensure()
        return [table.c[a.name] for a in self.attributes]

    def _from_db(self, values: Iterable[Any]) -> Row:
        row = list(values)
        for position in self._floats:
            if row[position] is not None:
                row[position] = to_float32(row[position])
        return tuple(row)

    def _params(self, row: Sequence[Any]) -> dict[str, Any]:
        return {a.name: value for a, value in zip(self.attributes, row)}

    # -- conditions --------------------------------------------------------------------------
    def _where(self, condition: Condition, event: MatchingEvent) -> Clause[bool] | None:
        """The pushed-down part of ``condition`` for ``event``, or None (every row)."""
        if condition.sql is None:
            return None
        return self._clause(condition.sql, (event[0], event[1], None))

    def _clause(self, predicate: Predicate, ctx: Any) -> Clause[bool] | None:
        if isinstance(predicate, Compare):
            value = predicate.value(ctx)
            allowed = _PYTHON_TYPES.get(self.attributes[predicate.column].type)
            if value is None or allowed is None or not isinstance(value, allowed) \
                    or (isinstance(value, bool) and bool not in allowed):
                return None  # let the Python test decide: SQL would compare otherwise
            column = self.ensure().c[self.attributes[predicate.column].name]
            clause: Clause[bool] = getattr(column, _OPS[predicate.op])(value)
            return clause
        parts = [self._clause(p, ctx) for p in predicate.parts]
        if predicate.op == "or":
            return None if any(p is None for p in parts) else or_(*parts)  # type: ignore[arg-type]
        kept = [p for p in parts if p is not None]
        return and_(*kept) if kept else None

    def _candidates(self, conn: Any, where: Clause[bool] | None) -> list[Row]:
        statement = select(*self._columns())
        if where is not None:
            statement = statement.where(where)
        return [self._from_db(r) for r in conn.execute(statement)]

    def _split(self, condition: Condition, event: MatchingEvent,
               candidates: list[Row]) -> tuple[list[Row], list[Row]]:
        """``(matched, rejected)`` candidates by the compiled test."""
        data, ts = event
        matched: list[Row] = []
        rejected: list[Row] = []
        for row in candidates:
            (matched if condition.test((data, ts, row)) else rejected).append(row)
        return matched, rejected

    # -- reading -----------------------------------------------------------------------------
    def find(self, condition: Condition, event: MatchingEvent) -> list[Row]:
        self.flush()
        with connection(self.engine, write=False) as conn:
            candidates = self._candidates(conn, self._where(condition, event))
        return self._split(condition, event, candidates)[0]

    def rows(self) -> list[Row]:
        self.flush()
        with connection(self.engine, write=False) as conn:
            return self._candidates(conn, None)

    # -- writing -----------------------------------------------------------------------------
    def insert(self, rows: Sequence[Row]) -> None:
        """Adds rows; inside a micro-batch they wait (see :meth:`_defer`)."""
        if rows and not self._defer(False, rows):
            with connection(self.engine, write=True) as conn:
                self._insert(conn, [tuple(r) for r in rows])

    def _defer(self, overwrite: bool, rows: Sequence[Row]) -> bool:
        """Queues inserts (or primary-key overwrites) when a micro-batch runs: they wait, in
        order, for the table's next read or other write, or the batch's end, and then go to
        the database a run of the same kind at a time, one statement or two per run instead
        of per event. False outside a batch."""
        batch = current_batch()
        if batch is None:
            return False
        if self._pending_batch is not batch:  # a failed batch's rows are not carried on
            self._pending, self._pending_batch = [], batch
        self._pending += [(overwrite, tuple(r)) for r in rows]
        batch.defer(self.flush)
        return True

    def flush(self) -> None:
        """Writes the inserts and overwrites waiting in the micro-batch."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if self._pending_batch is not current_batch():
            return  # left by a batch that failed: rolled back with it
        with connection(self.engine, write=True) as conn:
            for overwrite, run in groupby(pending, key=itemgetter(0)):
                rows = [row for _, row in run]
                if overwrite:
                    self._overwrite(conn, rows)
                else:
                    self._insert(conn, rows)

    def _overwrite(self, conn: Any, rows: list[Row]) -> None:
        """Stores each row in place of the row with its primary key (the last row of a key
        wins, as when they are written one after another)."""
        latest = {self._key(row): row for row in rows}
        keys = [k for k in latest if None not in k]
        columns = [self.ensure().c[self.attributes[p].name] for p in self.primary_key]
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            conn.execute(delete(self.ensure()).where(
                columns[0].in_([k[0] for k in chunk]) if len(columns) == 1
                else tuple_(*columns).in_(chunk)))
        self._insert(conn, [latest[k] for k in keys], unique=True)
        for key in latest.keys() - set(keys):
            log.error("table '%s' drops %s: primary key %r is null", self.name,
                      list(latest[key]), key)

    def _insert(self, conn: Any, rows: list[Row], unique: bool = False) -> None:
        """Inserts ``rows``; unless they are known ``unique``, a primary key stored already
        (or repeated) drops its row."""
        if self.primary_key and not unique:
            rows = self._unique(conn, rows)
        if rows:
            conn.execute(insert(self.ensure()), [self._params(r) for r in rows])

    def _key(self, row: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(row[p] for p in self.primary_key)

    def _stored_keys(self, conn: Any, keys: Iterable[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
        wanted = [k for k in dict.fromkeys(keys) if None not in k]
        if not wanted:
            return set()
        columns = [self.ensure().c[self.attributes[p].name] for p in self.primary_key]
        found: set[tuple[Any, ...]] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            where = (columns[0].in_([k[0] for k in chunk]) if len(columns) == 1
                     else tuple_(*columns).in_(chunk))
            found.update(tuple(r) for r in conn.execute(select(*columns).where(where)))
        return found

    def _unique(self, conn: Any, rows: list[Row]) -> list[Row]:
        """``rows`` without those whose primary key is stored or came earlier (logged)."""
        seen = self._stored_keys(conn, (self._key(r) for r in rows))
        kept: list[Row] = []
        for row in rows:
            key = self._key(row)
            if key in seen or None in key:
                log.error("table '%s' drops %s: a row with primary key %r is stored already"
                          if None not in key else "table '%s' drops %s: primary key %r is null",
                          self.name, list(row), key)
                continue
            seen.add(key)
            kept.append(row)
        return kept

    def _replace(self, conn: Any, where: Clause[bool] | None, rows: list[Row]) -> None:
        """Deletes the candidates of ``where`` and inserts ``rows`` in their place."""
        statement = delete(self.ensure())
        if where is not None:
            statement = statement.where(where)
        conn.execute(statement)
        if rows:
            conn.execute(insert(self.ensure()), [self._params(r) for r in rows])

    def delete(self, condition: Condition, events: Sequence[MatchingEvent]) -> None:
        self.flush()
        with connection(self.engine, write=True) as conn:
            for event in events:
                where = self._where(condition, event)
                matched, rejected = self._split(condition, event,
                                                self._candidates(conn, where))
                if matched:
                    self._replace(conn, where, rejected)

    def update(self, condition: Condition, assignments: Sequence[Assignment],
               events: Sequence[MatchingEvent]) -> None:
        self.flush()
        with connection(self.engine, write=True) as conn:
            for event in events:
                self._update_one(conn, condition, assignments, event)

    def _update_one(self, conn: Any, condition: Condition, assignments: Sequence[Assignment],
                    event: MatchingEvent) -> bool:
        """Updates the rows ``event`` matches; whether there were any."""
        where = self._where(condition, event)
        matched, rejected = self._split(condition, event, self._candidates(conn, where))
        if not matched:
            return False
        updated: list[Row] = []
        for row in matched:
            values = list(row)
            assign_columns(assignments, event, values)
            updated.append(tuple(values))
        if self.primary_key and self._clashes(conn, matched, rejected, updated):
            log.error("table '%s': update refused, it would store two rows with one primary "
                      "key", self.name)
            return True
        self._replace(conn, where, rejected + updated)
        return True

    def _clashes(self, conn: Any, matched: list[Row], rejected: list[Row],
                 updated: list[Row]) -> bool:
        new = [self._key(r) for r in updated]
        if len(set(new)) < len(new):
            return True
        old = {self._key(r) for r in matched}
        kept = {self._key(r) for r in rejected}
        return bool((self._stored_keys(conn, new) - old) | (set(new) & kept))

    def update_or_insert(self, condition: Condition, assignments: Sequence[Assignment],
                         events: Sequence[tuple[MatchingEvent, Row]]) -> None:
        if self.primary_key and condition.key is not None:
            rows = [row for _, row in events]  # the reference overwrites the row with the event
            if not self._defer(True, rows):
                with connection(self.engine, write=True) as conn:
                    self._overwrite(conn, [tuple(r) for r in rows])
            return
        self.flush()
        with connection(self.engine, write=True) as conn:
            for event, row in events:
                if not self._update_one(conn, condition, assignments, event):
                    self._insert(conn, [tuple(row)])

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> Any:
        """Nothing: the rows are in the database (never an engine or a connection)."""
        return None

    def set_state(self, state: Any) -> None:
        """Nothing to restore: the database holds the rows (see :mod:`.table_batch`); inserts
        still waiting from a batch that did not finish are dropped with it."""
        self._pending, self._pending_batch = [], None


def store_options(store: ast.Annotation) -> dict[str, str]:
    """The ``@store`` annotation's elements, keys lower-cased."""
    return {e.key.lower(): e.value for e in store.elements if e.key is not None}


def rdbms_table(analyzed: AnalyzedApp, definition: ast.TableDefinition,
                attributes: Sequence[Attribute], store: ast.Annotation) -> RdbmsTable:
    """The :class:`RdbmsTable` of ``define table`` with ``@store(type='rdbms', …)``; a
    setting that cannot work is an app error at the annotation."""
    from eddy.lang.errors import AppIssue, SiddhiAppError

    from eddy.store.aggregation_settings import node_settings  # the node's datasources

    options = store_options(store)
    try:
        url = store_url(options, node_settings().datasources if "datasource" in options
                        else None)
        lengths = parse_field_lengths(options.get("field.length"), attributes)
    except (StoreError, TableSchemaError) as error:
        raise SiddhiAppError([AppIssue("semantic", f"table '{definition.name}': {error}",
                                       store.span)], analyzed.source,
                             analyzed.filename) from None
    primary, indexes = table_keys(definition, attributes)
    table_options = TableOptions(options.get("table.name") or definition.name, lengths)
    return RdbmsTable(definition.name, attributes, url, table_options, primary, indexes)


__all__ = ["RdbmsTable", "rdbms_table", "store_options"]
