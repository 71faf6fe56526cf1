"""The worker's apps: which are deployed, their status, and every change to them.

The deployment folder says what should run; :meth:`AppRegistry.reconcile` makes one app
match its file (deploy, redeploy, undeploy). Every change to a running app — reconciling,
backing up, restoring — runs on one lifecycle thread, in order, so two changes never race on
an app's query or checkpoint; readers (the REST API) get consistent snapshots at any time.

An app that cannot run is ``faulty``, with its error kept for the API and logged once; it
never stops the other apps from deploying.

**State across changes.** Each app's Spark checkpoint is recorded with the text it was made
with. Redeploying the same text resumes from the checkpoint. The engine ties a checkpoint to
the exact app text (offsets and state of another plan would be misread), so for a changed
app the worker keeps the old state as a revision, starts the app afresh and says so in the
log and the app's status (WSO2 SP fails the deployment instead: siddhi#796).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from eddy.lang import AnalyzedApp, SiddhiAppError, check
from eddy.lang.variables import substitute
from eddy.node.deployment import DeploymentFolder
from eddy.node.persistence import RevisionStore
from eddy.node.runner import AppIo, AppRunner, AppSpec, IoFactory, RunnerFactory

log = logging.getLogger("eddy.node.registry")
AppState = Literal["inactive", "active", "faulty"]
StatLevel = Literal["OFF", "BASIC", "DETAIL"]
T = TypeVar("T")
LIFECYCLE_WAIT_S = 300  # the longest a request waits for queued changes to other apps
SETTLE_S = 30  # the longest a backup waits for an app to catch up with its inputs


class AppNotFound(LookupError):
    """No app of that name is deployed."""


class AppNotRunning(RuntimeError):
    """The app exists but is not running, so it has no state to back up or restore."""


class StateMismatch(RuntimeError):
    """A revision was taken with a different version of the app."""


@dataclass(frozen=True)
class AppView:
    """A snapshot of one deployed app, as the API shows it."""

    name: str
    text: str
    state: AppState
    deployed_at_ms: int
    error: dict[str, Any] | None = None
    note: str | None = None
    stat_level: StatLevel = "OFF"
    metrics: dict[str, float] = field(default_factory=dict)
    analyzed: AnalyzedApp | None = None
    failures: int = 0
    """How often the app was found faulty since the worker started."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _now_ms() -> int:
    return int(time.time() * 1000)


class AppRegistry:
    """Deployed apps, kept in step with the deployment folder."""

    def __init__(self, folder: DeploymentFolder, store: RevisionStore,
                 runner_factory: RunnerFactory, bus_url: str,
                 restored: Callable[[Path], None] | None = None,
                 io_factory: IoFactory | None = None) -> None:
        """``restored`` adjusts a revision's copy of a checkpoint before it goes live;
        ``io_factory`` makes an app's own sources and sinks (none without it)."""
        self.folder = folder
        self.store = store
        self.bus_url = bus_url
        self._factory = runner_factory
        self._restored = restored
        self._lock = threading.Lock()
        self._apps: dict[str, AppView] = {}
        self._digests: dict[str, str] = {}
        self._runners: dict[str, AppRunner] = {}
        self._io_factory = io_factory
        self._io: dict[str, AppIo] = {}
        self._queued: dict[str, Future[None]] = {}
        self._lifecycle = ThreadPoolExecutor(max_workers=1, thread_name_prefix="eddy-lifecycle")

    # -- reading --------------------------------------------------------------------------

    def names(self, active: bool | None = None) -> list[str]:
        """Deployed apps, sorted; only active (or only not active) ones when asked."""
        with self._lock:
            return sorted(n for n, v in self._apps.items()
                          if active is None or (v.state == "active") == active)

    def get(self, name: str) -> AppView:
        """The app's current view; AppNotFound if it is not deployed."""
        with self._lock:
            view = self._apps.get(name)
        if view is None:
            raise AppNotFound(name)
        return view

    def views(self) -> list[AppView]:
        """Every deployed app, sorted by name."""
        with self._lock:
            return [self._apps[n] for n in sorted(self._apps)]

    # -- changing -------------------------------------------------------------------------

    def reconcile(self, name: str, *, force: bool = False) -> Future[None]:
        """Makes app ``name`` match its file, on the lifecycle thread; ``force`` redeploys
        even an unchanged file (``PUT`` of a faulty app retries it).

        A new file shows up at once as an ``inactive`` app, so a client that just posted it
        can read its status while it deploys.
        """
        text = self.folder.read(name)
        with self._lock:
            if text is not None and name not in self._apps:
                self._apps[name] = AppView(name, text, "inactive", _now_ms(),
                                           note="waiting to deploy")
            if force:
                self._digests.pop(name, None)
            queued = self._queued.get(name)
            if queued is not None:  # not started yet: it will read the file as it is then
                return queued
            future = self._queued[name] = self._lifecycle.submit(self._reconcile, name)
            return future

    def submit(self, fn: Callable[[], None]) -> Future[None]:
        """Runs ``fn`` on the lifecycle thread, after the changes queued before it."""
        return self._lifecycle.submit(fn)

    def reconcile_all(self) -> list[Future[None]]:
        """Reconciles every app with a file and every deployed app."""
        return [self.reconcile(n) for n in sorted(set(self.folder.names()) | set(self.names()))]

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

    def set_stat_level(self, name: str, level: StatLevel) -> None:
        """Records the app's statistics level (``PUT /siddhi-apps/{app}/statistics``)."""
        with self._lock:
            if name not in self._apps:
                raise AppNotFound(name)
            self._apps[name] = replace(self._apps[name], stat_level=level)

    def store_query(self, name: str, query: str) -> list[list[Any]]:
        """Runs an on-demand query on a running app, when its runner can."""
        with self._lock:
            runner = self._runners.get(name)
        if runner is None:
            raise AppNotRunning(f"app '{name}' is not running")
        run = getattr(runner, "store_query", None)
        if run is None:
            raise NotImplementedError("the engine does not yet answer on-demand queries on a "
                                      "running app")
        return list(run(query))

    def check_health(self) -> None:
        """Marks apps whose query stopped on its own as faulty; refreshes their metrics."""
        with self._lock:
            runners = dict(self._runners)
        for name, runner in runners.items():
            try:
                status = runner.status()
            except Exception as error:  # a broken runner must not stop the health checks
                status_error: str | None = f"cannot read the app's status: {error}"
                metrics: dict[str, float] = {}
            else:
                stopped = None if status.running else "the app's query stopped on its own"
                status_error, metrics = status.error or stopped, dict(status.metrics)
            with self._lock:
                view = self._apps.get(name)
                if view is None or self._runners.get(name) is not runner:
                    continue
                if status_error and view.state != "faulty":
                    log.error("app %s failed: %s", name, status_error)
                    self._apps[name] = replace(view, state="faulty", metrics=metrics,
                                               error={"message": status_error},
                                               failures=view.failures + 1)
                else:
                    self._apps[name] = replace(view, metrics=metrics)

    def shutdown(self) -> None:
        """Stops every app (their checkpoints stay) and the lifecycle thread."""
        self._lifecycle.submit(self._stop_all).result()
        self._lifecycle.shutdown(wait=True)

    # -- the lifecycle thread -------------------------------------------------------------

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return self._lifecycle.submit(fn, *args).result(timeout=LIFECYCLE_WAIT_S)

    def _reconcile(self, name: str) -> None:
        with self._lock:
            self._queued.pop(name, None)
        text = self.folder.read(name)
        if text is None:
            self._undeploy(name)
            return
        digest = _digest(text)
        with self._lock:
            unchanged = self._digests.get(name) == digest
        if unchanged:
            return
        redeploy = name in self._digests
        self._stop_io(name)
        self._stop_runner(name)
        with self._lock:
            self._digests[name] = digest
        self._deploy(name, text, redeploy)

    def _deploy(self, name: str, text: str, redeploy: bool) -> None:
        self._publish(AppView(name, text, "inactive", _now_ms(), note="deploying"))
        try:
            filename = self.folder.file(name).name
            analyzed = check(substitute(text, filename), filename)
            from eddy.plan import build_plan

            build_plan(analyzed)
        except SiddhiAppError as error:
            log.error("app %s is faulty:\n%s", name, error.render())
            self._publish(AppView(name, text, "faulty", _now_ms(), error=error.to_dict()))
            return
        if analyzed.name != name:
            message = (f"the app is named '{analyzed.name}' (@App:name) but its file is "
                       f"'{name}.siddhi'; the names must match")
            log.error("app %s is faulty: %s", name, message)
            self._publish(AppView(name, text, "faulty", _now_ms(), error={"message": message},
                                  analyzed=analyzed))
            return
        note = self._prepare_state(name, text)
        try:
            runner = self._start(name, text)
        except Exception as error:
            log.exception("app %s could not start", name)
            self._publish(AppView(name, text, "faulty", _now_ms(), analyzed=analyzed,
                                  error={"message": f"cannot start: {error}"}, note=note))
            return
        try:
            self._start_io(name, text, analyzed)
        except Exception as error:
            log.exception("the sources or sinks of app %s could not start", name)
            try:
                runner.stop()
            except Exception:
                log.exception("app %s did not stop cleanly", name)
            self._publish(AppView(name, text, "faulty", _now_ms(), analyzed=analyzed,
                                  error={"message": f"cannot start its sources and sinks: "
                                                    f"{error}"}, note=note))
            return
        log.info("%s app %s%s", "redeployed" if redeploy else "deployed", name,
                 f" ({note})" if note else "")
        self._publish(AppView(name, text, "active", _now_ms(), note=note, analyzed=analyzed),
                      runner)

    def _prepare_state(self, name: str, text: str) -> str | None:
        """Keeps the checkpoint for the same app; for a changed app keeps it as a revision
        and starts empty. Returns what happened to the state, when worth saying."""
        before = self.store.checkpoint_text(name)
        if self.store.has_checkpoint(name) and before is not None and before != text:
            revision = self.store.reset(name, text)
            note = (f"state was reset because the app changed; the previous state is kept "
                    f"as revision {revision}")
            log.warning("app %s: %s", name, note)
            return note
        self.store.record_text(name, text)
        return "resumed from its checkpoint" if self.store.has_checkpoint(name) else None

    def _spec(self, name: str, text: str) -> AppSpec:
        """What a runner needs: the app as it runs, with its ``${NAME}`` variables filled in
        (the API keeps showing the text as deployed)."""
        resolved = substitute(text, self.folder.file(name).name)
        return AppSpec(name, resolved, self.store.checkpoint_dir(name), self.bus_url)

    def _start(self, name: str, text: str) -> AppRunner:
        spec = self._spec(name, text)
        spec.checkpoint_dir.parent.mkdir(parents=True, exist_ok=True)
        runner = self._factory(spec)
        runner.start()
        return runner

    def _start_io(self, name: str, text: str, analyzed: AnalyzedApp) -> None:
        """Starts the app's own sources and sinks (with an ``io_factory``)."""
        if self._io_factory is None:
            return
        io = self._io_factory(self._spec(name, text), analyzed)
        io.start()
        with self._lock:
            self._io[name] = io

    def _stop_io(self, name: str) -> None:
        with self._lock:
            io = self._io.pop(name, None)
        if io is not None:
            try:
                io.stop()
            except Exception:
                log.exception("the sources and sinks of app %s did not stop cleanly", name)

    def _publish(self, view: AppView, runner: AppRunner | None = None) -> None:
        with self._lock:
            old = self._apps.get(view.name)
            if old is not None:
                view = replace(view, stat_level=old.stat_level, failures=old.failures)
            if view.state == "faulty":
                view = replace(view, failures=view.failures + 1)
            self._apps[view.name] = view
            if runner is not None:
                self._runners[view.name] = runner

    def _undeploy(self, name: str) -> None:
        with self._lock:  # gone for readers at once; stopping its query takes a moment
            self._digests.pop(name, None)
            existed = self._apps.pop(name, None) is not None
        self._stop_io(name)
        self._stop_runner(name)
        if existed:
            log.info("undeployed app %s", name)

    def _stop_runner(self, name: str) -> None:
        with self._lock:
            runner = self._runners.pop(name, None)
        if runner is not None:
            try:
                runner.stop()
            except Exception:
                log.exception("app %s did not stop cleanly", name)

    def _stop_all(self) -> None:
        for name in list(self._io):
            self._stop_io(name)
        for name in list(self._runners):
            self._stop_runner(name)

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

    def __enter__(self) -> AppRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
