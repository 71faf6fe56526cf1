"""``DBPersistenceStore``: the periodic revisions of each app's state in ``PERSISTENCE_DB``.

``state.persistence`` with ``persistenceStore: …DBPersistenceStore`` names a datasource and a
table (WSO2's ``PERSISTENCE_TABLE``). Each revision is one row of that table: the app, the
revision name (``<millis>__<app>``, as WSO2 names them), the app text it was taken with and
the checkpoint folder as a gzip'd tar. Nothing of a revision is on the node's file system,
so a node on another host (a restarted worker with a new disk, the other node of an HA
pair) lists and restores the same revisions.

A save is one transaction that ends with the fence check
(:func:`eddy.store.fence.check_epoch`): in minimum HA, a revision of an old active whose
successor started is refused.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    MetaData,
    String,
    Table,
    Text,
    and_,
    delete,
    insert,
    select,
)

from eddy.store.column_types import LONG_BLOB
from eddy.store.fence import check_epoch, prepare_epoch
from eddy.store.revisions import NODE_LOCAL


class DbRevisions:
    """Revisions of every app in one table of a persistence database."""

    def __init__(self, engine: Engine, table: str) -> None:
        self.engine = engine
        meta = MetaData()
        self.table = Table(table, meta,
                           Column("app", String(100), primary_key=True),
                           Column("revision", String(150), primary_key=True),
                           Column("app_text", Text, nullable=False),
                           Column("snapshot", LONG_BLOB, nullable=False),
                           Column("saved_ms", BigInteger, nullable=False))
        meta.create_all(engine, checkfirst=True)

    def names(self, app: str) -> list[str]:
        """The app's revisions, oldest first."""
        with self.engine.connect() as conn:
            found = conn.execute(select(self.table.c.revision).where(
                self.table.c.app == app)).scalars().all()
        return sorted(found, key=lambda name: int(name.split("__", 1)[0]))

    def save(self, app: str, revision: str, checkpoint: Path, text: str, keep: int) -> None:
        """Stores ``checkpoint`` (a stopped query's folder) as ``revision`` and deletes all
        but the newest ``keep`` revisions, in one fenced transaction."""
        from eddy.store.lease import now_ms

        body = _pack(checkpoint)
        prepare_epoch(self.engine)
        with self.engine.begin() as conn:
            conn.execute(insert(self.table).values(app=app, revision=revision, app_text=text,
                                                   snapshot=body,
                                                   saved_ms=now_ms(conn.dialect.name)))
            names = sorted(conn.execute(select(self.table.c.revision).where(
                self.table.c.app == app)).scalars().all(),
                key=lambda name: int(name.split("__", 1)[0]))
            stale = names[:-keep]
            if stale:
                conn.execute(delete(self.table).where(and_(
                    self.table.c.app == app, self.table.c.revision.in_(stale))))
            check_epoch(conn)

    def text(self, app: str, revision: str) -> str | None:
        """The app text the revision was taken with, None when there is no such revision."""
        with self.engine.connect() as conn:
            found = conn.execute(select(self.table.c.app_text).where(and_(
                self.table.c.app == app, self.table.c.revision == revision))).scalar()
        return None if found is None else str(found)

    def unpack(self, app: str, revision: str, target: Path) -> None:
        """Writes the revision's checkpoint into ``target`` (a new, empty folder)."""
        with self.engine.connect() as conn:
            body = conn.execute(select(self.table.c.snapshot).where(and_(
                self.table.c.app == app, self.table.c.revision == revision))).scalar_one()
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
            archive.extractall(target, filter="data")

    def clear(self, app: str) -> None:
        """Deletes every revision of the app (fenced like a save)."""
        prepare_epoch(self.engine)
        with self.engine.begin() as conn:
            conn.execute(delete(self.table).where(self.table.c.app == app))
            check_epoch(conn)


def _pack(checkpoint: Path) -> bytes:
    """The checkpoint folder as a gzip'd tar (the node-local claim left out)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        if checkpoint.is_dir():
            for path in sorted(checkpoint.rglob("*")):
                if path.is_file() and path.name not in NODE_LOCAL:
                    archive.add(path, arcname=path.relative_to(checkpoint).as_posix())
    return buffer.getvalue()
