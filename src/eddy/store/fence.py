"""Fencing tokens where the writes land: a stale epoch is refused in the write's own
transaction.

The lease (:mod:`eddy.store.lease`) lives in the cluster database, but the active writes to
other databases too (``PERSISTENCE_DB``, an app's ``@store`` tables). Each of those holds a
row ``EDDY_HA_FENCE(group_id, epoch)``: the highest epoch that has written there. A write
of epoch ``e`` starts its transaction with ``UPDATE … SET epoch = e WHERE epoch <= e``: one
row updated means no newer holder has written here, and the row stays locked until the
write commits, so a newer holder's first write waits for it and then shuts it out for good.
No row updated (and one exists) means a newer epoch wrote here first: :class:`Fenced`, and
the transaction rolls back with nothing written.

A new active raises the fence in every database it will write to (:func:`raise_fence`:
``PERSISTENCE_DB`` and the databases of its apps' ``@store`` tables and aggregations,
:func:`app_databases`) before it reads the state it resumes from, so what a paused old
active manages to write before that is part of what the new one resumes from, and nothing
after it lands.

**How the epoch reaches the writes.** Table and aggregation writes run in Spark's Python
workers, not in the node's own threads. The active exports its epoch as :data:`FENCE_ENV`
before it starts its apps; compiling a group copies it into the SparkContext's environment
(:func:`eddy.store.aggregation_settings.worker_environment`), which the Python workers of
that query inherit: a query started at epoch ``e`` writes as ``e`` for its whole life. Those
writes call :func:`check_epoch` at the end of their transaction, just before the commit, so
the fence row is locked only for the commit itself (a node paused mid-batch holds no fence
lock; it is refused when it resumes). Without :data:`FENCE_ENV` (no HA) nothing is checked.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    MetaData,
    String,
    Table,
    and_,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

if TYPE_CHECKING:
    from eddy.lang.semantic import AnalyzedApp

metadata = MetaData()
FENCES = Table("EDDY_HA_FENCE", metadata,
               Column("group_id", String(100), primary_key=True),
               Column("epoch", BigInteger, nullable=False))


FENCE_ENV = "EDDY_HA_FENCE"
"""``{"group": <groupId>, "epoch": <n>}``: the epoch this process's writes carry (HA only)."""
_created: set[str] = set()
_created_lock = threading.Lock()


@dataclass(frozen=True)
class Epoch:
    """The lease epoch a node's writes carry, and the HA group it belongs to."""

    group_id: str
    epoch: int


class Fenced(RuntimeError):
    """A write carried an epoch older than one that already wrote to this database."""


def create_fence(engine: Engine) -> None:
    """Creates the fence table in ``engine``'s database when missing."""
    metadata.create_all(engine, checkfirst=True)


def check_fence(conn: Connection, group_id: str, epoch: int, *, create: bool = True) -> None:
    """Inside the write's transaction: passes (and locks the fence row) when ``epoch`` is
    current here, raises :class:`Fenced` when a newer epoch has written. A missing row is
    made at ``epoch`` with ``create``; without it (fences made only by
    :func:`claim_epoch`: a row that is gone was retired) a missing row refuses the write."""
    raised = conn.execute(update(FENCES).where(and_(
        FENCES.c.group_id == group_id, FENCES.c.epoch <= epoch)).values(epoch=epoch)).rowcount
    if raised:
        return
    # A locking read: InnoDB's plain SELECT would see the transaction's snapshot (the
    # epoch before the newer holder's), not the row the UPDATE just failed to match.
    current = conn.execute(select(FENCES.c.epoch).where(
        FENCES.c.group_id == group_id).with_for_update()).scalar_one_or_none()
    if current is None and create:
        conn.execute(insert(FENCES).values(group_id=group_id, epoch=epoch))
        return
    if current is None:
        raise Fenced(f"'{group_id}' was retired (its fence row is gone): epoch {epoch} "
                     f"writes nothing")
    raise Fenced(f"epoch {epoch} of HA group '{group_id}' is stale: epoch {current} "
                 f"has written here since; this node is no longer the active one")


def raise_fence(engine: Engine, group_id: str, epoch: int) -> None:
    """Shuts out every epoch before ``epoch`` in ``engine``'s database (a new active does
    this before resuming); :class:`Fenced` when an even newer epoch is there already."""
    create_fence(engine)
    for _ in range(2):
        try:
            with engine.begin() as conn:
                check_fence(conn, group_id, epoch)
            return
        except IntegrityError:  # the row was inserted concurrently: take the update path
            continue
    raise Fenced(f"could not raise the fence of HA group '{group_id}' to epoch {epoch}")


def claim_epoch(engine: Engine, group_id: str) -> int:
    """The next epoch of ``group_id``, raised at once: every earlier holder is shut out and
    the caller is the only writer (a distributed worker taking a child app over, whatever
    epoch the worker it ran on had). Waits for a write of the earlier holder that holds the
    fence row, so that write is part of what the caller then reads.

    A new row starts at the database's clock in milliseconds, not at 1: a fence row that
    was deleted (:func:`retire_fence`) and is made again starts above every epoch of its
    earlier life (each claim adds one, far fewer than the milliseconds in between), so a
    holder of that life left paused stays shut out."""
    from eddy.store.lease import now_ms

    create_fence(engine)
    for _ in range(2):
        try:
            with engine.begin() as conn:
                current = conn.execute(select(FENCES.c.epoch).where(
                    FENCES.c.group_id == group_id).with_for_update()).scalar_one_or_none()
                if current is None:
                    conn.execute(insert(FENCES).values(group_id=group_id,
                                                       epoch=now_ms(conn.dialect.name)))
                    return int(conn.execute(select(FENCES.c.epoch).where(
                        FENCES.c.group_id == group_id)).scalar_one())
                conn.execute(update(FENCES).where(FENCES.c.group_id == group_id)
                             .values(epoch=current + 1))
                return int(current) + 1
        except IntegrityError:  # inserted concurrently: take the update path
            continue
    raise Fenced(f"could not claim a new epoch of '{group_id}'")


def retire_fence(engine: Engine, group_id: str, epoch: int) -> None:
    """Deletes the fence row of ``group_id`` (whose state is gone) if ``epoch`` is still
    current: a write carrying any epoch of it is refused from then on
    (``check_fence(create=False)``), and a later :func:`claim_epoch` starts above them all."""
    with engine.begin() as conn:
        conn.execute(delete(FENCES).where(and_(FENCES.c.group_id == group_id,
                                               FENCES.c.epoch == epoch)))


def export_epoch(epoch: Epoch, environ: MutableMapping[str, str] | None = None) -> None:
    """Makes ``epoch`` the one this process's (and its later queries') writes carry."""
    (os.environ if environ is None else environ)[FENCE_ENV] = json.dumps(
        {"group": epoch.group_id, "epoch": epoch.epoch})


def current_epoch(environ: Mapping[str, str] | None = None) -> Epoch | None:
    """The epoch exported to this process, None outside minimum HA."""
    value = (os.environ if environ is None else environ).get(FENCE_ENV)
    if not value:
        return None
    found = json.loads(value)
    return Epoch(str(found["group"]), int(found["epoch"]))


def prepare_epoch(engine: Engine) -> None:
    """Before a fenced write's transaction begins: makes sure the fence table exists (once
    per database and process). Made inside the transaction instead, on MySQL/MariaDB by
    another connection (DDL there would commit the transaction), a table newer than the
    transaction's snapshot fails its fence check ("Table definition has changed")."""
    if current_epoch() is not None:
        _create_once(engine, str(engine.url))


def check_epoch(conn: Connection) -> None:
    """At the end of a write's transaction: :func:`check_fence` with the process's epoch
    (:class:`Fenced` when stale); nothing outside minimum HA. The writer calls
    :func:`prepare_epoch` before the transaction begins."""
    epoch = current_epoch()
    if epoch is None:
        return
    # SQLite: this transaction holds the file's write lock, so only it can create the
    # table (its DDL is transactional); elsewhere another connection creates it.
    _create_once(conn if conn.dialect.name == "sqlite" else conn.engine, str(conn.engine.url))
    check_fence(conn, epoch.group_id, epoch.epoch)


def _create_once(bind: Engine | Connection, url: str) -> None:
    with _created_lock:
        if url not in _created:
            metadata.create_all(bind, checkfirst=True)
            _created.add(url)


def app_databases(analyzed: AnalyzedApp) -> list[str]:
    """The SQLAlchemy URLs of the databases the app writes to: those of its
    ``@store(type='rdbms')`` tables and aggregations (sorted, each once)."""
    from eddy.lang import ast
    from eddy.store.aggregation_settings import node_settings
    from eddy.store.connect import store_url

    urls: set[str] = set()
    for info in analyzed.streams.values():
        definition = info.definition
        if not isinstance(definition, ast.TableDefinition | ast.AggregationDefinition):
            continue
        store = ast.find_annotation(definition.annotations, "store")
        if store is None or (store.get("type") or "").lower() != "rdbms":
            continue
        options = {e.key.lower(): e.value for e in store.elements if e.key is not None}
        urls.add(store_url(options, node_settings().datasources))
    return sorted(urls)
