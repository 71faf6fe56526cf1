"""The RDBMS tables of an incremental aggregation, named and laid out as WSO2 does (digest §4.2).

One table per granularity, ``<A>_SECONDS`` … ``<A>_YEARS``, with the columns in WSO2's order:
``AGG_TIMESTAMP`` (the arrival-time bucket), ``SHARD_ID`` (when sharded),
``AGG_EVENT_TIMESTAMP`` (the event-time bucket, with ``aggregate by``), the group-by
attributes, the other plain attributes the selection reads ("last value") with
``AGG_LAST_EVENT_TIMESTAMP`` deciding which last value wins, then the base columns
``AGG_SUM_x``, ``AGG_COUNT``, ``AGG_MIN_x``, ``AGG_MAX_x``, ``AGG_SET_x`` (a JSON array).
The primary key is ``AGG_TIMESTAMP, SHARD_ID, AGG_EVENT_TIMESTAMP, group-by``.

:class:`AggregationTables` creates the tables (or checks existing ones), converts rows
between the runtime's base values and table rows, and runs the three statements a store
needs: an upsert of whole rows, a range read and a purge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Double,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    inspect,
    select,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.dml import Insert
from sqlalchemy.types import TypeEngine

from eddy.lang.ast import AttrType
from eddy.store.connect import StoreError
from eddy.store.fence import check_epoch, prepare_epoch

__all__ = ["AggregationLayout", "AggregationTables", "Attr", "Base", "TableRow"]

AGG_TIMESTAMP = "AGG_TIMESTAMP"
SHARD_ID = "SHARD_ID"
AGG_EVENT_TIMESTAMP = "AGG_EVENT_TIMESTAMP"
AGG_LAST_EVENT_TIMESTAMP = "AGG_LAST_EVENT_TIMESTAMP"

TableRow = tuple[int, str | None, int, tuple[Any, ...], list[Any]]
"""``(AGG_TIMESTAMP, SHARD_ID, event-time bucket, group values, base values)``; the event-time
bucket equals ``AGG_TIMESTAMP`` without ``aggregate by``."""


@dataclass(frozen=True)
class Attr:
    """An input attribute kept in the tables: its name, type and position in the input."""

    name: str
    type: AttrType
    position: int


@dataclass(frozen=True)
class Base:
    """A base column: WSO2 name, kind (SUM, COUNT, MIN, MAX, SET) and value type."""

    name: str
    kind: str
    type: AttrType


@dataclass(frozen=True)
class AggregationLayout:
    """What the tables of one aggregation hold."""

    name: str
    granularities: tuple[str, ...]
    width: int
    """Attributes of the input stream (the size of a row's last-event data)."""
    event_time: bool
    sharded: bool
    group_by: tuple[Attr, ...]
    plain: tuple[Attr, ...]
    bases: tuple[Base, ...]

    def table_name(self, granularity: str) -> str:
        """``<A>_SECONDS`` …"""
        return f"{self.name}_{granularity}"

    @property
    def time_column(self) -> str:
        """The column ``within`` and purging read: the event-time bucket when there is one."""
        return AGG_EVENT_TIMESTAMP if self.event_time else AGG_TIMESTAMP


def _sql_type(attr_type: AttrType, key: bool) -> TypeEngine[Any]:
    if attr_type is AttrType.STRING:
        return String(255) if key else Text()
    if attr_type is AttrType.INT:
        return Integer()
    if attr_type is AttrType.LONG:
        return BigInteger()
    if attr_type in (AttrType.FLOAT, AttrType.DOUBLE):
        return Double()
    if attr_type is AttrType.BOOL:
        return Boolean()
    raise StoreError(f"an aggregation cannot store an attribute of type {attr_type.value}")


def _base_type(base: Base) -> TypeEngine[Any]:
    if base.kind == "COUNT":
        return BigInteger()
    if base.kind == "SET":
        return Text()
    if base.kind == "SUM":
        return Double() if base.type in (AttrType.FLOAT, AttrType.DOUBLE) else BigInteger()
    return _sql_type(base.type, key=False)


class AggregationTables:
    """The tables of one aggregation in one database."""

    def __init__(self, engine: Engine, layout: AggregationLayout) -> None:
        self.engine = engine
        self.layout = layout
        self.metadata = MetaData()
        self.tables = {g: self._define(g) for g in layout.granularities}
        self._statements: dict[str, Insert] = {}

    def _define(self, granularity: str) -> Table:
        layout = self.layout
        columns: list[Column[Any]] = [Column(AGG_TIMESTAMP, BigInteger(), primary_key=True,
                                             autoincrement=False)]
        if layout.sharded:
            columns.append(Column(SHARD_ID, String(255), primary_key=True))
        if layout.event_time:
            columns.append(Column(AGG_EVENT_TIMESTAMP, BigInteger(), primary_key=True,
                                  autoincrement=False))
        columns += [Column(a.name, _sql_type(a.type, key=True), primary_key=True,
                           autoincrement=False) for a in layout.group_by]
        columns += [Column(a.name, _sql_type(a.type, key=False)) for a in layout.plain]
        if layout.plain:
            columns.append(Column(AGG_LAST_EVENT_TIMESTAMP, BigInteger()))
        columns += [Column(b.name, _base_type(b)) for b in layout.bases]
        return Table(layout.table_name(granularity), self.metadata, *columns)

    # -- schema --------------------------------------------------------------------------------
    def create(self) -> None:
        """Creates missing tables; an existing one must have the same columns. Another node
        creating a table at the same moment is not an error."""
        try:
            self.metadata.create_all(self.engine, checkfirst=True)
        except SQLAlchemyError:
            pass  # lost a race with another node; the check below decides
        found = inspect(self.engine)
        for table in self.tables.values():
            if not found.has_table(table.name):
                self.metadata.create_all(self.engine, tables=[table], checkfirst=True)
                continue
            have = [c["name"] for c in found.get_columns(table.name)]
            want = [c.name for c in table.columns]
            if [h.upper() for h in have] != [w.upper() for w in want]:
                raise StoreError(
                    f"table {table.name} exists with columns {', '.join(have)}, but aggregation "
                    f"'{self.layout.name}' needs {', '.join(want)}; drop it or rename the "
                    f"aggregation")

    def drop(self) -> None:
        """Drops every table (tests and tools)."""
        self.metadata.drop_all(self.engine, checkfirst=True)

    # -- statements ----------------------------------------------------------------------------
    def _upsert(self, granularity: str) -> Insert:
        statement = self._statements.get(granularity)
        if statement is not None:
            return statement
        table = self.tables[granularity]
        keys = [c.name for c in table.primary_key.columns]
        rest = [c.name for c in table.columns if c.name not in keys]
        dialect = self.engine.dialect.name
        if dialect == "mysql" or dialect == "mariadb":
            from sqlalchemy.dialects.mysql import insert as mysql_insert

            mine = mysql_insert(table)
            statement = mine.on_duplicate_key_update({c: mine.inserted[c] for c in rest})
        elif dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as postgresql_insert

            theirs = postgresql_insert(table)
            statement = theirs.on_conflict_do_update(
                index_elements=keys, set_={c: theirs.excluded[c] for c in rest})
        elif dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            ours = sqlite_insert(table)
            statement = ours.on_conflict_do_update(
                index_elements=keys, set_={c: ours.excluded[c] for c in rest})
        else:
            raise StoreError(f"eddy cannot upsert aggregation rows into {dialect}")
        self._statements[granularity] = statement
        return statement

    def upsert(self, granularity: str, rows: Sequence[TableRow]) -> None:
        """Writes whole rows (absolute values), inserting or replacing: idempotent."""
        if not rows:
            return
        values = [self._to_table(row) for row in rows]
        prepare_epoch(self.engine)
        with self.engine.begin() as connection:
            connection.execute(self._upsert(granularity), values)
            check_epoch(connection)  # minimum HA: a stale active's rows roll back

    def upsert_many(self, rows: Iterable[tuple[str, Sequence[TableRow]]]) -> None:
        """Upserts rows of several granularities in one transaction."""
        prepare_epoch(self.engine)
        with self.engine.begin() as connection:
            for granularity, batch in rows:
                if batch:
                    connection.execute(self._upsert(granularity),
                                       [self._to_table(row) for row in batch])
            check_epoch(connection)

    def read(self, granularity: str, start: int, end: int) -> list[TableRow]:
        """Rows with ``start <= time column < end``, every shard, oldest bucket first."""
        table = self.tables[granularity]
        column = table.c[self.layout.time_column]
        query = (select(table).where(column >= start, column < end)
                 .order_by(column, table.c[AGG_TIMESTAMP]))
        with self.engine.connect() as connection:
            return [self._from_table(row._mapping) for row in connection.execute(query)]

    def purge(self, granularity: str, before: int) -> int:
        """Deletes rows whose time column is before ``before``; returns how many."""
        table = self.tables[granularity]
        prepare_epoch(self.engine)
        with self.engine.begin() as connection:
            result = connection.execute(
                delete(table).where(table.c[self.layout.time_column] < before))
            check_epoch(connection)
            return int(result.rowcount or 0)

    # -- rows ----------------------------------------------------------------------------------
    def _to_table(self, row: TableRow) -> dict[str, Any]:
        arrival, shard, event_bucket, _group, values = row
        layout = self.layout
        data = values[1]
        record: dict[str, Any] = {AGG_TIMESTAMP: arrival}
        if layout.sharded:
            record[SHARD_ID] = shard
        if layout.event_time:
            record[AGG_EVENT_TIMESTAMP] = event_bucket
        for attr in layout.group_by:
            record[attr.name] = data[attr.position]
        for attr in layout.plain:
            record[attr.name] = data[attr.position] if data is not None else None
        if layout.plain:
            record[AGG_LAST_EVENT_TIMESTAMP] = values[0]
        for i, base in enumerate(layout.bases, 2):
            value = values[i]
            record[base.name] = (json.dumps(sorted(value, key=repr)) if base.kind == "SET"
                                 else value)
        return record

    def _from_table(self, record: Any) -> TableRow:
        layout = self.layout
        data: list[Any] = [None] * layout.width
        for attr in layout.group_by + layout.plain:
            data[attr.position] = _typed(record[attr.name], attr.type)
        values: list[Any] = [record[AGG_LAST_EVENT_TIMESTAMP] if layout.plain else None,
                             tuple(data)]
        for base in layout.bases:
            value = record[base.name]
            if base.kind == "SET":
                values.append(set(json.loads(value)) if value else set())
            elif base.kind in ("COUNT",) or (base.kind == "SUM" and base.type in (
                    AttrType.INT, AttrType.LONG)):
                values.append(None if value is None else int(value))
            else:
                values.append(_typed(value, base.type))
        arrival = int(record[AGG_TIMESTAMP])
        event_bucket = int(record[AGG_EVENT_TIMESTAMP]) if layout.event_time else arrival
        group = tuple(data[a.position] for a in layout.group_by)
        return arrival, record[SHARD_ID] if layout.sharded else None, event_bucket, group, values


def _typed(value: Any, attr_type: AttrType) -> Any:
    """A database value as the runtime's Python value (MySQL returns Decimal for some sums,
    0/1 for booleans)."""
    if value is None:
        return None
    if attr_type in (AttrType.FLOAT, AttrType.DOUBLE):
        return float(value)
    if attr_type in (AttrType.INT, AttrType.LONG):
        return int(value)
    if attr_type is AttrType.BOOL:
        return bool(value)
    return value
