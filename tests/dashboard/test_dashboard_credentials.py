"""The nodes' passwords in ``DASHBOARD_NODES`` (:mod:`eddy.dashboard.credentials`), on a
real SQLite, PostgreSQL and MariaDB: stored encrypted under the dashboard's key file, read
back after a restart, clear rows of an earlier eddy still used (and encrypted at start), a
row another key wrote shown with its own error while the rest work, and never a password in
the pages or the logs."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import re
import stat
import time
import uuid
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Engine, delete, insert, select, update

from eddy.config import ConfigError, parse_config
from eddy.dashboard.credentials import load_or_create_key
from eddy.dashboard.node_client import NodeClient, NodeUnreachable
from eddy.dashboard.nodes import NODES, NodeError, open_node_store
from eddy.dashboard.poller import Poller
from eddy.dashboard.settings import dashboard_settings
from eddy.store.connect import connect, jdbc_to_sqlalchemy

T = TypeVar("T")
DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}


@dataclasses.dataclass
class Db:
    """One database and the hosts this test adds (unique: the shared servers' table holds
    other tests' rows too)."""

    url: str
    engine: Engine
    run: str

    def host(self, name: str) -> str:
        return f"{name}-{self.run}.test"

    def stored(self, host: str) -> str:
        with self.engine.connect() as connection:
            return str(connection.execute(
                select(NODES.c.PASSWORD).where(NODES.c.HOST == host)).scalar_one())


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    url = f"sqlite:///{tmp_path / 'dashboard.db'}" if request.param == "sqlite" \
        else jdbc_to_sqlalchemy(DATABASES[request.param])
    made = Db(url, connect(url), uuid.uuid4().hex[:10])
    yield made
    with made.engine.begin() as connection:
        connection.execute(delete(NODES).where(NODES.c.HOST.like(f"%-{made.run}.test")))


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a thread of its own: the browser tests' Playwright keeps an event
    loop running on the main thread for the rest of the session."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _secret() -> str:
    return f"pw-{uuid.uuid4().hex}"


def test_the_password_is_stored_encrypted_and_read_back_after_a_restart(
        db: Db, tmp_path: Path) -> None:
    key = tmp_path / "security" / "eddy-dashboard-nodes.key"
    password, host = _secret(), db.host("a")
    open_node_store(db.url, key).add(host, 9443, "admin", password)
    stored = db.stored(host)
    assert stored.startswith("enc:v1:") and password not in stored
    made = key.read_bytes()
    again = open_node_store(db.url, key).get(f"{host}:9443")
    assert again is not None and (again.password, again.credentials_error) == (password, None)
    assert key.read_bytes() == made  # the same key, not a new one
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert password not in repr(again)


def test_a_clear_row_of_an_earlier_eddy_is_used_and_encrypted_at_start(
        db: Db, tmp_path: Path) -> None:
    key = tmp_path / "dashboard.key"
    running = open_node_store(db.url, key)
    password, host = _secret(), db.host("legacy")
    with db.engine.begin() as connection:  # as an earlier eddy, or an older dashboard
        connection.execute(insert(NODES).values(HOST=host, PORT=9443, USERNAME="admin",
                                                PASSWORD=password, ADDED_MS=1))
    node = running.get(f"{host}:9443")
    assert node is not None and (node.password, node.credentials_error) == (password, None)
    restarted = open_node_store(db.url, key)
    stored = db.stored(host)
    assert stored.startswith("enc:v1:") and password not in stored
    node = restarted.get(f"{host}:9443")
    assert node is not None and node.password == password


def test_a_row_another_key_wrote_is_one_node_in_error_and_the_rest_work(
        db: Db, tmp_path: Path) -> None:
    theirs, ours = _secret(), _secret()
    lost, kept = db.host("lost"), db.host("kept")
    open_node_store(db.url, tmp_path / "theirs.key").add(lost, 9443, "admin", theirs)
    store = open_node_store(db.url, tmp_path / "ours.key")
    store.add(kept, 9443, "admin", ours)
    nodes = {n.host: n for n in store.all()}  # listing does not fail
    assert nodes[kept].password == ours and nodes[kept].credentials_error is None
    broken = nodes[lost]
    assert broken.password == "" and broken.credentials_error is not None
    assert broken.credentials_error.startswith(
        f"cannot decrypt the stored credentials of node {lost}:9443")
    assert "re-add it with its password" in broken.credentials_error
    # The node is never called with an empty password, and its poll says why.
    with pytest.raises(NodeUnreachable, match="cannot decrypt"):
        _run(NodeClient(broken).request("GET", "/statistics"))
    state = _run(Poller(store.all, 5).poll(broken))
    assert not state.reachable and state.error == broken.credentials_error
    with pytest.raises(NodeError, match="remove it first"):
        store.add(lost, 9443, "admin", theirs)
    assert store.remove(f"{lost}:9443")
    store.add(lost, 9443, "admin", theirs)
    found = store.get(f"{lost}:9443")
    assert found is not None and found.password == theirs


def test_a_value_moved_to_another_row_does_not_decrypt(db: Db, tmp_path: Path) -> None:
    """A database writer who copies a node's value to a row of their own host, or points the
    row at it, gets no password sent there."""
    store = open_node_store(db.url, tmp_path / "k.key")
    victim, attacker = db.host("victim"), db.host("attacker")
    store.add(victim, 9443, "admin", _secret())
    store.add(attacker, 9443, "admin", "x")
    with db.engine.begin() as connection:
        connection.execute(update(NODES).where(NODES.c.HOST == attacker)
                           .values(PASSWORD=db.stored(victim)))
    moved = store.get(f"{attacker}:9443")
    assert moved is not None and moved.credentials_error is not None


def test_the_key_file_is_private_from_its_creation_and_made_once(tmp_path: Path) -> None:
    key = tmp_path / "security" / "eddy-dashboard-nodes.key"
    old = os.umask(0)  # a careless write would leave it readable by all
    try:
        made = load_or_create_key(key)
    finally:
        os.umask(old)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(made) == 32
    assert load_or_create_key(key) == made
    assert [p.name for p in key.parent.iterdir()] == [key.name]  # no staging file left
    key.write_text("not a key\n")
    with pytest.raises(ConfigError, match="not a key of the nodes' passwords"):
        load_or_create_key(key)  # never silently replaced: that would lose every password
    assert key.read_text() == "not a key\n"


def test_the_dashboard_shows_no_password_and_names_the_node_it_cannot_decrypt(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from fastapi.testclient import TestClient

    from eddy.dashboard.web import create_app

    caplog.set_level(logging.DEBUG)
    settings = dashboard_settings(parse_config("eddy:\n  dataDir: d\n",
                                               tmp_path / "deployment.yaml"))
    assert settings.credentials_key_file == tmp_path / "d" / "security" / \
        "eddy-dashboard-nodes.key"
    password = _secret()
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        csrf = _log_in(client)
        added = client.post("/nodes", data={"csrf": csrf, "address": "127.0.0.1:1",
                                            "username": "admin", "password": password})
        assert added.status_code == 200 and "127.0.0.1:1" in added.text
        pages = [added.text] + [client.get(p).text for p in ("/nodes", "/apps", "/ha",
                                                             "/cluster", "/editor")]
    assert stat.S_IMODE(settings.credentials_key_file.stat().st_mode) == 0o600
    engine = connect(settings.nodes_db_url)
    with engine.connect() as connection:
        assert password not in str(connection.execute(select(NODES)).all())
    elsewhere = dataclasses.replace(settings,
                                    credentials_key_file=tmp_path / "another.key")
    with TestClient(create_app(elsewhere), base_url="https://testserver") as client:
        _log_in(client)
        deadline = time.monotonic() + 30
        page = client.get("/nodes").text
        while "credentials unreadable" not in page and time.monotonic() < deadline:
            time.sleep(0.1)  # the poller's first round, bounded
            page = client.get("/nodes").text
        assert "credentials unreadable" in page
        assert "cannot decrypt the stored credentials of node 127.0.0.1:1" in page
        pages.append(page)
    for text in pages + [caplog.text]:
        assert password not in text


def _log_in(client: object) -> str:
    from fastapi.testclient import TestClient

    assert isinstance(client, TestClient)
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/login").text)
    assert token is not None
    client.post("/login", data={"csrf": token.group(1), "username": "admin",
                                "password": "admin"})
    found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/nodes").text)
    assert found is not None
    return found.group(1)

