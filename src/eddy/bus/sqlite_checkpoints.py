"""The SQLite bus's WAL checkpoints, taken on a thread beside the writer.

In WAL mode a commit appends pages to the ``-wal`` file; a checkpoint copies them into the
database file. SQLite's automatic checkpoint runs inside the commit that crosses its
threshold (1,000 pages), so with appends of megabytes — a micro-batch's outputs — nearly
every commit also copies the pages and syncs the file: measured with 200,000 four-column
rows per append, 63–66 ms an append against 29–33 ms without it. The writer's connection
therefore turns the automatic checkpoint off and a :class:`Checkpointer` runs a ``PASSIVE``
checkpoint on its own connection after the writer's commits, so the copy overlaps the
writer's next work instead of delaying its caller (a sink's micro-batch). ``PASSIVE`` waits
for no reader or writer; what a reader still needs stays in the WAL until the next one.
Durability is unchanged: a commit is in the WAL before it returns, whatever the
checkpoint's progress.

A WAL starts again from its beginning only when a writer finds it wholly checkpointed; a
writer that appends back to back (an ingest at full rate) can always find the thread half
way, and the file would grow without end. Past :data:`WAL_LIMIT_BYTES` the writer
therefore checkpoints and truncates the WAL itself, as the automatic checkpoint would.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_CLOSE_WAIT_S = 5.0
WAL_LIMIT_BYTES = 64 * 1024 * 1024
"""The WAL's size past which the writer checkpoints in its own commit."""


class Checkpointer:
    """Checkpoints one database's WAL whenever :meth:`written` was called since the last
    checkpoint; a daemon thread with its own connection, started on the first call."""

    def __init__(self, path: Path, busy_timeout_ms: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._pending = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def written(self, conn: sqlite3.Connection) -> None:
        """Notes a commit of ``conn`` (the writer's, outside a transaction) that changed
        rows: the WAL has pages to copy."""
        try:
            oversized = os.path.getsize(f"{self.path}-wal") > WAL_LIMIT_BYTES
        except OSError:
            oversized = False
        if oversized:  # the thread fell behind a writer that never pauses
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                return
            except sqlite3.Error as error:  # the commit stands: never fail its caller
                log.warning("bus %s: WAL checkpoint failed: %s", self.path, error)
        with self._lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name=f"eddy-bus-checkpoint-{self.path.name}")
                self._thread.start()
        self._pending.set()

    def close(self) -> None:
        """Stops the thread (a checkpoint under way completes; SQLite checkpoints what is
        left when the database's last connection closes)."""
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._pending.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(_CLOSE_WAIT_S)

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000,
                               isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            while True:
                self._pending.wait()
                self._pending.clear()
                if self._stopping:
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as error:  # retried after the next commit
                    log.warning("bus %s: WAL checkpoint failed: %s", self.path, error)
        finally:
            conn.close()
