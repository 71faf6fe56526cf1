"""Minimum HA: the apps of a group, kept the same on both nodes.

An app deployed to either node (REST API or deployment folder) is published in the cluster
database (:mod:`eddy.store.cluster_apps`) and written into the other node's folder; an
undeployment likewise. Each side remembers the digest of every app as it last agreed with
the group, so a change is told from a stale copy: whichever side changed since then wins,
and a node that never saw an app takes the group's.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from eddy.node.deployment import DeploymentFolder
from eddy.store.cluster_apps import AppCatalog

log = logging.getLogger("eddy.node.ha")


class GroupApps:
    """Keeps one node's deployment folder and its group's app catalog in step."""

    def __init__(self, catalog: AppCatalog, folder: DeploymentFolder) -> None:
        self.catalog = catalog
        self.folder = folder
        self._synced: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def sync(self) -> None:
        """Publishes this node's app changes and applies the other node's."""
        with self._lock:
            self._sync_locked()

    def _sync_locked(self) -> None:
        remote = self.catalog.apps()
        local = {name: self.folder.read(name) for name in self.folder.names()}
        for name in sorted(set(local) | set(remote)):
            text = local.get(name)
            mine = _digest(text)
            theirs_app = remote.get(name)
            theirs = _digest(theirs_app.text) if theirs_app is not None else None
            if mine == theirs:
                self._synced[name] = mine
                continue
            if name not in self._synced:
                local_wins = theirs_app is None
            else:
                local_wins = mine != self._synced[name]
            if local_wins:
                self.catalog.publish(name, text)
                log.info("HA: app %s %s on this node, published to the group", name,
                         "deployed" if text is not None else "undeployed")
                self._synced[name] = mine
            else:
                assert theirs_app is not None
                if theirs_app.text is None:
                    self.folder.delete(name)
                else:
                    self.folder.write(name, theirs_app.text)
                log.info("HA: app %s %s by the group", name,
                         "undeployed" if theirs_app.text is None else "deployed")
                self._synced[name] = theirs


def _digest(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None
