"""The manager database (``deployment.config.datasource``, WSO2's ``SP_MGT_DB``): what the
managers of one group share, so that any of them can lead.

``EDDY_MGR_APPS``      one row per parent app: its text as the user sent it, and whether it
                       is deployed or waiting (and why). WSO2 keeps the text only in the
                       receiving manager's folder, which loses apps on failover
                       (product-sp#458, #952); here it survives any manager.
``EDDY_MGR_CHILDREN``  one row per child app: its text and content hash (``version``) and
                       the worker it is placed on (NULL: not placed) — the desired placement.
``EDDY_MGR_WORKERS``   the workers that registered: their interface (the leader deploys
                       through it) and whether they are receiver nodes. Never a password:
                       the credentials a worker sends in its heartbeats stay in the
                       leader's memory (:mod:`eddy.cluster.manager`), so the database holds
                       no secret to steal; a new leader calls a worker only once it heard
                       from it. The ``password`` column is written NULL (rows of earlier
                       versions lose theirs on the worker's next heartbeat).
``EDDY_MGR_RETIRED``   children whose parent was deleted or replaced (name and content
                       hash) until a worker deleted their state from the persistence
                       database (:mod:`eddy.node.child_state`), which the manager has no
                       access to; written in the transaction that drops the children.
``EDDY_MGR_MANAGERS``  every manager's advertised interface and when it last showed up, so a
                       follower can name the leader (301) and ``connectedManagers`` is known.

Every write of the leader carries its lease epoch and starts with
:func:`eddy.store.fence.check_fence`: once a newer leader raised the fence, a paused old
leader's writes are refused in their own transaction and nothing of them lands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    delete,
    insert,
    select,
    update,
)

from eddy.store.column_types import LONG_TEXT
from eddy.store.fence import check_fence, create_fence
from eddy.store.lease import now_ms

metadata = MetaData()
APPS = Table("EDDY_MGR_APPS", metadata,
             Column("group_id", String(100), primary_key=True),
             Column("name", String(200), primary_key=True),
             Column("text", LONG_TEXT, nullable=False),
             Column("status", String(20), nullable=False),
             Column("reason", Text, nullable=False),
             Column("created_ms", BigInteger, nullable=False))
CHILDREN = Table("EDDY_MGR_CHILDREN", metadata,
                 Column("group_id", String(100), primary_key=True),
                 Column("name", String(250), primary_key=True),
                 Column("parent", String(200), nullable=False),
                 Column("exec_group", String(250), nullable=False),
                 Column("instance", Integer, nullable=False),
                 Column("receiver", Integer, nullable=False),
                 Column("text", LONG_TEXT, nullable=False),
                 Column("version", String(64), nullable=False),
                 Column("node_id", String(200), nullable=True),
                 Column("epoch", BigInteger, nullable=False))
WORKERS = Table("EDDY_MGR_WORKERS", metadata,
                Column("group_id", String(100), primary_key=True),
                Column("node_id", String(200), primary_key=True),
                Column("host", String(255), nullable=False),
                Column("port", Integer, nullable=False),
                Column("username", String(200), nullable=True),
                Column("password", String(200), nullable=True),
                Column("receiver", Integer, nullable=False),
                Column("seen_ms", BigInteger, nullable=False))
RETIRED = Table("EDDY_MGR_RETIRED", metadata,
                Column("group_id", String(100), primary_key=True),
                Column("name", String(250), primary_key=True),
                Column("version", String(64), primary_key=True),
                Column("retired_ms", BigInteger, nullable=False))
MANAGERS = Table("EDDY_MGR_MANAGERS", metadata,
                 Column("group_id", String(100), primary_key=True),
                 Column("node_id", String(200), primary_key=True),
                 Column("host", String(255), nullable=False),
                 Column("port", Integer, nullable=False),
                 Column("seen_ms", BigInteger, nullable=False))


@dataclass(frozen=True)
class ParentApp:
    """A parent app: ``status`` is ``deployed`` (every child placed) or ``waiting``."""

    name: str
    text: str
    status: str
    reason: str


@dataclass(frozen=True)
class ChildRow:
    """A child app as the manager database has it; ``node_id`` None: not placed."""

    name: str
    parent: str
    group: str
    instance: int
    receiver: bool
    text: str
    version: str
    node_id: str | None


@dataclass(frozen=True)
class WorkerRow:
    """A registered worker and the interface its children are deployed through;
    ``password`` only in the leader's memory (None when read from the database)."""

    node_id: str
    host: str
    port: int
    username: str | None
    password: str | None
    receiver: bool
    seen_ms: int = 0


@dataclass(frozen=True)
class ManagerRow:
    node_id: str
    host: str
    port: int
    seen_ms: int
    now_ms: int


class ManagerState:
    """One manager group's rows in the manager database."""

    def __init__(self, engine: Engine, group_id: str) -> None:
        self.engine = engine
        self.group_id = group_id
        self._now = now_ms(engine.dialect.name)
        metadata.create_all(engine, checkfirst=True)
        create_fence(engine)

    # -- managers (not fenced: every manager says where it is) ----------------------------

    def manager_seen(self, node_id: str, host: str, port: int) -> None:
        """Records that manager ``node_id`` is alive and reachable at ``host:port``."""
        where = and_(MANAGERS.c.group_id == self.group_id, MANAGERS.c.node_id == node_id)
        values = {"host": host, "port": port, "seen_ms": self._now}
        with self.engine.begin() as conn:
            if not conn.execute(update(MANAGERS).where(where).values(**values)).rowcount:
                conn.execute(insert(MANAGERS).values(group_id=self.group_id, node_id=node_id,
                                                     **values))

    def managers(self) -> list[ManagerRow]:
        """Every manager that ever showed up, with the database's clock now."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(MANAGERS.c.node_id, MANAGERS.c.host, MANAGERS.c.port,
                                       MANAGERS.c.seen_ms, self._now).where(
                MANAGERS.c.group_id == self.group_id).order_by(MANAGERS.c.node_id))
            return [ManagerRow(r[0], r[1], int(r[2]), int(r[3]), int(r[4])) for r in rows]

    # -- reading --------------------------------------------------------------------------

    def apps(self) -> dict[str, ParentApp]:
        """Every parent app, by name."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(APPS.c.name, APPS.c.text, APPS.c.status, APPS.c.reason)
                                .where(APPS.c.group_id == self.group_id)
                                .order_by(APPS.c.created_ms, APPS.c.name))
            return {r[0]: ParentApp(r[0], r[1], r[2], r[3]) for r in rows}

    def children(self, parent: str | None = None) -> list[ChildRow]:
        """The child apps (of one parent), in name order."""
        where = CHILDREN.c.group_id == self.group_id
        if parent is not None:
            where = and_(where, CHILDREN.c.parent == parent)
        with self.engine.connect() as conn:
            rows = conn.execute(select(
                CHILDREN.c.name, CHILDREN.c.parent, CHILDREN.c.exec_group, CHILDREN.c.instance,
                CHILDREN.c.receiver, CHILDREN.c.text, CHILDREN.c.version, CHILDREN.c.node_id)
                .where(where).order_by(CHILDREN.c.name))
            return [ChildRow(r[0], r[1], r[2], int(r[3]), bool(r[4]), r[5], r[6], r[7])
                    for r in rows]

    def retired(self) -> list[tuple[str, str]]:
        """``(child, version)`` of every retired child whose state is still to delete."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(RETIRED.c.name, RETIRED.c.version).where(
                RETIRED.c.group_id == self.group_id).order_by(RETIRED.c.retired_ms,
                                                               RETIRED.c.name))
            return [(r[0], r[1]) for r in rows]

    def workers(self) -> dict[str, WorkerRow]:
        """Every registered worker, by id (no password: it is never stored)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(
                WORKERS.c.node_id, WORKERS.c.host, WORKERS.c.port, WORKERS.c.username,
                WORKERS.c.receiver, WORKERS.c.seen_ms)
                .where(WORKERS.c.group_id == self.group_id))
            return {r[0]: WorkerRow(r[0], r[1], int(r[2]), r[3], None, bool(r[4]), int(r[5]))
                    for r in rows}

    # -- the leader's writes (fenced) -----------------------------------------------------

    def put_app(self, epoch: int, name: str, text: str, children: Iterable[ChildRow],
                reason: str) -> None:
        """Stores a parent app (replacing one of that name) and its unplaced children; the
        replaced children that are not among them are retired."""
        children = list(children)
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            kept = {(c.name, c.version) for c in children}
            self._delete_app(conn, name, kept)
            for child in children:  # deployed again: its state is not to be deleted
                conn.execute(delete(RETIRED).where(and_(
                    RETIRED.c.group_id == self.group_id, RETIRED.c.name == child.name,
                    RETIRED.c.version == child.version)))
            conn.execute(insert(APPS).values(group_id=self.group_id, name=name, text=text,
                                             status="waiting", reason=reason,
                                             created_ms=self._now))
            for child in children:
                conn.execute(insert(CHILDREN).values(
                    group_id=self.group_id, name=child.name, parent=name,
                    exec_group=child.group, instance=child.instance,
                    receiver=int(child.receiver), text=child.text, version=child.version,
                    node_id=None, epoch=epoch))

    def delete_app(self, epoch: int, name: str) -> None:
        """Forgets a parent app and its children, which are retired."""
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            self._delete_app(conn, name)

    def set_status(self, epoch: int, name: str, status: str, reason: str) -> None:
        """Marks a parent app ``deployed`` or ``waiting`` (with why)."""
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            conn.execute(update(APPS).where(and_(
                APPS.c.group_id == self.group_id, APPS.c.name == name))
                .values(status=status, reason=reason))

    def place(self, epoch: int, placement: Mapping[str, str | None]) -> None:
        """Sets the worker of each child (None: unplaced), in one transaction."""
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            for child, node in placement.items():
                conn.execute(update(CHILDREN).where(and_(
                    CHILDREN.c.group_id == self.group_id, CHILDREN.c.name == child))
                    .values(node_id=node, epoch=epoch))

    def save_worker(self, epoch: int, worker: WorkerRow) -> None:
        """Registers a worker or refreshes its interface and last heartbeat (without its
        password: see the module docstring)."""
        where = and_(WORKERS.c.group_id == self.group_id, WORKERS.c.node_id == worker.node_id)
        values = {"host": worker.host, "port": worker.port, "username": worker.username,
                  "password": None, "receiver": int(worker.receiver),
                  "seen_ms": self._now}
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            if not conn.execute(update(WORKERS).where(where).values(**values)).rowcount:
                conn.execute(insert(WORKERS).values(group_id=self.group_id,
                                                    node_id=worker.node_id, **values))

    def remove_worker(self, epoch: int, node_id: str) -> None:
        """Forgets a lost worker."""
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            conn.execute(delete(WORKERS).where(and_(WORKERS.c.group_id == self.group_id,
                                                    WORKERS.c.node_id == node_id)))

    def state_deleted(self, epoch: int, child: str, version: str) -> None:
        """A worker deleted the state of a retired child: it is forgotten."""
        with self.engine.begin() as conn:
            check_fence(conn, self.group_id, epoch)
            conn.execute(delete(RETIRED).where(and_(
                RETIRED.c.group_id == self.group_id, RETIRED.c.name == child,
                RETIRED.c.version == version)))

    def _delete_app(self, conn: Connection, name: str,
                    kept: set[tuple[str, str]] | None = None) -> None:
        """Deletes the parent and its children; those not in ``kept`` (name, version) are
        retired."""
        old = conn.execute(select(CHILDREN.c.name, CHILDREN.c.version).where(and_(
            CHILDREN.c.group_id == self.group_id, CHILDREN.c.parent == name))).all()
        for child, version in old:
            if (child, version) in (kept or set()):
                continue
            gone = and_(RETIRED.c.group_id == self.group_id, RETIRED.c.name == child,
                        RETIRED.c.version == version)
            if conn.execute(select(RETIRED.c.name).where(gone)).first() is None:
                conn.execute(insert(RETIRED).values(group_id=self.group_id, name=child,
                                                    version=version, retired_ms=self._now))
        conn.execute(delete(CHILDREN).where(and_(CHILDREN.c.group_id == self.group_id,
                                                 CHILDREN.c.parent == name)))
        conn.execute(delete(APPS).where(and_(APPS.c.group_id == self.group_id,
                                             APPS.c.name == name)))
