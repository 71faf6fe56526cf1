"""``DBPersistenceStore`` on SQLite, PostgreSQL and MariaDB: periodic revisions are rows of
the persistence table, not folders on the node; another node (a new disk, the other node of
an HA pair) lists and restores them; a stale epoch cannot save one."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from eddy.node.persistence import RevisionStore
from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.db_revisions import DbRevisions
from eddy.store.fence import FENCE_ENV, Fenced, raise_fence

DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        yield connect(f"sqlite:///{tmp_path / 'persistence.db'}")
    else:
        yield connect(jdbc_to_sqlalchemy(DATABASES[request.param]))


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_revisions_live_in_the_database_and_restore_on_another_node(
        engine: Engine, tmp_path: Path) -> None:
    table = f"PT_{uuid.uuid4().hex[:8]}"
    here = RevisionStore(tmp_path / "a", keep=3, database=DbRevisions(engine, table))
    checkpoint = here.checkpoint_dir("App")
    (checkpoint / "spark" / "offsets").mkdir(parents=True)
    (checkpoint / "group.json").write_text('{"node": "a"}')  # node-local: never saved
    saved = []
    for batch in range(4):
        (checkpoint / "spark" / "offsets" / str(batch)).write_text(f"batch {batch}")
        saved.append(here.save("App", f"@App:name('App') -- v{batch}"))
    assert here.revisions("App") == saved[1:]  # the newest 3 are kept
    assert sorted(p.name for p in here.app_dir("App").iterdir()) == ["checkpoint"]

    there = RevisionStore(tmp_path / "b", keep=3, database=DbRevisions(engine, table))
    assert there.revisions("App") == saved[1:]
    assert there.revision_text("App", None) == (saved[-1], "@App:name('App') -- v3")
    there.load("App", saved[1])
    assert files(there.checkpoint_dir("App")) == {
        "spark/offsets/0": "batch 0", "spark/offsets/1": "batch 1"}
    assert there.checkpoint_text("App") == "@App:name('App') -- v1"
    there.clear("App", live=False)
    assert here.revisions("App") == []


def test_a_stale_epoch_cannot_save_a_revision(engine: Engine, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    table, group = f"PT_{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:10]}"
    store = RevisionStore(tmp_path, keep=2, database=DbRevisions(engine, table))
    store.checkpoint_dir("App").mkdir(parents=True)
    monkeypatch.setenv(FENCE_ENV, json.dumps({"group": group, "epoch": 1}))
    first = store.save("App", "text")
    raise_fence(engine, group, 2)  # the successor took over
    with pytest.raises(Fenced, match="epoch 1 .* is stale: epoch 2 has written here"):
        store.save("App", "text")
    assert store.revisions("App") == [first]


@pytest.mark.parametrize("url", [DATABASES["mariadb"], DATABASES["postgresql"]])
def test_the_first_fenced_save_in_a_new_database_is_not_refused(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database without the fence table yet: the first fenced save creates it before its
    own transaction begins. Made inside it (by another connection, as MySQL needs), MariaDB
    refused the save's fence check: "Table definition has changed, please retry
    transaction" (a table newer than the transaction's snapshot)."""
    from sqlalchemy import text

    from eddy.store import fence

    name = f"eddy_fence_{uuid.uuid4().hex[:8]}"
    admin = connect(jdbc_to_sqlalchemy(url)).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        engine = connect(jdbc_to_sqlalchemy(url.rsplit("/", 1)[0] + f"/{name}"))
        monkeypatch.setattr(fence, "_created", set())
        monkeypatch.setenv(FENCE_ENV, json.dumps({"group": "g", "epoch": 1}))
        store = RevisionStore(tmp_path, keep=2, database=DbRevisions(engine, "PT"))
        store.checkpoint_dir("App").mkdir(parents=True)
        first = store.save("App", "text")
        assert store.revisions("App") == [first]
        engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE {name}"))
