"""Minimum HA: the checkpoints' side of a role keeper (:mod:`eddy.node.ha`).

The active pushes each app's checkpoint to the mirror in ``PERSISTENCE_DB`` as a micro-batch
starts; this part of the keeper does the rest with that mirror:

* **Passive**: every poll it pulls each app's newest checkpoint into the node's own
  checkpoint folder and measures how far the events it would resume from are behind the
  active's committed bus positions (``lag_events``); ``in_sync`` only once every app of the
  group is deployed here as passive (or faulty, as it is on the active) — a node whose Spark
  is still starting could not take over yet.
* **Takeover and arming**: :meth:`MirrorFollower.pull` brings one app's checkpoint to the
  newest, or removes it when the mirror has none (the app then starts from its committed bus
  positions: a local checkpoint is not the group's); ``pulled`` says which revision each
  app's checkpoint holds, so the keeper can tell whether an armed app is still current.
* **Active**: the positions each app's last push resumes from are committed on the bus, so
  retention keeps what a successor would read (:mod:`eddy.node.ha_positions`); an undeployed
  app's mirror is dropped, so it does not come back as the state of a later app of that name.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from eddy.bus import Bus, open_bus
from eddy.node.deployment import DeploymentFolder
from eddy.node.ha_positions import Positions, lag_events, protect, resume_positions
from eddy.node.registry import AppRegistry
from eddy.store.fence import Fenced
from eddy.store.lease import Lease
from eddy.store.revisions import CheckpointMirror

log = logging.getLogger("eddy.node.ha")
SETTLED = ("passive", "faulty")
"""The states an app is in on a passive that could take over (see ``in_sync``)."""


class MirrorFollower:
    """Follows one HA group's checkpoint mirror for the node's apps (module docstring)."""

    def __init__(self, mirror: CheckpointMirror, registry: AppRegistry,
                 folder: DeploymentFolder, lease: Lease) -> None:
        self.mirror = mirror
        self.registry = registry
        self.folder = folder
        self.lease = lease
        self.pulled: dict[str, int] = {}
        """App -> the mirror revision its checkpoint here holds (0 or absent: none)."""
        self.in_sync = False
        self.last_sync_ms: int | None = None
        self.lag_events: int | None = None
        self._lock = threading.Lock()
        self._bus: Bus | None = None  # the keeper thread's own, opened on first use
        self._mirrored: dict[str, Positions] = {}  # app -> where its last push resumes
        self._protected: dict[str, Positions] = {}  # what was committed of it

    def close(self) -> None:
        """Closes the follower's bus connection."""
        if self._bus is not None:
            self._bus.close()
            self._bus = None

    def pushed(self, app: str, checkpoint: Path) -> None:
        """The active pushed ``app``'s ``checkpoint``: :meth:`protect` commits where it
        resumes."""
        self._mirrored[app] = resume_positions(checkpoint)

    def pull(self, app: str) -> None:
        """Brings the app's checkpoint to the mirror's newest (or removes it when the
        mirror has none: the app then starts from its committed bus positions)."""
        checkpoint = self.registry.store.checkpoint_dir(app)
        head = self.mirror.pull(app, checkpoint, self.pulled.get(app, 0))
        if head is None:
            self.pulled.pop(app, None)
            if checkpoint.exists():  # a local one is not the group's: resume from the bus
                shutil.rmtree(checkpoint)
            log.info("HA: app %s has no checkpoint in the database; it starts from its "
                     "committed bus positions", app)
            return
        self.pulled[app] = head.rev
        log.info("HA: app %s resumes from micro-batch %d of epoch %d", app, head.batch_id,
                 head.epoch)

    def follow(self, passive: Callable[[], bool]) -> None:
        """Passive: pulls every app's newest checkpoint, measures the lag and reports both
        with the lease (stops early once ``passive()`` turns False)."""
        states = {view.name: view.state for view in self.registry.views()}
        in_sync = all(states.get(name) in SETTLED for name in self.folder.names())
        behind: int | None = 0
        for name in self.registry.names():
            if not passive():
                return
            checkpoint = self.registry.store.checkpoint_dir(name)
            head = self.mirror.pull(name, checkpoint, self.pulled.get(name, 0))
            if head is not None:
                self.pulled[name] = head.rev
            lag = self._lag(name, resume_positions(checkpoint))
            behind = None if lag is None or behind is None else behind + lag
        self.in_sync = in_sync
        self.last_sync_ms = int(time.time() * 1000)
        self.lag_events = behind
        self.lease.report("passive", dict(self.pulled), behind, self.registry.planned_apps())

    def protect(self) -> None:
        """Active: commits where each app's mirror resumes, so bus retention keeps the
        events a successor would read."""
        for app, positions in list(self._mirrored.items()):
            if not positions or self._protected.get(app) == positions:
                continue
            try:
                protect(self._open_bus(), app, positions)
                self._protected[app] = positions
            except Exception as error:  # noqa: BLE001 - retried on the next poll
                log.warning("HA: cannot protect the mirror of %s from bus retention: %s",
                            app, _short(error))

    def forget(self, app: str, epoch: int | None) -> None:
        """An app was undeployed (its query stopped): forgets it here and, on the active
        (``epoch`` given), drops its mirrored checkpoint, so it does not stay in
        ``PERSISTENCE_DB``. The passive leaves that to the active."""
        with self._lock:
            self.pulled.pop(app, None)
            self._mirrored.pop(app, None)
            self._protected.pop(app, None)
        if epoch is None:
            return
        try:
            self.mirror.drop(app, epoch)
            log.info("HA: app %s undeployed: its checkpoint is dropped from the database", app)
        except (Fenced, SQLAlchemyError) as error:
            log.warning("HA: app %s undeployed, but its checkpoint stays in the database: %s",
                        app, _short(error))

    def _lag(self, app: str, positions: Positions) -> int | None:
        """:func:`~eddy.node.ha_positions.lag_events`, None when the bus is out of reach."""
        try:
            return lag_events(self._open_bus(), app, positions)
        except Exception as error:  # noqa: BLE001 - the lag is a report, not a decision
            log.warning("HA: cannot read the committed bus positions of %s: %s", app,
                        _short(error))
            return None

    def _open_bus(self) -> Bus:
        self._bus = self._bus or open_bus(self.registry.bus_url)
        return self._bus


def _short(error: BaseException) -> str:
    return str(error).splitlines()[0][:200]
