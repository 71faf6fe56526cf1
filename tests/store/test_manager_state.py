"""The manager database (:mod:`eddy.store.manager_state`) on SQLite, PostgreSQL and MariaDB:
children of deleted or changed parents are retired until a worker deleted their state, and
no worker password is ever stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.fence import raise_fence
from eddy.store.manager_state import WORKERS, ChildRow, ManagerState, WorkerRow

DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}
EPOCH = 1


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ManagerState]:
    engine: Engine = connect(f"sqlite:///{tmp_path / 'manager.db'}") \
        if request.param == "sqlite" else connect(jdbc_to_sqlalchemy(DATABASES[request.param]))
    group = f"g-{uuid.uuid4().hex[:12]}"
    made = ManagerState(engine, group)
    raise_fence(engine, group, EPOCH)
    yield made


def _child(name: str, version: str) -> ChildRow:
    return ChildRow(name, "Parent", "group-1", 1, False, f"text of {name} {version}", version,
                    None)


def test_deleted_and_changed_children_are_retired_until_their_state_is_deleted(
        state: ManagerState) -> None:
    state.put_app(EPOCH, "Parent", "v1", [_child("A", "a1"), _child("B", "b1")], "new")
    assert state.retired() == []
    # Changed: B has another text, C is new; A stays as it was.
    state.put_app(EPOCH, "Parent", "v2", [_child("A", "a1"), _child("B", "b2"),
                                          _child("C", "c1")], "changed")
    assert state.retired() == [("B", "b1")]
    state.delete_app(EPOCH, "Parent")
    assert sorted(state.retired()) == [("A", "a1"), ("B", "b1"), ("B", "b2"), ("C", "c1")]
    # Posted again before its state was deleted: A of that text lives on, keep its state.
    state.put_app(EPOCH, "Parent", "v1", [_child("A", "a1")], "again")
    assert sorted(state.retired()) == [("B", "b1"), ("B", "b2"), ("C", "c1")]
    for child, version in state.retired():
        state.state_deleted(EPOCH, child, version)
    assert state.retired() == []


def test_no_worker_password_is_stored(state: ManagerState) -> None:
    state.save_worker(EPOCH, WorkerRow("w1", "host-1", 9443, "admin", "s3cret", False))
    assert state.workers()["w1"] == WorkerRow("w1", "host-1", 9443, "admin", None, False,
                                              state.workers()["w1"].seen_ms)
    with state.engine.connect() as conn:
        stored = conn.execute(select(WORKERS.c.password).where(
            WORKERS.c.group_id == state.group_id)).scalars().all()
    assert stored == [None]
