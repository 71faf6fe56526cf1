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

**Passive (minimum HA).** While :attr:`AppRegistry.passive` is set, an app is validated
and compiled but not started: ``passive``, no query, no sources, no sinks; with a
``warm_up`` it is also run once on scratch inputs and its queries are planned, so that
activating it only starts them, and :meth:`AppRegistry.arm` starts those queries ahead of a
likely takeover (:mod:`eddy.node.standby`).
:meth:`AppRegistry.go_active` starts them all (after the HA role keeper brought each
checkpoint up to the active's), :meth:`AppRegistry.go_passive` stops them all. These role
changes are in :mod:`eddy.node.app_roles`, backups and restores of an app's state in
:mod:`eddy.node.app_revisions`; both are mixed into the registry, whose lifecycle thread
and lock they share.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from eddy.engine.compile.app_check import check_app
from eddy.lang import AnalyzedApp, SiddhiAppError
from eddy.lang.variables import substitute
from eddy.node.app_revisions import Revisions
from eddy.node.app_roles import HaRoles
from eddy.node.app_view import (
    PASSIVE_NOTE,
    AppNotFound,
    AppNotRunning,
    AppView,
    StatLevel,
)
from eddy.node.deployment import DeploymentFolder
from eddy.node.persistence import RevisionStore
from eddy.node.runner import AppIo, AppRunner, AppSpec, IoFactory, RunnerFactory
from eddy.node.standby import Standby

log = logging.getLogger("eddy.node.registry")
T = TypeVar("T")
LIFECYCLE_WAIT_S = 300  # the longest a request waits for queued changes to other apps


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _now_ms() -> int:
    return int(time.time() * 1000)


class AppRegistry(HaRoles, Revisions):
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
        self.passive = False
        """Minimum HA: deploy apps without running them (see the module docstring)."""
        self._role_changes = 0  # go_active/go_passive requests so far (see go_active)
        self._compiled: set[str] = set()  # apps that passed validation and planning
        self.standby = Standby(runner_factory, self._spec)
        """Passive: what is readied for a takeover (:mod:`eddy.node.standby`)."""
        self.batch_hook: Callable[[str, Path], Callable[[int], None]] | None = None
        """Minimum HA, distributed children: ``(app, checkpoint) -> before_write`` for each
        runner's spec."""
        self.take_over: Callable[[str, str], str] | None = None
        """Distributed children: ``(app, text) -> note``, readies the state of an app that
        is deployed here from where it ran before (:mod:`eddy.node.child_state`)."""
        self.output_hook: Callable[[int, int], None] | None = None
        """Minimum HA: every runner's ``after_output`` (batch id, events appended)."""
        self.undeployed_hook: Callable[[str], None] | None = None
        """Minimum HA: called with an undeployed app's name once its query stopped (the
        active then forgets the app's mirrored checkpoint)."""
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

    def retry_failed(self) -> Future[None]:
        """Starts again every app whose query stopped on its own (minimum HA's active does
        this, so a transient failure does not leave the group without the app); each
        resumes from its checkpoint."""
        return self._lifecycle.submit(self._retry_failed)

    def shutdown(self) -> None:
        """Stops every app (their checkpoints stay) and the lifecycle thread."""
        self._lifecycle.submit(self._stop_all).result()
        self._lifecycle.submit(self.standby.clear).result()
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
        self.standby.forget(name)
        with self._lock:
            self._digests[name] = digest
        self._deploy(name, text, redeploy)

    def _deploy(self, name: str, text: str, redeploy: bool) -> None:
        self._publish(AppView(name, text, "inactive", _now_ms(), note="deploying"))
        try:
            filename = self.folder.file(name).name
            analyzed, _ = check_app(substitute(text, filename), filename)
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
        with self._lock:
            self._compiled.add(name)
        try:
            note = self._prepare_state(name, text)
        except Exception as error:  # the persistence database is out of reach, …
            log.exception("app %s: its state could not be readied", name)
            self._publish(AppView(name, text, "faulty", _now_ms(), analyzed=analyzed,
                                  error={"message": f"cannot ready its state: {error}"}))
            return
        if self.passive:
            log.info("app %s deployed as passive: validated and compiled, not running", name)
            if self.standby.warm(name, text, analyzed):  # then it takes over warm
                self.standby.plan(name, text)
            self._publish(AppView(name, text, "passive", _now_ms(), analyzed=analyzed,
                                  note=PASSIVE_NOTE))
            return
        self._run(name, text, analyzed, note, "redeployed" if redeploy else "deployed")

    def _run(self, name: str, text: str, analyzed: AnalyzedApp, note: str | None,
             verb: str, ready: AppRunner | None = None, running: bool = False) -> None:
        """Starts a validated app's query, then its sources and sinks. On an HA takeover
        (``activated``) the sources and sinks start while the query starts: the app ran on
        the other node, its topics hold what they accepted, and a client that failed over is
        answered a query start sooner (the sources only land events on the bus)."""
        began = time.monotonic()
        io: Future[None] | None = None
        if verb == "activated":
            io = Future()
            threading.Thread(target=self._start_io_into, args=(io, name, text, analyzed),
                             name=f"eddy-io-start-{name}", daemon=True).start()
        try:
            runner = self._start(name, text, ready, running)
        except Exception as error:
            log.exception("app %s could not start", name)
            if io is not None:
                io.exception()  # wait for it, then stop what it started
                self._stop_io(name)
            self._publish(AppView(name, text, "faulty", _now_ms(), analyzed=analyzed,
                                  error={"message": f"cannot start: {error}"}, note=note))
            return
        started = time.monotonic()
        try:
            if io is None:
                self._start_io(name, text, analyzed)
            else:
                io.result()
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
        log.info("%s app %s%s", verb, name, f" ({note})" if note else "")
        if verb == "activated":  # where a takeover spends its time
            log.info("app %s: query started in %.1f s, sources and sinks beside it", name,
                     started - began)
        self._publish(AppView(name, text, "active", _now_ms(), note=note, analyzed=analyzed),
                      runner)

    def _prepare_state(self, name: str, text: str) -> str | None:
        """Keeps the checkpoint for the same app; for a changed app keeps it as a revision
        and starts empty. Returns what happened to the state, when worth saying."""
        if self.take_over is not None:
            note = self.take_over(name, text)
            self.store.record_text(name, text)
            return note
        before = self.store.checkpoint_text(name)
        if not self.store.has_checkpoint(name) and self.store.database is not None:
            restored = self._restore_newest(name, text)
            if restored is not None:
                return restored
        if self.store.has_checkpoint(name) and before is not None and before != text:
            revision = self.store.reset(name, text)
            note = (f"state was reset because the app changed; the previous state is kept "
                    f"as revision {revision}")
            log.warning("app %s: %s", name, note)
            return note
        self.store.record_text(name, text)
        return "resumed from its checkpoint" if self.store.has_checkpoint(name) else None

    def _restore_newest(self, name: str, text: str) -> str | None:
        """``DBPersistenceStore``, no local checkpoint (a new disk, another host): restores
        the newest revision in the database taken with this very app text."""
        for revision in reversed(self.store.revisions(name)):
            if self.store.revision_text(name, revision)[1] == text:
                self.store.load(name, revision, self._restored)
                note = f"restored revision {revision} from the persistence database"
                log.info("app %s: %s", name, note)
                return note
        return None

    def _spec(self, name: str, text: str) -> AppSpec:
        """What a runner needs: the app as it runs, with its ``${NAME}`` variables filled in
        (the API keeps showing the text as deployed)."""
        resolved = substitute(text, self.folder.file(name).name)
        checkpoint = self.store.checkpoint_dir(name)
        hook = self.batch_hook(name, checkpoint) if self.batch_hook is not None else None
        return AppSpec(name, resolved, checkpoint, self.bus_url, before_write=hook,
                       after_output=self.output_hook)

    def _start(self, name: str, text: str, ready: AppRunner | None = None,
               running: bool = False) -> AppRunner:
        """Starts the app's query: ``ready`` is a runner readied on the passive (planned,
        or already ``running`` when armed), else a new one is made."""
        spec = self._spec(name, text)
        spec.checkpoint_dir.parent.mkdir(parents=True, exist_ok=True)
        runner = ready if ready is not None else self._factory(spec)
        if not running:
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

    def _start_io_into(self, done: Future[None], name: str, text: str,
                       analyzed: AnalyzedApp) -> None:
        """:meth:`_start_io` on a thread of its own, its outcome into ``done``."""
        try:
            self._start_io(name, text, analyzed)
        except BaseException as error:  # noqa: BLE001 - handed to the lifecycle thread
            done.set_exception(error)
        else:
            done.set_result(None)

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
            self._compiled.discard(name)
            existed = self._apps.pop(name, None) is not None
        self.standby.forget(name)
        self._stop_io(name)
        self._stop_runner(name)
        if existed:
            log.info("undeployed app %s", name)
            if self.undeployed_hook is not None:
                try:
                    self.undeployed_hook(name)
                except Exception:
                    log.exception("app %s: cleaning up after its undeployment failed", name)

    def _stop_runner(self, name: str) -> None:
        with self._lock:
            runner = self._runners.pop(name, None)
        if runner is not None:
            try:
                runner.stop()
            except Exception:
                log.exception("app %s did not stop cleanly", name)

    def _retry_failed(self) -> None:
        for view in self.views():
            with self._lock:
                failed = view.state == "faulty" and view.name in self._compiled \
                    and view.analyzed is not None
            if failed and not self.passive and view.analyzed is not None:
                log.warning("app %s failed (%s); starting it again", view.name,
                            (view.error or {}).get("message", "")[:200])
                self._stop_io(view.name)
                self._stop_runner(view.name)
                self._run(view.name, view.text, view.analyzed, None, "restarted")

    def _stop_all(self) -> None:
        for name in list(self._io):
            self._stop_io(name)
        for name in list(self._runners):
            self._stop_runner(name)
        self.standby.disarm()

    def __enter__(self) -> AppRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
