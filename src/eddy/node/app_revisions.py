"""Backing up, restoring and clearing a running app's state (the revision store,
:mod:`eddy.node.persistence`), mixed into :class:`~eddy.node.registry.AppRegistry`.

Each runs on the registry's lifecycle thread: the app's query is stopped, the checkpoint
changed or copied while nothing writes it, and the query started again — an app that does
not start again is ``faulty``. A request that cannot be done is answered at once, not after
the changes queued before it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eddy.node.app_view import AppNotFound, AppNotRunning, AppView, StateMismatch
from eddy.node.persistence import RevisionStore

if TYPE_CHECKING:
    from eddy.node.runner import AppRunner

log = logging.getLogger("eddy.node.registry")
T = TypeVar("T")
SETTLE_S = 30  # the longest a backup waits for an app to catch up with its inputs


class Revisions:
    """The registry's ``backup``/``restore``/``clear_revisions``; the attributes and methods
    below the docstring are the registry's."""

    store: RevisionStore
    _lock: threading.Lock
    _runners: dict[str, AppRunner]
    _restored: Callable[[Path], None] | None

    if TYPE_CHECKING:
        def get(self, name: str) -> AppView: ...

        def names(self, active: bool | None = None) -> list[str]: ...

        def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _publish(self, view: AppView, runner: AppRunner | None = None) -> None: ...

        def _start(self, name: str, text: str, ready: AppRunner | None = None,
                   running: bool = False) -> AppRunner: ...

        def _stop_runner(self, name: str) -> None: ...

    def backup(self, name: str) -> str:
        """A new revision of the app's state; returns its name (``<millis>__<app>``)."""
        self._running(name)  # answer at once when it cannot be done, not after queued work
        return self._call(self._backup, name)

    def backup_all(self, stopping: Callable[[], bool] = lambda: False) -> None:
        """A revision of every active app (the periodic persistence round); ends early once
        ``stopping()`` says the worker is stopping."""
        for name in self.names(active=True):
            if stopping():
                return
            try:
                revision = self.backup(name)
                log.info("persisted %s as revision %s", name, revision)
            except (AppNotFound, AppNotRunning):
                continue
            except Exception:
                log.exception("could not persist the state of %s", name)

    def restore(self, name: str, revision: str | None) -> str:
        """Returns the app to a revision (the newest when None); returns the revision."""
        self._running(name)
        self.store.revision_text(name, revision)
        return self._call(self._restore, name, revision)

    def clear_revisions(self, name: str, redeploy: bool) -> None:
        """Deletes the app's revisions; with ``redeploy`` also its state, restarting it."""
        self.get(name)
        self._call(self._clear, name, redeploy)

    def _running(self, name: str) -> AppView:
        view = self.get(name)
        with self._lock:
            running = name in self._runners
        if view.state != "active" or not running:
            raise AppNotRunning(f"app '{name}' is {view.state}; only a running app has "
                                f"state to back up or restore")
        return view

    def _restart(self, view: AppView, action: Callable[[], T]) -> T:
        """Stops the app's query, runs ``action`` on its stopped checkpoint, starts it again;
        raises when the app does not start again (it is then faulty)."""
        self._stop_runner(view.name)
        try:
            result = action()
        finally:
            failure = self._start_again(view)
        if failure is not None:
            raise RuntimeError(f"app '{view.name}' did not start again: {failure}")
        return result

    def _start_again(self, view: AppView) -> Exception | None:
        try:
            runner = self._start(view.name, view.text)
        except Exception as error:
            log.exception("app %s could not restart", view.name)
            self._publish(replace(view, state="faulty",
                                  error={"message": f"cannot restart: {error}"}))
            return error
        self._publish(replace(view, state="active"), runner)
        return None

    def _backup(self, name: str) -> str:
        view = self._running(name)
        self._settle(name)
        return self._restart(view, lambda: self.store.save(name, view.text))

    def _settle(self, name: str) -> None:
        """Lets the app finish the events waiting now, so stopping it abandons no batch in
        flight (which it would redo after the restart: under load, a frequent backup could
        otherwise keep an app from progressing at all)."""
        with self._lock:
            runner = self._runners.get(name)
        if runner is None:
            return
        try:
            if not runner.await_idle(SETTLE_S):
                log.info("app %s is busy; persisting it mid-stream", name)
        except Exception as error:  # a failed query is noticed by the health checks
            log.warning("app %s did not settle before persisting: %s", name, error)

    def _restore(self, name: str, revision: str | None) -> str:
        view = self._running(name)
        revision, text = self.store.revision_text(name, revision)
        if text != view.text:
            raise StateMismatch(f"revision {revision} was taken with a different version of "
                                f"app '{name}'; its state does not fit the deployed app")

        def load() -> str:
            self.store.load(name, revision, self._restored)
            return revision

        result = self._restart(view, load)
        log.info("restored app %s to revision %s", name, result)
        return result

    def _clear(self, name: str, redeploy: bool) -> None:
        view = self.get(name)
        if not redeploy or name not in self._runners:
            self.store.clear(name, live=redeploy)
            return
        self._restart(view, lambda: self.store.clear(name, live=True))
        self.store.record_text(name, view.text)
        log.info("cleared the state of app %s and restarted it", name)
