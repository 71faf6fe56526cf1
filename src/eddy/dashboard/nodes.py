"""The nodes the dashboard watches, kept in the dashboard's database (``DASHBOARD_NODES``).

A node is added as WSO2's "Add worker" does: host, port and the credentials the dashboard
uses to call its API. The table is created when missing, so a restarted dashboard finds
its nodes again.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    delete,
    insert,
    select,
)

_metadata = MetaData()
NODES = Table("DASHBOARD_NODES", _metadata,
              Column("ID", Integer, primary_key=True, autoincrement=True),
              Column("HOST", String(255), nullable=False),
              Column("PORT", Integer, nullable=False),
              Column("USERNAME", String(255), nullable=False),
              Column("PASSWORD", String(255), nullable=False),
              Column("ADDED_MS", BigInteger, nullable=False),
              UniqueConstraint("HOST", "PORT", name="DASHBOARD_NODES_ADDRESS"))
_HOST = re.compile(r"^[A-Za-z0-9.\-:\[\]]{1,253}$")


class NodeError(ValueError):
    """A node that cannot be added: bad address, or added already."""


@dataclass(frozen=True)
class Node:
    """One watched node; ``key`` (``host:port``) names it in URLs and pages."""

    id: int
    host: str
    port: int
    username: str
    password: str

    @property
    def key(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"


def parse_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``host:port``; :class:`NodeError` says what is wrong."""
    host, sep, port = address.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise NodeError(f"'{address}' is not host:port (e.g. 127.0.0.1:9443)")
    if not _HOST.match(host):
        raise NodeError(f"'{host}' is not a host name or address")
    return host, int(port)


class NodeStore:
    """The ``DASHBOARD_NODES`` table of one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        _metadata.create_all(engine, checkfirst=True)

    def all(self) -> list[Node]:
        """Every node, in the order they were added."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(NODES).order_by(NODES.c.ID)).all()
        return [Node(r.ID, r.HOST, r.PORT, r.USERNAME, r.PASSWORD) for r in rows]

    def get(self, key: str) -> Node | None:
        """The node named ``host:port``, or None."""
        return next((n for n in self.all() if n.key == key), None)

    def add(self, host: str, port: int, username: str, password: str) -> Node:
        """Adds a node; :class:`NodeError` when one at that address exists."""
        if any(n.host == host and n.port == port for n in self.all()):
            raise NodeError(f"{host}:{port} is already added")
        with self.engine.begin() as connection:
            connection.execute(insert(NODES).values(
                HOST=host, PORT=port, USERNAME=username, PASSWORD=password,
                ADDED_MS=int(time.time() * 1000)))
        node = self.get(f"{host}:{port}")
        assert node is not None
        return node

    def remove(self, key: str) -> bool:
        """Removes the node named ``host:port``; whether there was one."""
        node = self.get(key)
        if node is None:
            return False
        with self.engine.begin() as connection:
            connection.execute(delete(NODES).where(NODES.c.ID == node.id))
        return True
