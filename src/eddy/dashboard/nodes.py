"""The nodes the dashboard watches, kept in the dashboard's database (``DASHBOARD_NODES``).

A node is added as WSO2's "Add worker" does: host, port and the credentials the dashboard
uses to call its API. The table is created when missing, so a restarted dashboard finds
its nodes again.

The password is stored encrypted (:mod:`eddy.dashboard.credentials`). Rows an earlier eddy
wrote in clear are read as they are and encrypted when a store opens the table (at the
dashboard's start), so clear passwords do not stay in the database. A row this dashboard's
key cannot decrypt does not stop the others: its node carries the error and is never called.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    MetaData,
    Row,
    String,
    Table,
    UniqueConstraint,
    delete,
    insert,
    select,
    update,
)

from eddy.dashboard.credentials import (
    PREFIX,
    CredentialCipher,
    CredentialError,
    load_or_create_key,
)
from eddy.store import connect

log = logging.getLogger("eddy.dashboard")
_metadata = MetaData()
PASSWORD_LENGTH = 255
"""The column's length; the encrypted value of a longer password than
:meth:`CredentialCipher.max_password_bytes` of it would not fit."""
NODES = Table("DASHBOARD_NODES", _metadata,
              Column("ID", Integer, primary_key=True, autoincrement=True),
              Column("HOST", String(255), nullable=False),
              Column("PORT", Integer, nullable=False),
              Column("USERNAME", String(255), nullable=False),
              Column("PASSWORD", String(PASSWORD_LENGTH), nullable=False),
              Column("ADDED_MS", BigInteger, nullable=False),
              UniqueConstraint("HOST", "PORT", name="DASHBOARD_NODES_ADDRESS"))
_HOST = re.compile(r"^[A-Za-z0-9.\-:\[\]]{1,253}$")


class NodeError(ValueError):
    """A node that cannot be added: bad address, or added already."""


@dataclass(frozen=True)
class Node:
    """One watched node; ``key`` (``host:port``) names it in URLs and pages.
    ``credentials_error`` says why its stored password cannot be read (then it is empty)."""

    id: int
    host: str
    port: int
    username: str
    password: str = field(repr=False)
    credentials_error: str | None = None

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


def open_node_store(db_url: str, key_file: Path) -> NodeStore:
    """The nodes of the database at ``db_url``, their passwords under the key in
    ``key_file`` (made on first use)."""
    return NodeStore(connect(db_url), CredentialCipher(load_or_create_key(key_file)))


class NodeStore:
    """The ``DASHBOARD_NODES`` table of one database."""

    def __init__(self, engine: Engine, cipher: CredentialCipher) -> None:
        self.engine = engine
        self.cipher = cipher
        _metadata.create_all(engine, checkfirst=True)
        self._encrypt_clear_rows()

    def all(self) -> list[Node]:
        """Every node, in the order they were added."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(NODES).order_by(NODES.c.ID)).all()
        return [self._node(r) for r in rows]

    def _node(self, row: Row[Any]) -> Node:
        """The node of a row; one whose password cannot be decrypted carries the reason."""
        try:
            password = self.cipher.open(row.PASSWORD, row.HOST, row.PORT, row.USERNAME)
        except CredentialError as error:
            return Node(row.ID, row.HOST, row.PORT, row.USERNAME, "", str(error))
        return Node(row.ID, row.HOST, row.PORT, row.USERNAME, password)

    def get(self, key: str) -> Node | None:
        """The node named ``host:port``, or None."""
        return next((n for n in self.all() if n.key == key), None)

    def add(self, host: str, port: int, username: str, password: str) -> Node:
        """Adds a node; :class:`NodeError` when one at that address exists."""
        found = self.get(f"{host}:{port}")
        if found is not None:
            hint = " (remove it first to give it new credentials)" \
                if found.credentials_error else ""
            raise NodeError(f"{host}:{port} is already added{hint}")
        longest = CredentialCipher.max_password_bytes(PASSWORD_LENGTH)
        if len(password.encode("utf-8")) > longest:
            raise NodeError(f"the password of {host}:{port} is too long (at most {longest} "
                            f"bytes can be stored encrypted)")
        with self.engine.begin() as connection:
            connection.execute(insert(NODES).values(
                HOST=host, PORT=port, USERNAME=username,
                PASSWORD=self.cipher.seal(password, host, port, username),
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

    def _encrypt_clear_rows(self) -> None:
        """Encrypts the passwords an earlier eddy stored in clear (the update matches only
        a row still in clear, so a concurrent start does not encrypt twice)."""
        clear = ~NODES.c.PASSWORD.startswith(PREFIX)
        with self.engine.begin() as connection:
            encrypted = 0
            for row in connection.execute(select(NODES).where(clear)).all():
                sealed = self.cipher.seal(row.PASSWORD, row.HOST, row.PORT, row.USERNAME)
                if len(sealed) > PASSWORD_LENGTH:
                    log.warning("node %s:%s: its password is too long to store encrypted; "
                                "it stays in clear until the node is re-added with a shorter "
                                "one", row.HOST, row.PORT)
                    continue
                encrypted += connection.execute(
                    update(NODES).where(NODES.c.ID == row.ID, clear)
                    .values(PASSWORD=sealed)).rowcount
        if encrypted:
            log.info("encrypted the stored passwords of %d node(s)", encrypted)
