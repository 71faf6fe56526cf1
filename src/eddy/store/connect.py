"""From WSO2 connection settings to a SQLAlchemy engine.

WSO2 apps name their database with a JDBC URL (``@store(type='rdbms',
jdbc.url='jdbc:mysql://host:3306/db', username=…, password=…)``) or with the name of a
``wso2.datasources`` entry (``datasource='WSO2_CARBON_DB'``). eddy keeps those settings
unchanged and maps them onto SQLAlchemy URLs with pure-Python drivers (PyMySQL for
MySQL/MariaDB, psycopg 3 for PostgreSQL, the standard library for SQLite), so an existing
app runs without a JVM driver. Engines are cached per URL: one pool per database per
process, shared by every table and aggregation that uses it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from urllib.parse import parse_qsl, quote, urlsplit

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

DEFAULT_SQLITE_URL = "sqlite:///eddy-data/database/eddy.db"

_DRIVERS = {
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "sqlite": "sqlite",
    "h2": "sqlite",
}

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


class StoreError(ValueError):
    """A store's connection settings cannot be understood; the message says which."""


def jdbc_to_sqlalchemy(jdbc_url: str, username: str | None = None,
                       password: str | None = None) -> str:
    """The SQLAlchemy URL for a JDBC URL, with credentials put into it.

    ``jdbc:mysql://h:3306/db?useSSL=false`` → ``mysql+pymysql://user:pw@h:3306/db``;
    JDBC-only query options (``useSSL``, ``serverTimezone``…) are dropped, since the Python
    drivers do not know them. ``jdbc:sqlite:path`` and ``jdbc:h2:path`` become SQLite files
    (H2 is WSO2's embedded default; SQLite is eddy's).
    """
    if not jdbc_url.startswith("jdbc:"):
        raise StoreError(f"'{jdbc_url}' is not a JDBC URL (it should start with 'jdbc:')")
    rest = jdbc_url[len("jdbc:"):]
    scheme, _, target = rest.partition(":")
    scheme = scheme.lower()
    if scheme not in _DRIVERS:
        raise StoreError(f"eddy has no driver for 'jdbc:{scheme}'; it supports "
                         f"{', '.join(sorted(set(_DRIVERS) - {'h2'}))} and h2 (as SQLite)")
    if _DRIVERS[scheme] == "sqlite":
        path = target.split(";", 1)[0]
        for prefix in ("file:", "//"):
            path = path.removeprefix(prefix)
        return "sqlite://" if path in ("", "mem", ":memory:") or path.startswith("mem:") \
            else f"sqlite:///{path}"
    parts = urlsplit(f"x:{target}")
    if not parts.hostname:
        raise StoreError(f"the JDBC URL '{jdbc_url}' names no host")
    query = dict(parse_qsl(parts.query))
    user = username if username is not None else query.get("user")
    secret = password if password is not None else query.get("password")
    credentials = ""
    if user:
        credentials = quote(user, safe="")
        if secret:
            credentials += ":" + quote(secret, safe="")
        credentials += "@"
    port = f":{parts.port}" if parts.port else ""
    return f"{_DRIVERS[scheme]}://{credentials}{parts.hostname}{port}{parts.path or '/'}"


def store_url(options: Mapping[str, str],
              datasources: Mapping[str, Mapping[str, str | None]] | None = None) -> str:
    """The SQLAlchemy URL of a ``@store(type='rdbms', …)`` or an aggregation's store.

    ``options`` are the annotation's elements (``jdbc.url``, ``username``, ``password``,
    ``datasource``); ``datasources`` maps a datasource name to its ``jdbcUrl``,
    ``username`` and ``password``. Without either, the embedded SQLite database is used.
    """
    if "datasource" in options:
        name = options["datasource"]
        found = (datasources or {}).get(name)
        if found is None or not found.get("jdbcUrl"):
            known = ", ".join(sorted(datasources or {})) or "none is configured"
            raise StoreError(f"unknown datasource '{name}' (known: {known})")
        return jdbc_to_sqlalchemy(str(found["jdbcUrl"]), found.get("username"),
                                  found.get("password"))
    if "jdbc.url" in options:
        return jdbc_to_sqlalchemy(options["jdbc.url"], options.get("username"),
                                  options.get("password"))
    return DEFAULT_SQLITE_URL


def connect(url: str) -> Engine:
    """The process's pooled engine for ``url`` (a SQLAlchemy URL), created on first use.

    SQLite files get their folder created, WAL journaling and a busy timeout, so several
    threads and processes can share one embedded database.
    """
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create(url)
            _engines[url] = engine
        return engine


def connect_bounded(engine: Engine, lock_wait_ms: int, idle_in_transaction_ms: int
                    ) -> Engine:
    """A separate pooled engine for ``engine``'s database whose sessions neither wait for a
    row lock longer than ``lock_wait_ms`` nor keep a transaction open and idle longer than
    ``idle_in_transaction_ms`` (the server aborts it and frees its locks).

    For the HA lease: a holder paused (SIGSTOP, a VM freeze) in the middle of its renewal
    holds the lease row locked; without these bounds its successor's takeover would wait for
    the paused process instead of taking the expired lease. PostgreSQL and MariaDB enforce
    both (``lock_timeout``/``idle_in_transaction_session_timeout``,
    ``innodb_lock_wait_timeout``/``idle_transaction_timeout``, whole seconds there); MySQL
    has no idle bound and keeps only the lock wait; SQLite is one host's file and needs
    neither (its engine is returned as it is: an in-memory database exists once). The bounds
    are per session, so no other engine of the process is affected.

    A process stopped half-way through *sending* a statement is another case: MariaDB ends
    it after ``net_read_timeout`` (set to the idle bound); PostgreSQL waits for the rest of
    the message and ends nothing, so a writer that must not stall a successor sends what
    is large before it locks what others need (:class:`eddy.store.revisions.CheckpointMirror`).
    """
    if engine.dialect.name == "sqlite":
        return engine
    url = engine.url.render_as_string(hide_password=False)
    key = f"{url}#lock={lock_wait_ms}#idle={idle_in_transaction_ms}"
    with _lock:
        bounded = _engines.get(key)
        if bounded is None:
            bounded = _create(url)
            _bound_sessions(bounded, lock_wait_ms, idle_in_transaction_ms)
            _engines[key] = bounded
        return bounded


def _bound_sessions(engine: Engine, lock_wait_ms: int, idle_ms: int) -> None:
    backend = engine.dialect.name
    if backend == "postgresql":
        settings = [f"SET lock_timeout = {int(lock_wait_ms)}",
                    f"SET idle_in_transaction_session_timeout = {int(idle_ms)}"]
    elif backend in ("mysql", "mariadb"):
        idle_s = max(1, -(-idle_ms // 1000))
        settings = [f"SET SESSION innodb_lock_wait_timeout = {max(1, -(-lock_wait_ms // 1000))}",
                    # a client stopped half-way through sending a statement
                    f"SET SESSION net_read_timeout = {idle_s}",
                    f"SET SESSION idle_transaction_timeout = {idle_s}"]
    else:
        return

    @event.listens_for(engine, "connect")
    def _bounds(connection, _record):  # type: ignore[no-untyped-def]
        cursor = connection.cursor()
        for sql in settings:
            try:
                cursor.execute(sql)
            except Exception:  # MySQL has no idle_transaction_timeout: keep the lock bound
                if "idle" not in sql:
                    raise
        cursor.close()
        if backend == "postgresql":
            connection.commit()  # psycopg opened a transaction for the SETs


def _create(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, future=True)
    if parsed.database and parsed.database != ":memory:":
        from pathlib import Path

        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, future=True, connect_args={"timeout": 30,
                                                           "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record):  # type: ignore[no-untyped-def]
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine
