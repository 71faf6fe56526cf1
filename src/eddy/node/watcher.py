"""Watching the deployment folder: a file added, changed or deleted is reported by name.

It polls (every ``eddy.deploymentPollIntervalMs``, 250 ms by default) rather than using
inotify, because WSO2 SP's advice for several nodes is a shared (NFS) deployment folder, where
change notifications do not arrive. A change is reported once the file's size and time have
held for one more poll, so a file still being written is not deployed half-way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from eddy.node.deployment import DeploymentFolder

log = logging.getLogger("eddy.node.watcher")
Stat = tuple[int, int] | None


class FolderWatcher:
    """Calls ``on_change(app)`` for every ``.siddhi`` file added, changed or deleted."""

    def __init__(self, folder: DeploymentFolder, on_change: Callable[[str], None],
                 interval_s: float = 0.25) -> None:
        self.folder = folder
        self.interval_s = interval_s
        self._on_change = on_change
        self._stop = threading.Event()
        self._seen: dict[str, Stat] = {}
        self._thread = threading.Thread(target=self._run, name="eddy-folder-watcher",
                                        daemon=True)

    def start(self) -> None:
        """Starts watching; files present now count as seen (the worker deploys them)."""
        self._seen = dict(self.folder.snapshot())
        self._thread.start()

    def stop(self) -> None:
        """Stops watching."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        pending: dict[str, Stat] = {}
        while not self._stop.wait(self.interval_s):
            try:
                pending = self._poll(pending)
            except OSError as error:  # the folder vanished or is unreadable for a moment
                log.warning("cannot read the deployment folder %s: %s", self.folder.path, error)

    def _poll(self, pending: dict[str, Stat]) -> dict[str, Stat]:
        now: dict[str, Stat] = dict(self.folder.snapshot())
        still: dict[str, Stat] = {}
        for name in sorted(set(self._seen) | set(now)):
            current = now.get(name)
            if current == self._seen.get(name):
                continue
            if name in pending and pending[name] == current:
                if current is None:
                    self._seen.pop(name, None)
                else:
                    self._seen[name] = current
                self._on_change(name)
            else:
                still[name] = current
        return still
