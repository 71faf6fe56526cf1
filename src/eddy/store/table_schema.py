"""The database table behind a ``@store(type='rdbms')`` table: its options, columns and DDL.

A WSO2 app describes the table with the annotation's elements: ``table.name`` (default: the
Siddhi table's name), ``field.length='col:len, …'`` for string columns (default 254, as the
WSO2 RDBMS store), and ``@PrimaryKey``/``@Index`` on the definition. eddy creates the table
when it is missing and accepts an existing one that has every attribute as a column (names
compared without case, as WSO2's unquoted DDL makes PostgreSQL fold them).

Column types follow the WSO2 RDBMS store's mapping: STRING → VARCHAR(n), INT → INTEGER,
LONG → BIGINT, FLOAT → single-precision FLOAT/REAL, DOUBLE → DOUBLE, BOOL → BOOLEAN (TINYINT
on MySQL), OBJECT → a BLOB of the pickled value. On MySQL/MariaDB string columns use the
binary collation: Siddhi compares strings case-sensitively, and a primary key must not treat
``'IBM'`` and ``'ibm'`` as one.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Double,
    Engine,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PickleType,
    String,
    Table,
    inspect,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.types import TypeEngine

from eddy.lang.ast import Attribute, AttrType

DEFAULT_STRING_LENGTH = 254
_NAME_LIMIT = 60  # MySQL allows 64 characters per identifier, PostgreSQL 63


class TableSchemaError(ValueError):
    """A ``@store`` table's options or its existing database table do not fit the
    definition; the message says what."""


@dataclass(frozen=True)
class TableOptions:
    """What a ``@store(type='rdbms', …)`` annotation says about the table itself."""

    table_name: str
    field_lengths: Mapping[str, int]


def parse_field_lengths(text: str | None, attributes: Sequence[Attribute]) -> dict[str, int]:
    """``field.length='symbol:100, name:50'`` → ``{'symbol': 100, 'name': 50}``."""
    lengths: dict[str, int] = {}
    if not text:
        return lengths
    names = {a.name for a in attributes}
    for item in text.split(","):
        name, sep, length = (part.strip() for part in item.partition(":"))
        if not sep or not length.isdigit() or int(length) <= 0:
            raise TableSchemaError(f"field.length entry '{item.strip()}' is not "
                                   "'attribute:length'")
        if name not in names:
            raise TableSchemaError(f"field.length names '{name}', which is not an attribute "
                                   f"(attributes: {', '.join(sorted(names))})")
        lengths[name] = int(length)
    return lengths


def column_type(attribute: Attribute, length: int) -> TypeEngine[Any]:
    """The SQLAlchemy type of an attribute's column (see the module docstring)."""
    kind = attribute.type
    if kind is AttrType.STRING:
        return String(length).with_variant(
            mysql.VARCHAR(length, collation="utf8mb4_bin"), "mysql", "mariadb")
    types: dict[AttrType, TypeEngine[Any]] = {
        AttrType.INT: Integer(), AttrType.LONG: BigInteger(),
        AttrType.FLOAT: Float(precision=24, asdecimal=False),
        AttrType.DOUBLE: Double(asdecimal=False),
        AttrType.BOOL: Boolean(create_constraint=False),
        AttrType.OBJECT: PickleType(impl=LargeBinary),
    }
    return types[kind]


def short_name(*parts: str) -> str:
    """An identifier from ``parts`` within every database's length limit."""
    name = "_".join(parts)
    if len(name) <= _NAME_LIMIT:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[:_NAME_LIMIT - 9]}_{digest}"


def table_model(options: TableOptions, attributes: Sequence[Attribute],
                primary_key: Sequence[int], indexes: Sequence[int]) -> Table:
    """The table eddy creates for a definition."""
    metadata = MetaData()
    columns = [Column(a.name, column_type(a, options.field_lengths.get(a.name,
                                                                      DEFAULT_STRING_LENGTH)),
                      primary_key=i in primary_key, autoincrement=False,
                      nullable=i not in primary_key)
               for i, a in enumerate(attributes)]
    table = Table(options.table_name, metadata, *columns)
    for position in dict.fromkeys(indexes):
        if position not in primary_key or len(primary_key) > 1:
            column = attributes[position].name
            Index(short_name(options.table_name, column, "idx"), table.c[column])
    return table


_ready: dict[tuple[str, str], Table] = {}
_ready_lock = threading.Lock()


def ensure_table(engine: Engine, options: TableOptions, attributes: Sequence[Attribute],
                 primary_key: Sequence[int], indexes: Sequence[int]) -> Table:
    """The database table for the definition: created when missing, else the existing one
    (checked to have every attribute); the result is cached per process and engine."""
    cache_key = (str(engine.url), options.table_name)
    with _ready_lock:
        found = _ready.get(cache_key)
        if found is not None:
            return found
        model = table_model(options, attributes, primary_key, indexes)
        existing = _existing_name(engine, options.table_name)
        if existing is None:
            try:
                model.metadata.create_all(engine)
            except (OperationalError, ProgrammingError):
                existing = _existing_name(engine, options.table_name)  # created meanwhile
                if existing is None:
                    raise
        if existing is not None:
            model = _bind_existing(engine, existing, model)
        _ready[cache_key] = model
        return model


def forget_table(engine: Engine, table_name: str) -> None:
    """Drops the process's cached knowledge of a table (after a test drops it)."""
    with _ready_lock:
        _ready.pop((str(engine.url), table_name), None)


def _existing_name(engine: Engine, name: str) -> str | None:
    names = inspect(engine).get_table_names()
    if name in names:
        return name
    folded = [n for n in names if n.lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


def _bind_existing(engine: Engine, name: str, model: Table) -> Table:
    """The model renamed to the existing table's (case-folded) names, if it has them all."""
    columns = {c["name"].lower(): c["name"] for c in inspect(engine).get_columns(name)}
    missing = [c.name for c in model.columns if c.name.lower() not in columns]
    if missing:
        raise TableSchemaError(f"the existing table '{name}' has no column "
                               f"{', '.join(repr(m) for m in missing)}; drop it or name "
                               "another table with table.name")
    metadata = MetaData()
    return Table(name, metadata, *[
        Column(columns[c.name.lower()], c.type, key=c.name, primary_key=c.primary_key,
               autoincrement=False) for c in model.columns])


__all__ = ["DEFAULT_STRING_LENGTH", "TableOptions", "TableSchemaError", "column_type",
           "ensure_table", "forget_table", "parse_field_lengths", "short_name", "table_model"]
