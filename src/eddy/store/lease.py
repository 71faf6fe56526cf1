"""The minimum-HA lease: which node of a group is active, decided by the cluster database.

``cluster.config`` with ``RDBMSCoordinationStrategy`` names the database
(``strategyConfig.datasource``, WSO2's ``WSO2_CLUSTER_DB``). Two tables live there:

``EDDY_HA_LEASE``  one row per ``groupId``: ``holder`` (node id), ``token`` (that process's
                   random instance id), ``epoch``, ``renewed_ms``.
``EDDY_HA_MEMBERS`` one row per (group, node): when the node last showed up.

**Every decision is one conditional UPDATE judged by the database's clock** (``now_ms``
below is an SQL expression evaluated by the server), so hosts need no clock sync and two
nodes can never both win: the row lock serialises them and the loser's WHERE no longer
matches. The lease's sessions are bounded (:func:`eddy.store.connect.connect_bounded`) so
that a holder paused mid-renewal, its row lock held, cannot make its successor wait. The
holder renews with ``WHERE token = mine``; anyone takes over with ``WHERE renewed_ms < now -
ttl`` (``ttl = heartbeatInterval × heartbeatMaxRetry``), which bumps ``epoch``. The epoch
therefore grows on every change of holder, and it is the fencing token every write of the
active carries (:mod:`eddy.store.fence`).

A holder also watches its own deadline on its monotonic clock (duration only, no clock
sync): it treats the lease as lost when it has not renewed for ``ttl`` minus half an interval
since it *sent* its last successful renewal, which is before the database could have
expired it. Fencing makes this an optimisation: a holder that is too slow to notice (paused)
is refused where its writes land.

**Membership.** A node that joins refreshes its member row; if two *other* nodes of the
group showed up within the lease time, it is refused: minimum HA is a pair.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    MetaData,
    String,
    Table,
    Text,
    and_,
    insert,
    or_,
    literal_column,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from eddy.store.connect import connect_bounded

metadata = MetaData()
LEASES = Table("EDDY_HA_LEASE", metadata,
               Column("group_id", String(100), primary_key=True),
               Column("holder", String(200), nullable=True),
               Column("token", String(64), nullable=True),
               Column("epoch", BigInteger, nullable=False),
               Column("renewed_ms", BigInteger, nullable=False))
MEMBERS = Table("EDDY_HA_MEMBERS", metadata,
                Column("group_id", String(100), primary_key=True),
                Column("node_id", String(200), primary_key=True),
                Column("token", String(64), nullable=False),
                Column("seen_ms", BigInteger, nullable=False))
STATES = Table("EDDY_HA_NODE_STATE", metadata,
               Column("group_id", String(100), primary_key=True),
               Column("node_id", String(200), primary_key=True),
               Column("status", String(20), nullable=False),
               Column("synced", Text, nullable=False),
               Column("at_ms", BigInteger, nullable=False))
"""What each node last said of itself: its status and, as JSON ``{"revisions": {app: mirror
revision}, "lagEvents": n, "plannedApps": [app]}``, how far it pulled each app's checkpoint,
how many events the active committed past where it would resume and which apps' queries it
planned ahead (``eddy ha status`` shows them)."""
PAIR = 2


class GroupFull(RuntimeError):
    """A third live node tried to join a minimum-HA group."""


@dataclass(frozen=True)
class LeaseView:
    """The lease as one transaction saw it; times are the database's epoch milliseconds."""

    group_id: str
    holder: str | None
    epoch: int
    renewed_ms: int
    now_ms: int
    mine: bool
    members: tuple[tuple[str, int], ...] = ()
    """(node id, last seen) of every member row of the group."""

    def expired(self, ttl_ms: int) -> bool:
        """Whether the holder missed its renewals for longer than ``ttl_ms``."""
        return self.holder is None or self.now_ms - self.renewed_ms > ttl_ms


def now_ms(dialect: str) -> ColumnElement[int]:
    """The database server's clock in epoch milliseconds, as an SQL expression."""
    if dialect == "postgresql":
        sql = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    elif dialect in ("mysql", "mariadb"):
        sql = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
    else:
        sql = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
    return literal_column(f"({sql})", BigInteger)


class Lease:
    """One node's handle on its group's lease row."""

    def __init__(self, engine: Engine, group_id: str, node_id: str, ttl_ms: int) -> None:
        # Own sessions, bounded: a lease transaction left open by a paused process is
        # aborted by the server within the lease time, and a tick never waits on a row lock
        # for longer than a quarter of it (a lock timeout is a missed tick, as any database
        # error is to the callers), so a paused holder cannot stall its successor.
        self.engine = connect_bounded(engine, max(1, ttl_ms // 4), ttl_ms)
        self.group_id = group_id
        self.node_id = node_id
        self.ttl_ms = ttl_ms
        self.token = uuid.uuid4().hex
        self._now = now_ms(engine.dialect.name)
        metadata.create_all(engine, checkfirst=True)

    def join(self) -> None:
        """Records this node as a member; :class:`GroupFull` when two others are live."""
        with self.engine.begin() as conn:
            now = self._db_now(conn)
            others = conn.execute(select(MEMBERS.c.node_id).where(and_(
                MEMBERS.c.group_id == self.group_id, MEMBERS.c.node_id != self.node_id,
                MEMBERS.c.seen_ms > now - self.ttl_ms))).scalars().all()
            if len(others) >= PAIR:
                raise GroupFull(
                    f"HA group '{self.group_id}' already has two live nodes "
                    f"({', '.join(sorted(others))}); minimum HA is a pair, so node "
                    f"'{self.node_id}' is refused. Stop one of them or use another groupId.")
            self._seen(conn)

    def tick(self) -> LeaseView:
        """Renews the lease when this node holds it, takes it over when its holder let it
        expire (a new epoch); returns what the transaction saw."""
        self._ensure_row()
        with self.engine.begin() as conn:
            renewed = conn.execute(update(LEASES).where(and_(
                LEASES.c.group_id == self.group_id, LEASES.c.token == self.token))
                .values(renewed_ms=self._now)).rowcount
            if not renewed:
                conn.execute(update(LEASES).where(and_(
                    LEASES.c.group_id == self.group_id,
                    or_(LEASES.c.holder.is_(None),
                        LEASES.c.renewed_ms < self._now - self.ttl_ms)))
                    .values(holder=self.node_id, token=self.token, epoch=LEASES.c.epoch + 1,
                            renewed_ms=self._now))
            self._seen(conn)
            return self._view(conn)

    def release(self) -> None:
        """Gives the lease up at once (a clean stop): the other node need not wait out the
        lease time. Forgets this node's membership."""
        with self.engine.begin() as conn:
            conn.execute(update(LEASES).where(and_(
                LEASES.c.group_id == self.group_id, LEASES.c.token == self.token))
                .values(holder=None, token=None, renewed_ms=0))
            conn.execute(MEMBERS.delete().where(and_(
                MEMBERS.c.group_id == self.group_id, MEMBERS.c.node_id == self.node_id,
                MEMBERS.c.token == self.token)))

    def report(self, status: str, synced: dict[str, int], lag_events: int | None = None,
               planned: list[str] | None = None) -> None:
        """Records this node's status, the mirror revision it holds of each app, the
        events it is behind (None: unknown) and the apps it planned ahead (a passive)."""
        body = {"revisions": synced, "lagEvents": lag_events, "plannedApps": planned or []}
        values = {"status": status, "synced": json.dumps(body, sort_keys=True),
                  "at_ms": self._now}
        where = and_(STATES.c.group_id == self.group_id, STATES.c.node_id == self.node_id)
        with self.engine.begin() as conn:
            if not conn.execute(update(STATES).where(where).values(**values)).rowcount:
                conn.execute(insert(STATES).values(group_id=self.group_id,
                                                   node_id=self.node_id, **values))

    def view(self) -> LeaseView:
        """The lease as it is now, without changing it."""
        with self.engine.connect() as conn:
            return self._view(conn)

    # -- helpers --------------------------------------------------------------------------

    def _db_now(self, conn: Connection) -> int:
        return int(conn.execute(select(self._now)).scalar_one())

    def _ensure_row(self) -> None:
        with self.engine.begin() as conn:
            if conn.execute(select(LEASES.c.epoch).where(
                    LEASES.c.group_id == self.group_id)).first() is not None:
                return
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(LEASES).values(group_id=self.group_id, holder=None,
                                                   token=None, epoch=0, renewed_ms=0))
        except IntegrityError:
            pass  # the other node created it first

    def _seen(self, conn: Connection) -> None:
        values = {"token": self.token, "seen_ms": self._now}
        where = and_(MEMBERS.c.group_id == self.group_id, MEMBERS.c.node_id == self.node_id)
        if not conn.execute(update(MEMBERS).where(where).values(**values)).rowcount:
            conn.execute(insert(MEMBERS).values(group_id=self.group_id,
                                                node_id=self.node_id, **values))

    def _view(self, conn: Connection) -> LeaseView:
        return read_lease(conn, self.group_id, self._now, self.token)


def read_lease(conn: Connection, group_id: str, now: ColumnElement[int] | None = None,
               token: str | None = None) -> LeaseView:
    """The group's lease and members as ``conn`` sees them (for ``eddy ha status`` too)."""
    now = now if now is not None else now_ms(conn.dialect.name)
    row = conn.execute(select(LEASES.c.holder, LEASES.c.token, LEASES.c.epoch,
                              LEASES.c.renewed_ms, now).where(
        LEASES.c.group_id == group_id)).first()
    members = tuple((str(r[0]), int(r[1])) for r in conn.execute(
        select(MEMBERS.c.node_id, MEMBERS.c.seen_ms).where(MEMBERS.c.group_id == group_id)
        .order_by(MEMBERS.c.node_id)))
    if row is None:
        return LeaseView(group_id, None, 0, 0, int(conn.execute(select(now)).scalar_one()),
                         False, members)
    return LeaseView(group_id, row[0], int(row[2]), int(row[3]), int(row[4]),
                     token is not None and row[1] == token, members)


@dataclass(frozen=True)
class NodeState:
    """What a node last reported of itself (see :data:`STATES`)."""

    status: str
    revisions: dict[str, int]
    lag_events: int | None
    at_ms: int
    planned_apps: tuple[str, ...] = ()


def node_states(conn: Connection, group_id: str) -> dict[str, NodeState]:
    """The last report of each of the group's nodes."""
    rows = conn.execute(select(STATES.c.node_id, STATES.c.status, STATES.c.synced,
                               STATES.c.at_ms).where(STATES.c.group_id == group_id))
    states: dict[str, NodeState] = {}
    for node, status, synced, at_ms in rows:
        body = json.loads(synced)
        if "revisions" not in body:  # written before the lag was reported
            body = {"revisions": body, "lagEvents": None}
        lag = body.get("lagEvents")
        states[node] = NodeState(status, {k: int(v) for k, v in body["revisions"].items()},
                                 None if lag is None else int(lag), int(at_ms),
                                 tuple(str(a) for a in body.get("plannedApps") or ()))
    return states


def lease_tables_exist(engine: Engine) -> bool:
    """Whether the cluster database has the lease table (for a read-only status)."""
    from sqlalchemy import inspect

    return inspect(engine).has_table(LEASES.name)
