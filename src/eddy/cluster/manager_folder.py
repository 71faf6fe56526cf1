"""The manager's deployment folder, ``<dataDir>/deployment/siddhi-files`` (WSO2's
``<manager>/deployment/siddhi-files``): a parent app dropped there as ``<app>.siddhi`` is
deployed as if POSTed to ``/siddhi-apps`` (split, stored, placed), a changed file replaces
it as a PUT does, a deleted file undeploys it as a DELETE does.

Only the leader acts on it, once per scheduling round, and only on a file whose size and
time held since the previous round (a file still being copied is not read half-way). A
manager that takes the lead applies every file of its folder (an unchanged one changes
nothing); files deleted while it did not lead are not known to it, so it does not undeploy
them — with one folder per host, delete through the API, or share the folder (WSO2's advice
for several managers).

A faulty file is not deployed: its faults are logged compiler-style
(``<app>.siddhi:line:col: error: …``) and kept, so ``GET /siddhi-apps/<app>/status``
answers ``faulty`` with them until the file is fixed or deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from eddy.lang import SiddhiAppError, check
from eddy.node.deployment import DeploymentFolder

log = logging.getLogger("eddy.cluster.manager_folder")
Stat = tuple[int, int] | None


class ManagerFolder:
    """Keeps the parent apps in step with the files of the manager's folder."""

    def __init__(self, folder: DeploymentFolder, submit: Callable[[str, str], bool],
                 remove: Callable[[str], bool]) -> None:
        """``submit(text, name) -> created`` stores or replaces a parent app;
        ``remove(name) -> existed`` undeploys one."""
        self.folder = folder
        self._submit = submit
        self._remove = remove
        self._previous: dict[str, Stat] = {}
        self._applied: dict[str, Stat] = {}
        self.faults: dict[str, str] = {}
        """``{app: its faults, rendered}`` of the files that could not be deployed."""

    def forget(self) -> None:
        """The manager stopped leading: on its next lead it applies every file again."""
        self._applied.clear()

    def poll(self) -> None:
        """One round of the leader: applies the files that changed and held still."""
        now: dict[str, Stat] = dict(self.folder.snapshot())
        previous, self._previous = self._previous, now
        for name, stat in sorted(now.items()):
            if stat == previous.get(name) and stat != self._applied.get(name):
                self._apply(name, stat)
        for name in sorted(set(self._applied) - set(now)):
            del self._applied[name]
            self.faults.pop(name, None)
            if self._remove(name):
                log.info("deployment folder: %s.siddhi deleted: app %s undeployed", name, name)

    def _apply(self, name: str, stat: Stat) -> None:
        text = self.folder.read(name)
        if text is None:  # deleted since the snapshot: the next round sees it
            return
        filename = self.folder.file(name).name
        try:
            named = check(text, filename).app.name
            if named != name:
                raise ValueError(f"{filename}: the app is named '{named}' (@App:name) but its "
                                 f"file is '{filename}'; the names must match")
            created = self._submit(text, name)
        except SiddhiAppError as error:
            self._fault(name, stat, error.render())
            return
        except ValueError as error:
            self._fault(name, stat, str(error))
            return
        self._applied[name] = stat
        self.faults.pop(name, None)
        log.info("deployment folder: %s %s", filename,
                 "deployed" if created else "applied (replaced or unchanged)")

    def _fault(self, name: str, stat: Stat, rendered: str) -> None:
        self._applied[name] = stat  # not again until the file changes
        self.faults[name] = rendered
        log.error("deployment folder: %s.siddhi is not deployed:\n%s", name, rendered)
