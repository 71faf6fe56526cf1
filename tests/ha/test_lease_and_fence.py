"""The lease, the fence and the checkpoint mirror on SQLite, PostgreSQL and MariaDB: one
holder at a time judged by the database's clock, an epoch per change of holder, a third
node refused, stale writes refused in their own transaction."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.exc import OperationalError

from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.fence import (
    FENCES,
    Fenced,
    check_fence,
    claim_epoch,
    raise_fence,
    retire_fence,
)
from eddy.store.lease import LEASES, GroupFull, Lease
from eddy.store.revisions import CheckpointMirror

DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        yield connect(f"sqlite:///{tmp_path / 'cluster.db'}")
    else:
        yield connect(jdbc_to_sqlalchemy(DATABASES[request.param]))


def group() -> str:
    return f"g-{uuid.uuid4().hex[:12]}"


def test_one_holder_and_a_new_epoch_on_every_change(engine: Engine) -> None:
    name = group()
    a, b = Lease(engine, name, "a", ttl_ms=600), Lease(engine, name, "b", ttl_ms=600)
    first = a.tick()
    assert first.mine and first.holder == "a" and first.epoch == 1
    seen_by_b = b.tick()
    assert not seen_by_b.mine and seen_by_b.holder == "a"
    assert a.tick().epoch == 1  # renewing keeps the epoch
    deadline = time.monotonic() + 10
    while not (view := b.tick()).mine:  # a stops renewing: b gets it once it expired
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert view.epoch == 2 and view.holder == "b"
    assert view.now_ms - first.renewed_ms > 600  # judged by the database's clock
    late = a.tick()
    assert not late.mine and late.holder == "b"
    b.release()
    again = a.tick()
    assert again.mine and again.epoch == 3


@pytest.mark.parametrize("database", sorted(DATABASES))
def test_a_holder_paused_mid_renewal_does_not_stall_its_successor(database: str) -> None:
    """The holder's renewal has locked the lease row and then stops (its process paused
    between the UPDATE and the COMMIT): the database aborts that idle transaction within the
    lease time, so the successor takes the expired lease instead of waiting for the paused
    process (before the bound, MariaDB made it wait 50 s and then failed the tick)."""
    engine = connect(jdbc_to_sqlalchemy(DATABASES[database]))
    name, ttl_ms = group(), 1000
    holder, successor = Lease(engine, name, "a", ttl_ms), Lease(engine, name, "b", ttl_ms)
    assert holder.tick().mine
    paused = holder.engine.connect()
    paused.begin()
    paused.execute(update(LEASES).where(LEASES.c.group_id == name)
                   .values(renewed_ms=LEASES.c.renewed_ms + 1))
    started = time.monotonic()
    try:
        while True:
            try:
                view = successor.tick()
            except OperationalError:  # the lock wait's bound: a missed tick
                view = None
            if view is not None and view.mine:
                break
            assert time.monotonic() - started < 15, "the successor waited on the paused holder"
            time.sleep(0.1)
        assert view.epoch == 2
    finally:
        paused.invalidate()
        paused.close()


@pytest.mark.parametrize("database", sorted(DATABASES))
def test_a_holder_paused_mid_push_does_not_stall_its_successor(database: str,
                                                               tmp_path: Path) -> None:
    """The active's checkpoint push has locked the fence row and its app's head row and then
    stops (its process paused before the COMMIT): the mirror's sessions are bounded by the
    lease, so the database aborts that push and the successor raises the fence and pushes
    within the lease time. Unbounded, the successor's takeover waited until the paused
    process was continued (found by a SIGSTOP test that waited 60 s for the takeover)."""
    engine = connect(jdbc_to_sqlalchemy(DATABASES[database]))
    name, table, lease_ms = group(), f"P_{uuid.uuid4().hex[:8]}", 1000
    root = tmp_path / "checkpoint"
    (root / "offsets").mkdir(parents=True)
    (root / "offsets" / "0").write_text("v1")
    old = CheckpointMirror(engine, table, name, lease_ms=lease_ms)
    assert old.push("app", root, epoch=1, batch_id=0) == 1
    paused = old.engine.connect()
    paused.begin()
    check_fence(paused, name, 1)  # what a push does first
    paused.execute(update(old.heads).where(old.heads.c.app == "app").values(batch_id=1))
    new = CheckpointMirror(engine, table, name, lease_ms=lease_ms)
    took: list[float] = []

    def take_over() -> None:
        started = time.monotonic()
        while True:
            try:
                raise_fence(new.engine, name, 2)
                assert new.push("app", root, epoch=2, batch_id=1) == 2
                took.append(time.monotonic() - started)
                return
            except OperationalError:  # the lock wait's bound: tried again, as a tick does
                if time.monotonic() - started > 30:
                    return
                time.sleep(0.1)

    successor = threading.Thread(target=take_over, daemon=True)
    successor.start()
    try:
        successor.join(15)
        assert took, "the successor waited on the paused push"
        assert took[0] < 10 * lease_ms / 1000
    finally:
        paused.invalidate()
        paused.close()
        successor.join(60)
    head = new.head("app")
    assert head is not None and (head.rev, head.epoch, head.batch_id) == (2, 2, 1)


def test_a_third_live_node_is_refused_with_a_clear_message(engine: Engine) -> None:
    name = group()
    Lease(engine, name, "a", 5000).join()
    Lease(engine, name, "b", 5000).join()
    Lease(engine, name, "a", 5000).join()  # a restarted member is no third node
    with pytest.raises(GroupFull, match=f"HA group '{name}' already has two live nodes "
                                        r"\(a, b\).*node 'c' is refused"):
        Lease(engine, name, "c", 5000).join()


def test_a_stale_epoch_cannot_push_a_checkpoint(engine: Engine, tmp_path: Path) -> None:
    name, table = group(), f"P_{uuid.uuid4().hex[:8]}"
    active = tmp_path / "active"
    (active / "spark" / "offsets").mkdir(parents=True)
    (active / "spark" / "offsets" / "0").write_text("v1\n{}\n{\"t\":[5]}")
    (active / "group.json").write_text("{}")
    old = CheckpointMirror(engine, table, name)
    assert old.push("app", active, epoch=1, batch_id=0) == 1
    (active / "spark" / "offsets" / "1").write_text("v1\n{}\n{\"t\":[9]}")
    assert old.push("app", active, epoch=1, batch_id=1) == 2
    passive = tmp_path / "passive"
    new = CheckpointMirror(engine, table, name)
    head = new.pull("app", passive)
    assert head is not None and (head.rev, head.epoch, head.batch_id) == (2, 1, 1)
    assert (passive / "spark" / "offsets" / "1").read_text() == "v1\n{}\n{\"t\":[9]}"
    raise_fence(engine, name, 2)  # the successor takes over
    (active / "spark" / "offsets" / "2").write_text("stale")
    with pytest.raises(Fenced, match="epoch 1 .* is stale: epoch 2 has written here"):
        old.push("app", active, epoch=1, batch_id=2)
    assert new.pull("app", passive, head.rev) == head  # nothing of the stale push landed
    assert not (passive / "spark" / "offsets" / "2").exists()
    (passive / "spark" / "offsets" / "0").unlink()  # Spark cleaned an old batch up
    (passive / "spark" / "commits").mkdir()
    (passive / "spark" / "commits" / "1").write_text("v1")
    assert new.push("app", passive, epoch=2, batch_id=2) == 3
    follower = tmp_path / "follower"
    follower.mkdir()
    (follower / "group.json").write_text('{"mine": 1}')  # the follower's own claim
    assert CheckpointMirror(engine, table, name).pull("app", follower) is not None
    # group.json is node-local (the digest of the app after ${VAR} substitution): never
    # mirrored, and a pull leaves the follower's own claim alone.
    assert sorted(p.relative_to(follower).as_posix() for p in follower.rglob("*")
                  if p.is_file()) == ["group.json", "spark/commits/1", "spark/offsets/1"]
    assert (follower / "group.json").read_text() == '{"mine": 1}'


def test_a_child_taken_over_shuts_out_the_worker_it_ran_on(engine: Engine,
                                                           tmp_path: Path) -> None:
    """Distributed children: each has its own fence; claiming the next epoch refuses the
    pushes of the worker the child ran on, and leaves the other children alone."""
    name, table = group(), f"P_{uuid.uuid4().hex[:8]}"
    checkpoint = tmp_path / "w1"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1")
    w1 = CheckpointMirror(engine, table, name, fence_per_app=True)
    first = claim_epoch(engine, w1.fence_group("child-a"))
    other = claim_epoch(engine, w1.fence_group("child-b"))
    assert first > 1 and other > 1  # a fence row starts at the database's clock (ms)
    w1.push("child-a", checkpoint, first, 0)
    w1.push("child-b", checkpoint, other, 0)
    w2 = CheckpointMirror(engine, table, name, fence_per_app=True)
    moved = claim_epoch(engine, w2.fence_group("child-a"))  # w2 takes child-a over
    assert moved == first + 1
    with pytest.raises(Fenced):
        w1.push("child-a", checkpoint, first, 1)
    assert w1.push("child-b", checkpoint, other, 1) == 2  # another child: not fenced
    taken = w2.pull("child-a", tmp_path / "w2")
    assert taken is not None and taken.batch_id == 0
    assert w2.push("child-a", tmp_path / "w2", moved, 1) == 2


def test_a_retired_child_leaves_no_rows_and_its_old_holders_stay_shut_out(
        engine: Engine, tmp_path: Path) -> None:
    """A child whose parent was deleted (:meth:`eddy.node.child_state.ChildState.forget`):
    claim, drop the mirror, retire the fence row. Nothing of it is left, a push of a
    worker that still runs it is refused instead of bringing the rows back, and the child
    deployed again starts above every epoch of its earlier life."""
    name, table = group(), f"P_{uuid.uuid4().hex[:8]}"
    checkpoint = tmp_path / "w1"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1")
    mirror = CheckpointMirror(engine, table, name, fence_per_app=True)
    fence = mirror.fence_group("child-a")
    running = claim_epoch(engine, fence)
    mirror.push("child-a", checkpoint, running, 0)
    retiring = claim_epoch(engine, fence)
    mirror.drop("child-a", retiring)
    retire_fence(engine, fence, retiring)
    assert mirror.head("child-a") is None
    with engine.connect() as conn:
        assert conn.execute(select(FENCES).where(FENCES.c.group_id == fence)).first() is None
    (checkpoint / "offsets" / "1").write_text("v2")
    for epoch in (running, retiring):  # a paused worker that resumes
        with pytest.raises(Fenced, match="retired"):
            mirror.push("child-a", checkpoint, epoch, 1)
    assert mirror.head("child-a") is None
    again = claim_epoch(engine, fence)
    assert again > retiring
    assert mirror.push("child-a", checkpoint, again, 0) == 1
