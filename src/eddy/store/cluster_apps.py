"""The apps of a minimum-HA group, kept in the cluster database so that an app deployed to
either node (API or deployment folder) reaches the other one, and an undeploy too.

``EDDY_HA_APPS(group_id, name, text, version, deleted, sink_token)``: the app text as
deployed (with its ``${NAME}`` variables: each node fills in its own), a version that grows
with every change, a tombstone for an undeployed app, and the app's sink-id token, which
both nodes must share so that a sink replayed by the successor sends the same event ids
(:mod:`eddy.io.sink_follower`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    and_,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from eddy.store.column_types import LONG_TEXT

metadata = MetaData()
APPS = Table("EDDY_HA_APPS", metadata,
             Column("group_id", String(100), primary_key=True),
             Column("name", String(100), primary_key=True),
             Column("text", LONG_TEXT, nullable=False),
             Column("version", BigInteger, nullable=False),
             Column("deleted", Integer, nullable=False),
             Column("sink_token", String(32), nullable=False))


@dataclass(frozen=True)
class ClusterApp:
    """One app of the group as the cluster database has it."""

    name: str
    text: str | None   # None: undeployed
    version: int


class AppCatalog:
    """The group's apps in the cluster database."""

    def __init__(self, engine: Engine, group_id: str) -> None:
        self.engine = engine
        self.group_id = group_id
        metadata.create_all(engine, checkfirst=True)

    def apps(self) -> dict[str, ClusterApp]:
        """Every app the group ever had (undeployed ones with ``text`` None)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(APPS.c.name, APPS.c.text, APPS.c.version,
                                       APPS.c.deleted).where(APPS.c.group_id == self.group_id))
            return {r[0]: ClusterApp(r[0], None if r[3] else r[1], int(r[2])) for r in rows}

    def publish(self, name: str, text: str | None) -> None:
        """Records a deploy (``text``) or an undeploy (None) made on this node."""
        where = and_(APPS.c.group_id == self.group_id, APPS.c.name == name)
        values = {"text": text or "", "deleted": int(text is None)}
        for _ in range(2):
            with self.engine.begin() as conn:
                if conn.execute(update(APPS).where(where).values(
                        version=APPS.c.version + 1, **values)).rowcount:
                    return
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(APPS).values(group_id=self.group_id, name=name,
                                                     version=1, sink_token=secrets.token_hex(8),
                                                     **values))
                return
            except IntegrityError:
                continue  # the other node inserted it meanwhile: update it

    def sink_token(self, name: str) -> str:
        """The app's sink-id token, shared by both nodes (created with the app's row)."""
        with self.engine.connect() as conn:
            token = conn.execute(select(APPS.c.sink_token).where(and_(
                APPS.c.group_id == self.group_id, APPS.c.name == name))).scalar_one_or_none()
        if token is None:
            raise LookupError(f"app '{name}' is not in HA group '{self.group_id}'")
        return str(token)

    def version(self) -> int:
        """A number that changes whenever any app of the group changes."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.coalesce(func.sum(APPS.c.version), 0)).where(
                APPS.c.group_id == self.group_id)).scalar_one())
