"""Each app's state on disk: its live Spark checkpoint and its revisions.

Layout under ``state.persistence.config.location`` (WSO2's file store keeps
``<location>/<app>/<revision>``; eddy adds the live checkpoint beside the revisions)::

    <location>/<app>/checkpoint/           the running query's Spark checkpoint
    <location>/<app>/checkpoint.siddhi     the app text that checkpoint belongs to
    <location>/<app>/<millis>__<app>/      a revision: checkpoint/ and app.siddhi

A revision is a copy of the checkpoint taken while the app's query is stopped, so it is a
consistent cut: bus offsets, commits and state store versions of the same micro-batch.
Restoring copies it back; the query then resumes from that revision's bus offsets.

With ``persistenceStore: …DBPersistenceStore`` the revisions are rows of the datasource's
table instead (:class:`eddy.store.db_revisions.DbRevisions`): the live checkpoint stays on
the node, the revisions leave it, so another node (a restarted one with a new disk, the
other node of an HA pair) lists and restores them.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eddy.store.db_revisions import DbRevisions

CHECKPOINT = "checkpoint"
APP_FILE = "app.siddhi"


class RevisionNotFound(LookupError):
    """No revision of that name (or no revision at all) exists for the app."""


class RevisionStore:
    """Revisions of every app's checkpoint, keeping the newest ``keep`` per app."""

    def __init__(self, root: Path, keep: int, database: DbRevisions | None = None) -> None:
        self.root = root
        self.keep = keep
        self.database = database
        """Where revisions go with ``DBPersistenceStore``; None: under ``root``."""
        self._lock = threading.Lock()

    def app_dir(self, app: str) -> Path:
        """``<location>/<app>``."""
        return self.root / app

    def checkpoint_dir(self, app: str) -> Path:
        """The live checkpoint of the app's streaming query."""
        return self.app_dir(app) / CHECKPOINT

    def has_checkpoint(self, app: str) -> bool:
        """Whether the app has run before and left a checkpoint."""
        checkpoint = self.checkpoint_dir(app)
        return checkpoint.is_dir() and any(checkpoint.iterdir())

    def checkpoint_text(self, app: str) -> str | None:
        """The app text the live checkpoint was made with, if recorded."""
        path = self.app_dir(app) / f"{CHECKPOINT}.siddhi"
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def record_text(self, app: str, text: str) -> None:
        """Remembers which app text the live checkpoint belongs to."""
        self.app_dir(app).mkdir(parents=True, exist_ok=True)
        _write_atomic(self.app_dir(app) / f"{CHECKPOINT}.siddhi", text)

    def revisions(self, app: str) -> list[str]:
        """The app's revisions, oldest first."""
        if self.database is not None:
            return self.database.names(app)
        pattern = re.compile(rf"(\d+)__{re.escape(app)}")
        folder = self.app_dir(app)
        found = [p.name for p in folder.iterdir()
                 if p.is_dir() and pattern.fullmatch(p.name)] if folder.is_dir() else []
        return sorted(found, key=lambda name: int(name.split("__", 1)[0]))

    def save(self, app: str, text: str) -> str:
        """Copies the live checkpoint (the query must be stopped) into a new revision."""
        with self._lock:
            revision = self._new_name(app)
            if self.database is not None:
                self.database.save(app, revision, self.checkpoint_dir(app), text, self.keep)
                return revision
            target = self.app_dir(app) / revision
            staging = target.with_name(f".{revision}.tmp")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            source = self.checkpoint_dir(app)
            if source.is_dir():
                shutil.copytree(source, staging / CHECKPOINT)
            else:
                (staging / CHECKPOINT).mkdir()
            (staging / APP_FILE).write_text(text, encoding="utf-8")
            os.replace(staging, target)
            self._prune(app)
            return revision

    def revision_text(self, app: str, revision: str | None) -> tuple[str, str]:
        """``(revision, app text)`` of a revision, the newest when ``revision`` is None."""
        names = self.revisions(app)
        if revision is None:
            if not names:
                raise RevisionNotFound(f"app '{app}' has no revisions")
            revision = names[-1]
        elif revision not in names:
            raise RevisionNotFound(f"app '{app}' has no revision '{revision}'")
        if self.database is not None:
            text = self.database.text(app, revision)
            if text is None:  # pruned by the other node meanwhile
                raise RevisionNotFound(f"app '{app}' has no revision '{revision}'")
            return revision, text
        return revision, (self.app_dir(app) / revision / APP_FILE).read_text(encoding="utf-8")

    def load(self, app: str, revision: str,
             prepare: Callable[[Path], None] | None = None) -> None:
        """Makes a revision the live checkpoint (the query must be stopped); ``prepare``
        adjusts the copy before it goes live."""
        _, text = self.revision_text(app, revision)
        with self._lock:
            source = self.app_dir(app) / revision
            staging = self.app_dir(app) / f".{CHECKPOINT}.restoring"
            shutil.rmtree(staging, ignore_errors=True)
            if self.database is not None:
                self.database.unpack(app, revision, staging)
            else:
                shutil.copytree(source / CHECKPOINT, staging)
            if prepare is not None:
                prepare(staging)
            self._discard_live(app)
            os.replace(staging, self.checkpoint_dir(app))
            self.record_text(app, text)

    def reset(self, app: str, text: str) -> str | None:
        """Keeps the live checkpoint as a revision, then empties it; returns that revision."""
        revision = None
        if self.has_checkpoint(app):
            old_text = self.checkpoint_text(app) or text
            revision = self.save(app, old_text)
        with self._lock:
            self._discard_live(app)
        self.record_text(app, text)
        return revision

    def clear(self, app: str, *, live: bool) -> None:
        """Deletes every revision of the app, and its live checkpoint when ``live``."""
        with self._lock:
            if self.database is not None:
                self.database.clear(app)
            for revision in self.revisions(app) if self.database is None else []:
                shutil.rmtree(self.app_dir(app) / revision, ignore_errors=True)
            if live:
                self._discard_live(app)

    def recover(self) -> None:
        """Finishes or undoes what a killed worker left half-done: a restore whose new
        checkpoint was complete but not yet in place is completed; partial copies and
        checkpoints on their way out are deleted."""
        if not self.root.is_dir():
            return
        for folder in (p for p in self.root.iterdir() if p.is_dir()):
            staging = folder / f".{CHECKPOINT}.restoring"
            live = folder / CHECKPOINT
            if staging.is_dir() and not live.exists():
                os.replace(staging, live)  # copied in full before the old one was moved
            for leftover in folder.glob(".*"):
                if leftover.name.endswith((".tmp", ".old", ".restoring")):
                    if leftover.is_dir():
                        shutil.rmtree(leftover, ignore_errors=True)
                    else:
                        leftover.unlink(missing_ok=True)

    def _discard_live(self, app: str) -> None:
        checkpoint = self.checkpoint_dir(app)
        if checkpoint.exists():
            trash = checkpoint.with_name(f".{CHECKPOINT}.{time.monotonic_ns()}.old")
            os.replace(checkpoint, trash)
            shutil.rmtree(trash, ignore_errors=True)

    def _new_name(self, app: str) -> str:
        """``<millis>__<app>``, later than every existing revision of the app."""
        existing = self.revisions(app)
        last = int(existing[-1].split("__", 1)[0]) if existing else 0
        return f"{max(int(time.time() * 1000), last + 1)}__{app}"

    def _prune(self, app: str) -> None:
        for revision in self.revisions(app)[:-self.keep]:
            shutil.rmtree(self.app_dir(app) / revision, ignore_errors=True)


def _write_atomic(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


class PeriodicPersistence:
    """``state.persistence`` with ``enabled: true``: a revision of every running app each
    ``intervalInMin`` minutes (the persisting itself is ``persist_all``)."""

    def __init__(self, interval_s: float, persist_all: Callable[[], None]) -> None:
        self.interval_s = interval_s
        self._persist_all = persist_all
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eddy-persistence", daemon=True)

    def start(self) -> None:
        """Starts the schedule."""
        self._thread.start()

    def stop(self) -> None:
        """Stops the schedule; a round in progress finishes."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._persist_all()
