"""One database transaction per micro-batch for ``@store`` tables, and what makes a replayed
micro-batch harmless.

Spark re-runs a micro-batch whose commit it did not record (a crash, a stop mid-batch) from
the state the operator had before it. A ``@store`` table's rows are not in that state: they
are in the database, and the writes of the first run may already be committed there.
Re-applying them would double inserts and counters; skipping them alone would let the
re-run read the table as the batch left it, not as it found it.

So :func:`run_stored_batch` runs a batch's table operations in one transaction per database
and commits, with them, a *batch marker* row in ``eddy_table_batches``: the streaming query
id and state key it belongs to, the batch id, and the batch's outputs and runtime state
after it. A re-run of that batch (same query id, key and batch id: Spark gives a re-run
the same id) finds the marker, rolls back what it started, and returns the recorded outputs
and state instead of recomputing them. The guarantee:

- tables in **one database** (every ``@store`` table of the app on the same ``jdbc.url``):
  exactly once — the table's rows and the batch's outputs equal an uninterrupted run;
- tables spread over several databases: the other databases commit first and the marker's
  last, so a crash between those commits re-applies the batch there (at least once);
- outside a Spark streaming query (the in-process driver, a direct API call) there is no
  batch identity: writes still commit one transaction per batch, with no marker.

Batches that wrote nothing store no marker: re-running them cannot change anything. The
price of a batch that wrote is one more runtime snapshot and its outputs, written to the
database in the batch's transaction (one row per streaming query and state key, replaced
by each such batch).
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    MetaData,
    String,
    Table,
    delete,
    insert,
    select,
)

from eddy.runtime.model import GroupRuntime, InputEvent, OutputEvent
from eddy.store.column_types import LONG_BLOB
from eddy.store.fence import check_epoch, prepare_epoch

MARKER_TABLE = "eddy_table_batches"

_metadata = MetaData()
markers = Table(
    MARKER_TABLE, _metadata,
    Column("owner", String(190), primary_key=True),  # query id / state key / runtime
    Column("batch_id", BigInteger, nullable=False),
    Column("outputs", LONG_BLOB, nullable=False),
    Column("state", LONG_BLOB, nullable=False),
)

_local = threading.local()
_created: set[str] = set()
_created_lock = threading.Lock()


class Batch:
    """The open transactions of one micro-batch, one per database, begun on first use."""

    def __init__(self) -> None:
        self.connections: dict[str, Connection] = {}
        self.wrote: set[str] = set()
        self.deferred: dict[Callable[[], None], None] = {}

    def defer(self, flush: Callable[[], None]) -> None:
        """Registers work (a table's buffered inserts) to run before the batch commits."""
        self.deferred.setdefault(flush, None)

    def flush(self) -> None:
        """Runs the deferred work, in the order it was first registered."""
        while self.deferred:
            flush = next(iter(self.deferred))
            del self.deferred[flush]
            flush()

    def connection(self, engine: Engine) -> Connection:
        url = str(engine.url)
        connection = self.connections.get(url)
        if connection is None:
            prepare_epoch(engine)
            connection = engine.connect()
            connection.begin()
            self.connections[url] = connection
        return connection

    def finish(self, commit: bool, last: str | None = None) -> None:
        """Commits (``last``'s database after the others) or rolls back, and closes.
        Minimum HA: every database is checked against the fence before the first commit,
        so a stale epoch commits nothing anywhere (:func:`~eddy.store.fence.check_epoch`)."""
        order = sorted(self.connections, key=lambda url: url == last)
        try:
            if commit:
                for url in order:
                    check_epoch(self.connections[url])
            for url in order:
                connection = self.connections[url]
                if commit:
                    connection.commit()
                else:
                    connection.rollback()
        finally:
            for connection in self.connections.values():
                connection.close()
            self.connections.clear()


def current_batch() -> Batch | None:
    """The micro-batch this thread runs, if any."""
    batch: Batch | None = getattr(_local, "batch", None)
    return batch


@contextmanager
def connection(engine: Engine, *, write: bool) -> Iterator[Connection]:
    """A connection for one table operation: the micro-batch's transaction when a batch
    runs, else a transaction of its own, committed at the end."""
    batch = current_batch()
    if batch is not None:
        if write:
            batch.wrote.add(str(engine.url))
        yield batch.connection(engine)
        return
    if write:
        prepare_epoch(engine)
    with engine.begin() as own:
        yield own
        if write:
            check_epoch(own)


RunBatch = Callable[[GroupRuntime, list[InputEvent]], list[OutputEvent]]


def stored_engines(runtime: GroupRuntime) -> list[Engine]:
    """The databases of ``runtime``'s ``@store`` tables (created if missing), sorted."""
    from eddy.runtime.rdbms_table import RdbmsTable

    engines: dict[str, Engine] = {}
    for table in getattr(runtime, "tables", {}).values():
        if isinstance(table, RdbmsTable):
            table.ensure()
            engines.setdefault(str(table.engine.url), table.engine)
    return [engines[url] for url in sorted(engines)]


def run_stored_batch(runtime: GroupRuntime, events: list[InputEvent], key: Any,
                     run: RunBatch, runtime_id: str = "",
                     identity: tuple[str, int] | None = None) -> list[OutputEvent]:
    """``run(runtime, events)`` with its ``@store`` table operations in one transaction per
    database and a batch marker; see the module docstring. ``key`` is the state key and
    ``runtime_id`` names the runtime (its app and queries) within the streaming query;
    ``identity`` is ``(query id, batch id)`` of the micro-batch (the engine reads Spark's);
    without one, the batch is still one transaction but leaves no marker."""
    engines = stored_engines(runtime)
    if not engines or current_batch() is not None:
        return run(runtime, events)
    marker_engine = engines[0]
    owner = _owner(identity, key, runtime_id) if identity is not None else None
    batch = Batch()
    _local.batch = batch
    committed = False
    try:
        if owner is not None and identity is not None:
            _create_markers(marker_engine)
            found = batch.connection(marker_engine).execute(
                select(markers.c.batch_id, markers.c.outputs, markers.c.state)
                .where(markers.c.owner == owner)).first()
            if found is not None and found.batch_id == identity[1]:
                runtime.restore(found.state)  # this batch committed before: replay it as it was
                recorded: list[OutputEvent] = pickle.loads(found.outputs)  # noqa: S301
                return recorded
        outputs = run(runtime, events)
        batch.flush()
        if owner is not None and identity is not None and batch.wrote:
            marker = batch.connection(marker_engine)
            marker.execute(delete(markers).where(markers.c.owner == owner))
            marker.execute(insert(markers).values(
                owner=owner, batch_id=identity[1], state=runtime.snapshot(),
                outputs=pickle.dumps(outputs, protocol=pickle.HIGHEST_PROTOCOL)))
        batch.finish(commit=True, last=str(marker_engine.url))
        committed = True
        return outputs
    finally:
        _local.batch = None
        if not committed:
            batch.finish(commit=False)


def _owner(identity: tuple[str, int], key: Any, runtime_id: str) -> str:
    digest = hashlib.sha256(f"{key!r}\0{runtime_id}".encode()).hexdigest()[:32]
    return f"{identity[0]}/{digest}"


def _create_markers(engine: Engine) -> None:
    url = str(engine.url)
    with _created_lock:
        if url not in _created:
            _metadata.create_all(engine, checkfirst=True)
            _created.add(url)


def drop_markers(engines: Sequence[Engine]) -> None:
    """Removes the marker table (for tests that clean their database up)."""
    for engine in engines:
        markers.drop(engine, checkfirst=True)
        with _created_lock:
            _created.discard(str(engine.url))


__all__ = ["MARKER_TABLE", "Batch", "connection", "current_batch",
           "drop_markers", "run_stored_batch", "stored_engines"]
