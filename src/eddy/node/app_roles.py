"""Minimum HA's role changes of the worker's apps, mixed into
:class:`~eddy.node.registry.AppRegistry`.

Each request is queued on the registry's lifecycle thread, behind the changes before it, and
counted: a request made after it (a step-down after a takeover, say) makes a queued
``go_active`` or ``arm`` do nothing, so a node whose lease flapped never starts apps it may
no longer run. The passive's readied queries live in :mod:`eddy.node.standby`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

from eddy.node.app_view import PASSIVE_NOTE, AppView
from eddy.node.standby import Standby, WarmUp, warmable

if TYPE_CHECKING:
    from eddy.lang import AnalyzedApp
    from eddy.node.runner import AppRunner

log = logging.getLogger("eddy.node.registry")


class HaRoles:
    """The registry's ``go_passive``/``go_active``/``arm``/``disarm``; the attributes and
    methods below the docstring are the registry's."""

    passive: bool
    standby: Standby
    _lock: threading.Lock
    _role_changes: int
    _lifecycle: ThreadPoolExecutor
    _apps: dict[str, AppView]
    _compiled: set[str]

    if TYPE_CHECKING:
        def views(self) -> list[AppView]: ...

        def _stop_all(self) -> None: ...

        def _publish(self, view: AppView, runner: AppRunner | None = None) -> None: ...

        def _run(self, name: str, text: str, analyzed: AnalyzedApp, note: str | None,
                 verb: str, ready: AppRunner | None = None, running: bool = False) -> None: ...

    def go_passive(self, reason: str) -> Future[None]:
        """Stops every app's sources, sinks and query at once (queued before any other
        change) and keeps the apps deployed as ``passive``."""
        self.passive = True  # from now on nothing queued starts an app
        with self._lock:
            self._role_changes += 1  # and a go_active queued before this is dropped
        return self._lifecycle.submit(self._to_passive, reason)

    @property
    def warm_up(self) -> WarmUp | None:
        """Minimum HA: runs a passive app once on scratch inputs (see
        :func:`eddy.node.runner.warm_up`), so that its takeover starts warm."""
        return self.standby.warm_up

    @warm_up.setter
    def warm_up(self, warm_up: WarmUp | None) -> None:
        self.standby.warm_up = warm_up

    def go_active(self, prepare: Callable[[str], None],
                  keep_armed: Callable[[str], bool] = lambda _: False) -> Future[None]:
        """Starts every passive app, each after ``prepare(app)`` readied its checkpoint —
        or, for an app armed by :meth:`arm`, lets its running queries go on when
        ``keep_armed(app)`` says their checkpoint is still the newest; dropped when a
        :meth:`go_passive` is requested before it runs (a node whose lease flapped must not
        start apps it no longer may run)."""
        with self._lock:
            self._role_changes += 1
            change = self._role_changes
        return self._lifecycle.submit(self._to_active, prepare, keep_armed, change)

    def arm(self, ready: Callable[[str], bool]) -> Future[None]:
        """Passive: starts the queries planned ahead, each after ``ready(app)`` brought its
        checkpoint to the active's newest (or says False: not armed after all); the apps stay
        ``passive`` and their sources and sinks closed (see :mod:`eddy.node.standby`).
        Dropped when a role change is requested before it runs."""
        with self._lock:
            change = self._role_changes
        return self._lifecycle.submit(self._arm, ready, change)

    def disarm(self, reason: str) -> Future[None]:
        """Passive: stops the armed queries and plans them again."""
        return self._lifecycle.submit(self._disarm, reason)

    def armable(self) -> bool:
        """Whether :meth:`arm` would start any query."""
        return self.passive and self.standby.armable()

    def planned_apps(self) -> list[str]:
        """Passive: the apps a takeover only has to start (their queries are planned
        ahead); none on an active node."""
        return self.standby.planned_names() if self.passive else []

    def _to_passive(self, reason: str) -> None:
        self.passive = True
        self._stop_all()
        with self._lock:
            for name, view in list(self._apps.items()):
                if name in self._compiled:  # also those whose query the fence failed
                    self._apps[name] = replace(view, state="passive", note=PASSIVE_NOTE,
                                               error=None)
        log.info("every app stopped: %s", reason)
        self._plan_passive()

    def _plan_passive(self) -> None:
        """Plans again the passive apps whose planned runner was used (they ran here, or
        were armed), so the next takeover finds them ready."""
        for view in self.views():
            if view.state == "passive" and not self.standby.planned(view.name) \
                    and self.warm_up is not None and warmable(view.analyzed):
                self.standby.plan(view.name, view.text)

    def _arm(self, ready: Callable[[str], bool], change: int) -> None:
        for view in self.views():
            if change != self._role_changes or not self.passive:
                return  # a takeover or step-down came first: it starts or stops the apps
            if view.state == "passive" and self.standby.planned(view.name):
                self.standby.arm(view.name, ready)

    def _disarm(self, reason: str) -> None:
        names = self.standby.disarm()
        if names:
            log.info("the queries started ahead are stopped (%s): %s", reason,
                     ", ".join(names))
        if self.passive:
            self._plan_passive()

    def _to_active(self, prepare: Callable[[str], None], keep_armed: Callable[[str], bool],
                   change: int) -> None:
        if change != self._role_changes:
            log.info("a later role change is queued: the apps are not started")
            return
        self.passive = False
        for view in self.views():
            if change != self._role_changes:
                return  # stepped down meanwhile: the queued go_passive stops what started
            if view.state != "passive" or view.analyzed is None \
                    or view.name not in self._compiled:
                continue
            began = time.monotonic()
            try:
                ready, running = self.standby.take(view.name, keep_armed)
                if not running:
                    prepare(view.name)
            except Exception as error:
                log.exception("app %s: its state could not be made current", view.name)
                self._publish(replace(view, state="faulty", error={
                    "message": f"cannot take over its state: {error}"}))
                continue
            prepared = time.monotonic()
            self._run(view.name, view.text, view.analyzed, None, "activated", ready, running)
            log.info("app %s activated in %.1f s: state taken over in %.1f s, query, sources "
                     "and sinks started in %.1f s", view.name, time.monotonic() - began,
                     prepared - began, time.monotonic() - prepared)
