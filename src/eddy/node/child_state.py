"""Where a distributed worker's child apps keep their state, so that the worker a child
is moved to continues it exactly.

A distributed worker with ``state.persistence.persistenceStore: …DBPersistenceStore``
keeps each child's Spark checkpoint in the persistence database, micro-batch by
micro-batch, with the same mirror minimum HA uses (:class:`~eddy.store.revisions.
CheckpointMirror`, tables ``<table>_CHILD_FILES`` and ``<table>_CHILD_HEAD``); every worker
of the cluster names the same datasource, so none of it is on a worker's own disk.

* **Taking a child over** (it is deployed here: first placement, or moved from a lost or
  paused worker): claim the next epoch of the child's own fence
  (:func:`~eddy.store.fence.claim_epoch`) — from then on a push of the worker it ran on is
  refused, and that worker's query fails before it writes the batch — then bring the local
  checkpoint to the mirror's newest. The child resumes from the last micro-batch whose
  outputs may have left, with the same offsets, state and Spark query id, so whatever of
  that batch the old worker appended carries the same bus idempotency keys and is dropped
  as a duplicate: each output once (the argument of :mod:`eddy.node.ha`, per child).
* **Each micro-batch**, before it is computed and its outputs appended: push what changed in
  the checkpoint, fenced by the child's epoch; then commit where the mirror resumes under
  the child's mirror consumer (:func:`~eddy.node.ha_positions.mirror_consumer` of the
  child's name, the same on every worker), as minimum HA does. The child's own consumer
  position (``<child>/main``) is committed as each batch *completes*, so it can be one batch
  ahead of the mirror, whose newest batch a worker taking the child over re-runs: without
  that second position bus retention could trim the events of that batch first.

The mirror is keyed by the child's name and the digest of its text: a child whose parent
changed starts afresh (as a changed app does on one node), not from a checkpoint of other
queries. Undeploying a child keeps its mirror — the manager undeploys a child from the
worker it leaves.

* **Retiring a child** (its parent was deleted or replaced by another text):
  :meth:`ChildState.forget`, which the manager asks of any live worker (the one that ran
  the child may be dead; all share the database): claim the child's next epoch — a worker
  still running it can push nothing more — delete its mirror rows, then its fence row and
  the bus position that protected the mirror.
  A push finding no fence row is refused (:func:`~eddy.store.fence.check_fence` with
  ``create=False``), so a paused worker that resumes cannot bring the rows back, and the
  fence of a child deployed again starts above every epoch of its earlier life.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from eddy.bus import Bus, open_bus
from eddy.node.ha_positions import Positions, mirror_consumer, protect, resume_positions
from eddy.node.registry import AppRegistry
from eddy.store.fence import Fenced, claim_epoch, retire_fence
from eddy.store.revisions import CheckpointMirror

log = logging.getLogger("eddy.node.child_state")
FENCE_GROUP = "child"
"""Fence rows of children are ``child/<key>`` (beside minimum HA's ``<groupId>``)."""


class ChildState:
    """The child apps of one distributed worker, continued from the persistence database."""

    def __init__(self, engine: Engine, table: str, registry: AppRegistry) -> None:
        self.mirror = CheckpointMirror(engine, f"{table}_CHILD", FENCE_GROUP,
                                       fence_per_app=True)
        self.engine = engine
        self.registry = registry
        self._keys: dict[str, str] = {}     # child -> its mirror key (name and text digest)
        self._epochs: dict[str, int] = {}   # child -> the epoch this worker claimed
        self._protected: dict[str, Positions] = {}  # child -> its mirror consumer's positions
        self._bus: Bus | None = None  # opened on the first protect
        self._lock = threading.Lock()
        self._bus_lock = threading.Lock()
        registry.batch_hook = self._batch_hook
        registry.take_over = self.take_over

    def take_over(self, app: str, text: str) -> str:
        """Claims ``app`` for this worker and readies its checkpoint from the mirror;
        returns what the app resumes from (the registry's note)."""
        key = mirror_key(app, text)
        epoch = claim_epoch(self.engine, self.mirror.fence_group(key))
        with self._lock:
            self._keys[app], self._epochs[app] = key, epoch
            self._protected.pop(app, None)  # another worker may have moved it since
        checkpoint = self.registry.store.checkpoint_dir(app)
        if checkpoint.exists():  # this worker's own, older than the mirror or not the app's
            shutil.rmtree(checkpoint)
        head = self.mirror.pull(key, checkpoint)
        if head is None:
            note = "no state in the persistence database: starts from its bus positions"
        else:
            note = (f"continues from micro-batch {head.batch_id} of the persistence database "
                    f"(taken over at epoch {epoch})")
        log.info("child app %s: %s", app, note)
        return note

    def forget(self, app: str, version: str, positions: bool = True) -> bool:
        """Deletes the state of child ``app`` whose text has content hash ``version`` (the
        manager's SHA-256 hex) and its fence row, and with ``positions`` the bus position
        that protected that state from retention (not when a child of that name lives on
        in another version: the position is its). The child query's own position stays,
        as when an app is undeployed on one node: an app deployed again under that name
        goes on from it. True when it had state."""
        key = key_of(app, version)
        group = self.mirror.fence_group(key)
        epoch = claim_epoch(self.engine, group)  # whoever still runs it writes no more
        had = self.mirror.head(key) is not None
        self.mirror.drop(key, epoch)
        retire_fence(self.engine, group, epoch)
        with self._lock:
            if self._keys.get(app) == key:
                del self._keys[app], self._epochs[app]
        if positions:
            with self._lock:
                self._protected.pop(app, None)
            self._open_bus().remove_consumer(mirror_consumer(app))
        log.info("child app %s: state %s (its parent was deleted or changed)", app,
                 "deleted from the persistence database" if had else "was never persisted")
        return had

    def _batch_hook(self, app: str, checkpoint: Path) -> Callable[[int], None]:
        def before_write(batch_id: int) -> None:
            with self._lock:
                key, epoch = self._keys.get(app), self._epochs.get(app)
            if key is None or epoch is None:
                raise Fenced(f"child app {app} was not taken over by this worker; batch "
                             f"{batch_id} is not written")
            self.mirror.push(key, checkpoint, epoch, batch_id)
            self._protect(app, resume_positions(checkpoint))
        return before_write

    def _protect(self, app: str, positions: Positions) -> None:
        """Commits ``positions`` (where the mirror just pushed resumes) under the child's
        mirror consumer, so retention keeps every event a worker taking it over reads."""
        if not positions or self._protected.get(app) == positions:
            return
        protect(self._open_bus(), app, positions)
        self._protected[app] = positions

    def _open_bus(self) -> Bus:
        with self._bus_lock:
            if self._bus is None:
                self._bus = open_bus(self.registry.bus_url)
            return self._bus

    def close(self) -> None:
        """Closes the bus this opened (the worker stops)."""
        with self._bus_lock:
            if self._bus is not None:
                self._bus.close()
                self._bus = None


def mirror_key(app: str, text: str) -> str:
    """``<app>#<digest of its text>``, short enough for its fence row (100 characters)."""
    return key_of(app, hashlib.sha256(text.encode("utf-8")).hexdigest())


def key_of(app: str, version: str) -> str:
    """:func:`mirror_key` from the SHA-256 hex of the text (the manager's ``version``)."""
    return f"{app[:100 - len(FENCE_GROUP) - 1 - 17]}#{version[:16]}"
