"""``DBPersistenceStore``: each app's checkpoint kept in ``PERSISTENCE_DB``, micro-batch by
micro-batch, fenced by the lease epoch.

WSO2 SP writes a GZIP'd snapshot per app every ``intervalInMin`` and replays the events the
passive buffered since. eddy's state *is* the app's Spark checkpoint (bus offsets, commits,
state store versions), and the bus keeps every event, so the database keeps a mirror of
that checkpoint directory, brought up to date in the driver when each micro-batch starts,
**before** it is computed (its table writes) and its outputs leave
(:meth:`CheckpointMirror.push`):

``<table>_FILES``  (app, path, rev, body): one row per checkpoint file; a push writes the
                   files that are new or changed since the last one and deletes the rows
                   of files Spark has cleaned up.
``<table>_HEAD``   (app, rev, epoch, batch_id, written_ms): how far the mirror is.

Each push is one transaction that checks the fence (:func:`eddy.store.fence.check_fence`)
before it touches a row another writer uses: an old active's push after its successor
raised the fence is refused and rolls back, and since the push comes before the batch's
rows and outputs are written, the old active's query fails before it writes them.

Why per batch and before the writes: the mirror then always holds the offset log of every
batch whose outputs or table rows may have reached a sink. A successor that resumes from it
re-runs the newest batch with *the same offsets*, the same state and the same Spark query
id, so its outputs carry the same idempotency keys as whatever the old active appended of
them, and the bus drops the copies (see :mod:`eddy.node.ha` for the whole argument).

The passive follows the mirror with :meth:`CheckpointMirror.pull` into its own (stopped)
checkpoint folder, so a takeover only fetches the last few files.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    MetaData,
    String,
    Table,
    and_,
    delete,
    func,
    insert,
    select,
    update,
)

from eddy.store.column_types import LONG_BLOB
from eddy.store.connect import connect_bounded
from eddy.store.fence import check_fence, create_fence

Manifest = dict[str, tuple[int, int]]  # relative path -> (size, mtime_ns)


@dataclass(frozen=True)
class MirrorHead:
    """How far an app's mirror is: its revision counter, the epoch and micro-batch of the
    push that wrote it, and when (database clock of the writer's transaction, ms)."""

    rev: int
    epoch: int
    batch_id: int
    written_ms: int


# The engine's claim on a checkpoint (``group.json``: group name and the digest of the app
# text *after* ``${VAR}`` substitution). It is each node's own: the two nodes of a pair run
# the same stored app, but its variables (an HTTP source's port, a host name) may differ per
# node, so a mirrored claim would make the successor refuse the checkpoint it took over.
NODE_LOCAL = frozenset({"group.json"})


def local_manifest(root: Path) -> Manifest:
    """Every file under ``root`` (hidden files, temporary copies and the node-local claim
    excluded)."""
    found: Manifest = {}
    if not root.is_dir():
        return found
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith(".") or name.endswith(".tmp") or name in NODE_LOCAL:
                continue
            path = Path(folder) / name
            try:
                stat = path.stat()
            except FileNotFoundError:  # cleaned up by Spark meanwhile
                continue
            found[path.relative_to(root).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return found


def _checksum(path: Path) -> Path:
    """Hadoop's checksum file of ``path``: stale once the file changes, and then it fails
    Spark's read (a missing one is fine), so it is never mirrored and dropped on a pull."""
    return path.with_name(f".{path.name}.crc")


class CheckpointMirror:
    """The checkpoints of one HA group's apps in a persistence database."""

    def __init__(self, engine: Engine, table: str, group_id: str,
                 fence_per_app: bool = False, lease_ms: int | None = None) -> None:
        """``fence_per_app``: each app has its own fence, ``<group_id>/<app>`` (a
        distributed child app moves between workers on its own), made only by
        :func:`~eddy.store.fence.claim_epoch` — a push finding none is refused, as the
        app's state was retired; else one per group.

        ``lease_ms`` (minimum HA) bounds the mirror's sessions as the lease's are
        (:func:`~eddy.store.connect.connect_bounded`): a push of an active paused half-way
        (SIGSTOP, a VM freeze) holds the fence row and the app's head row locked, so the
        server aborts it within the lease time, and a successor raising the fence through
        :attr:`engine` waits a quarter of it at most (then tries again) instead of waiting
        until the paused process is continued.

        That bound ends an idle transaction, not one whose client stopped half-way through
        sending a statement: PostgreSQL waits for the rest of the message (a paused node held
        its successor off for a minute so, in a many-row insert). So a push sends the file
        bodies first, as rows under names of its own (a random prefix and the path) that no
        other writer touches, and only then, in small statements, checks the fence, moves
        the head and renames its rows over the old ones. Stopped while sending the bodies
        it holds nothing a successor needs; stopped later, it is idle and the server ends
        it. Its rows are renamed in the same transaction, so a reader
        never sees a staged name."""
        if lease_ms is not None:
            engine = connect_bounded(engine, max(1, lease_ms // 4), lease_ms)
        self.engine = engine
        self.group_id = group_id
        self.fence_per_app = fence_per_app
        meta = MetaData()
        self.files = Table(f"{table}_FILES", meta,
                           Column("app", String(100), primary_key=True),
                           Column("path", String(400), primary_key=True),
                           Column("rev", BigInteger, nullable=False),
                           Column("body", LONG_BLOB, nullable=False))
        self.heads = Table(f"{table}_HEAD", meta,
                           Column("app", String(100), primary_key=True),
                           Column("rev", BigInteger, nullable=False),
                           Column("epoch", BigInteger, nullable=False),
                           Column("batch_id", BigInteger, nullable=False),
                           Column("written_ms", BigInteger, nullable=False))
        meta.create_all(engine, checkfirst=True)
        create_fence(engine)
        self._pushed: dict[str, Manifest] = {}

    def fence_group(self, app: str) -> str:
        """The fence row the app's pushes check."""
        return f"{self.group_id}/{app}"[:100] if self.fence_per_app else self.group_id

    def head(self, app: str) -> MirrorHead | None:
        """The app's mirror head, None when nothing was pushed."""
        with self.engine.connect() as conn:
            row = conn.execute(select(self.heads.c.rev, self.heads.c.epoch,
                                      self.heads.c.batch_id, self.heads.c.written_ms)
                               .where(self.heads.c.app == app)).first()
        return MirrorHead(*map(int, row)) if row is not None else None

    def push(self, app: str, root: Path, epoch: int, batch_id: int) -> int:
        """Writes what changed under ``root`` since the last push; returns the new revision.
        :class:`~eddy.store.fence.Fenced` (nothing written) when ``epoch`` is stale."""
        from eddy.store.lease import now_ms

        now = local_manifest(root)
        before = self._pushed.get(app)
        if before is None:  # first push of this process: compare with what the DB holds
            before = {path: (-1, -1) for path in self._paths(app)}
        changed = [p for p, meta in now.items() if before.get(p) != meta]
        gone = [p for p in before if p not in now]
        bodies: list[tuple[str, bytes]] = []
        for path in changed:
            try:
                bodies.append((path, (root / path).read_bytes()))
            except FileNotFoundError:
                gone.append(path)
                now.pop(path, None)
        staged = f"#{uuid.uuid4().hex[:16]}/"  # sorts before every checkpoint path
        with self.engine.begin() as conn:
            # The bodies first, under names no other writer uses: a push stopped while it
            # sends them holds no row its successor needs (see the class docstring).
            if bodies:
                conn.execute(insert(self.files), [{"app": app, "path": staged + path,
                                                   "rev": 0, "body": body}
                                                  for path, body in bodies])
            # Then the rows others write, in small statements, the fence first.
            check_fence(conn, self.fence_group(app), epoch, create=not self.fence_per_app)
            head = conn.execute(select(self.heads.c.rev).where(self.heads.c.app == app)
                                ).scalar_one_or_none()
            rev = (head or 0) + 1
            stamp = {"rev": rev, "epoch": epoch, "batch_id": batch_id,
                     "written_ms": now_ms(conn.dialect.name)}
            if head is None:
                conn.execute(insert(self.heads).values(app=app, **stamp))
            else:
                conn.execute(update(self.heads).where(self.heads.c.app == app).values(**stamp))
            if gone or bodies:
                conn.execute(delete(self.files).where(and_(
                    self.files.c.app == app,
                    self.files.c.path.in_([p for p, _ in bodies] + gone))))
            if bodies:
                conn.execute(update(self.files).where(and_(
                    self.files.c.app == app, self.files.c.path.startswith(staged)))
                    .values(path=func.substr(self.files.c.path, len(staged) + 1), rev=rev))
        self._pushed[app] = now
        return rev

    def pull(self, app: str, root: Path, since_rev: int = 0) -> MirrorHead | None:
        """Brings ``root`` (a stopped checkpoint) up to the mirror: files written after
        ``since_rev`` are fetched, local files the mirror no longer has are deleted. Returns
        the head pulled, None when the mirror has nothing for the app."""
        with self.engine.connect() as conn:
            row = conn.execute(select(self.heads.c.rev, self.heads.c.epoch,
                                      self.heads.c.batch_id, self.heads.c.written_ms)
                               .where(self.heads.c.app == app)).first()
            if row is None:
                return None
            head = MirrorHead(*map(int, row))
            if head.rev <= since_rev:
                return head
            fresh = conn.execute(select(self.files.c.path, self.files.c.body).where(and_(
                self.files.c.app == app, self.files.c.rev > since_rev,
                self.files.c.rev <= head.rev))).all()
            keep = set(conn.execute(select(self.files.c.path).where(
                self.files.c.app == app)).scalars())
        for path, body in fresh:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = target.with_name(f".{target.name}.pull.tmp")
            staging.write_bytes(body)
            os.replace(staging, target)
            _checksum(target).unlink(missing_ok=True)  # of the file's local content
        for path in local_manifest(root):
            if path not in keep:
                (root / path).unlink(missing_ok=True)
                _checksum(root / path).unlink(missing_ok=True)
        self._pushed.pop(app, None)
        return head

    def drop(self, app: str, epoch: int) -> None:
        """Forgets the app's checkpoint (it was undeployed), fenced like a push."""
        with self.engine.begin() as conn:
            check_fence(conn, self.fence_group(app), epoch, create=not self.fence_per_app)
            conn.execute(delete(self.files).where(self.files.c.app == app))
            conn.execute(delete(self.heads).where(self.heads.c.app == app))
        self._pushed.pop(app, None)

    def _paths(self, app: str) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(self.files.c.path).where(
                self.files.c.app == app)).scalars())
