"""Minimum HA: the role keeper of one node of an active/passive pair.

Both nodes run ``eddy worker`` with the same ``cluster.config.groupId``, the same cluster
and persistence databases and the same bus; nothing else is shared (separate data folders,
possibly separate hosts). A thread renews or takes the group's lease every
``heartbeatInterval`` (:mod:`eddy.store.lease`) and makes the node match it:

* **Passive.** Every app is deployed — validated, compiled, Spark started, warmed up on a
  scratch bus and its queries planned (:meth:`AppRegistry._plan`: a takeover only starts
  them) — and not running (:attr:`AppRegistry.passive`: no query, no source port, no pulling
  source read, no sink).
  Every ``eventPollingInterval`` it pulls the active's checkpoint mirror
  (:mod:`eddy.store.revisions`) into its own checkpoint folders, so it is never more than a
  poll behind, and ``in_sync`` says whether it has the newest (:mod:`eddy.node.ha_follow`).
* **Armed** (the active is a quarter of an interval late renewing, by the database's
  clock): the passive starts the queries it planned ahead on the active's newest checkpoint
  (:mod:`eddy.node.standby`), so that Spark's start of each query's Python source — half a
  second forked from the session's server (:mod:`eddy.engine.spark.runner_forks`), two or
  more without it — runs while the lease runs out instead of after it. Their first batch
  waits in ``before_write`` (nothing of it is computed or written). A late active often
  renews once more and then dies (it was late because it was failing), so one renewal does
  not disarm: only when the active kept renewing for a whole lease time after the arming
  are those batches refused and the queries stopped and planned again; the passive then
  pulls its checkpoints whole (the armed queries wrote into them). Should the active have
  written batches meanwhile, the takeover finds the armed checkpoint stale and starts the
  app on the newest instead.
* **Takeover** (the lease was free or expired, by the database's clock): raise the fence
  to the new epoch in ``PERSISTENCE_DB`` (:mod:`eddy.store.fence`), pull each app's mirror
  one last time — nothing can be added to it now — and start the apps, each app's sources
  and sinks beside its query (they only land events on the bus). An armed app whose mirror
  did not move since it was armed (read after the fence went up, so it cannot move any
  more) keeps its running queries and its first batch is released; one whose mirror moved
  (the old active wrote a batch after all) is stopped and started on the newest. Each app resumes
  from the old active's last micro-batch; apps that never ran resume from their committed
  bus positions.
* **Losing the lease** (taken over, or not renewed in time because the database is out of
  reach): stop every app at once, log why, carry on as passive.
* **A late renewal is not a lost lease.** When the deadline passes while the renewal is
  merely late (a starved keeper thread, a slow database), the apps are not stopped: each
  batch waits in ``before_write`` (nothing of it is written) until the renewal lands. If the
  database says this node still holds the lease at the same epoch, the batch goes on and
  nothing restarted — restarting a Spark query costs seconds to tens of seconds, more than
  the lease. Only a lease the database gave away, a database that answers with errors past
  the deadline, or no answer at all for nearly the whole lease time stops the apps. Safety
  does not depend on this wait: a successor raises the fence before it starts, so an old
  active's next mirror push — the first thing every batch does — is refused.
* **Active**: every ``RETRY_S`` it starts again an app whose query failed on its own (a
  transient Spark failure must not leave the group without the app); it resumes from its
  checkpoint, so nothing is lost or written twice.

Apps deployed to either node (REST API or deployment folder) are published in the cluster
database (:mod:`eddy.store.cluster_apps`) and written into the other node's folder
(:mod:`eddy.node.ha_apps`).

**Why a successor neither loses nor duplicates an output.** The active's query, in the
driver, pushes its checkpoint to the database when a micro-batch starts — its offsets are
logged, nothing of it is computed yet — and so before its ``@store`` tables and aggregations
write (in the tasks that compute it) and before its outputs are appended to the bus
(``before_write``); the push is refused once a newer epoch raised the fence, which fails the
batch before it writes anything. So the mirror always holds the offset log of every batch
whose outputs or table rows may have been written, partly or wholly. (Pushed after the
computation instead, a batch's table rows could commit and the push then be refused: the
successor would re-run the batch before it over rows that already hold its successor's.)

The successor restores that mirror — it never restores anything older than the old active's
last batch with outputs — and Spark re-runs the newest uncommitted batch with the same
offsets, the same state and the same query id (the mirror is the same run's checkpoint, not
a revision, so the query id is kept), so its outputs get the same bus idempotency keys,
``(producer = <app>/<group>/<query id>, batch id)``, and whatever of them the old active had
appended is dropped by the bus as a duplicate (NATS: ``Nats-Msg-Id`` within the stream's
duplicate window). Had the successor restored an older cut (a periodic revision), it would
plan batch N+1 over different offsets than the old active's batch N+1, and the bus would
keep the old batch and drop the new one: events lost. That is why the mirror is written
per batch.

**Tables and aggregations are fenced too.** The active exports its epoch before it starts
its apps (:func:`eddy.store.fence.export_epoch`; the Spark workers of its queries inherit
it), raises the fence in each app's table databases before the app resumes, and every
table or aggregation transaction checks the fence just before it commits: rows of a paused
old active that resumes after its successor started roll back.

An old active that was paused (SIGSTOP, a long GC) past its lease and resumes has at most
one batch between its last successful push and its appends: that batch is the very batch
the successor re-runs, with the same content and the same keys, so the bus keeps one copy;
its next push is refused and its query stops. Sinks follow the bus topics with event ids
``<token>:<stream>:<partition>:<bus seq>`` and the token is shared by both nodes (cluster
database), so a JetStream sink target deduplicates what both publish.

Every role change is logged with its reason and kept in :meth:`RoleKeeper.history`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from eddy.config import WorkerConfig
from eddy.node.deployment import DeploymentFolder
from eddy.node.ha_apps import GroupApps
from eddy.node.ha_follow import MirrorFollower
from eddy.node.ha_history import RoleHistory, now_ms
from eddy.node.registry import AppRegistry
from eddy.node.role import NodeRole
from eddy.store.cluster_apps import AppCatalog
from eddy.store.connect import connect
from eddy.store.fence import Epoch, Fenced, app_databases, export_epoch, raise_fence
from eddy.store.lease import Lease, LeaseView
from eddy.store.revisions import CheckpointMirror

log = logging.getLogger("eddy.node.ha")
RETRY_S = 10.0
"""How often the active starts apps again whose query failed on its own."""
EXPIRY_MARGIN_S = 0.05
"""How long after the holder's lease expires (database clock) the passive tries to take it."""
ARM_LATE = 0.25
"""How late (a fraction of ``heartbeatInterval``) the holder's renewal is when the passive
arms its apps (starts their queries ahead of a likely takeover)."""
ARM_HOLD_S = 60.0
"""How long an armed query's first batch waits for the role keeper's decision at most (it
normally comes within the lease time; the query then fails and a takeover starts it anew)."""
LOG_FIRST_BATCHES = 2
"""Batches after a takeover whose start is logged with the time since the lease was taken
(where a failover spends its time; ``bench/ha_failover.py --keep`` keeps the logs)."""


class NotActive(RuntimeError):
    """A write was attempted by a node that does not (or no longer surely) hold the lease."""


class RoleKeeper:
    """Keeps one node's role in step with its group's lease."""

    def __init__(self, config: WorkerConfig, registry: AppRegistry, folder: DeploymentFolder,
                 set_role: Callable[[NodeRole], None]) -> None:
        cluster = config.model.cluster
        strategy = cluster.strategyConfig
        assert cluster.groupId is not None and strategy.datasource is not None
        self.group_id = cluster.groupId
        self.node_id = config.node_id
        self.interval_s = strategy.heartbeatInterval / 1000
        self.arm_after_ms = strategy.heartbeatInterval * (1 + ARM_LATE)
        self.poll_s = strategy.eventPollingInterval / 1000
        ttl_ms = strategy.heartbeatInterval * strategy.heartbeatMaxRetry
        # Stop writing before the database can have given the lease away (see lease.py).
        self.deadline_s = (ttl_ms - max(strategy.heartbeatInterval / 2, ttl_ms / 4)) / 1000
        # No answer at all for (nearly) the lease time: step down before the database can
        # give the lease away (the watchdog looks every eighth of an interval).
        self.give_up_s = max(self.deadline_s, ttl_ms / 1000 - self.interval_s / 4)
        cluster_db = connect(config.datasource_url(strategy.datasource))
        self.lease = Lease(cluster_db, self.group_id, self.node_id, ttl_ms)
        self.catalog = AppCatalog(cluster_db, self.group_id)
        self.apps = GroupApps(self.catalog, folder)
        self.mirror = CheckpointMirror(
            connect(config.datasource_url(config.model.persistence.datasource)),
            config.model.persistence.table, self.group_id, lease_ms=ttl_ms)
        self.follower = MirrorFollower(self.mirror, registry, folder, self.lease)
        self.registry = registry
        self.folder = folder
        self._set_role = set_role
        self.epoch: int | None = None
        self.active = False
        self._renewed_at = 0.0   # monotonic time the last successful renewal was sent
        self._took_at = 0.0      # monotonic time this node last took the lease
        self._batches_logged = 0
        self._view: LeaseView | None = None
        self._next_poll = 0.0
        self._next_retry = 0.0
        self._transition: Future[None] | None = None  # the registry's last role change
        self._recovering = False  # took over; recovered_ms not written yet
        self._awaiting_output = False  # took over; first_output_ms not written yet
        self._armed_at: int | None = None  # the holder's renewal (DB ms) when it armed
        self._gates: dict[str, str] = {}
        """Armed apps: ``held`` (their batches wait), ``refused`` (their batches fail)."""
        self._history = RoleHistory()
        self._lock = threading.RLock()
        self._renewal = threading.Condition(self._lock)  # a renewal landed, or a step-down
        self._stop = threading.Event()
        self._stopping = threading.Event()  # the node stops: renew a held lease, nothing more
        self._thread = threading.Thread(target=self._run, name="eddy-ha", daemon=True)
        self._watchdog = threading.Thread(target=self._watch, name="eddy-ha-watchdog",
                                          daemon=True)
        registry.passive = True
        registry.batch_hook = self._batch_hook
        registry.undeployed_hook = self._forget
        registry.output_hook = self._output_seen
        self._publish_role("starting", f"joining HA group '{self.group_id}'")

    # -- lifecycle ------------------------------------------------------------------------

    def join(self) -> None:
        """Joins the group (refused with :class:`~eddy.store.lease.GroupFull` when two
        other nodes are live) and publishes the apps of the group into the folder."""
        self.lease.join()
        self.apps.sync()

    def start(self) -> None:
        """Starts renewing the lease and following the active."""
        self._thread.start()
        self._watchdog.start()

    def stopping(self) -> None:
        """The node is stopping its apps: from now on the keeper only renews a lease it
        holds — so the apps' last batches still write under it, and the other node does not
        take over before they stopped — and takes over, arms and follows nothing. The
        caller then stops the apps, :meth:`stop` and :meth:`release`."""
        self._stopping.set()
        self._set_gates("refused")  # armed batches fail, so their queries can stop

    def stop(self) -> None:
        """Stops the keeper's threads (after :meth:`stopping` and the apps' stop)."""
        self.stopping()
        self._stop.set()
        for thread in (self._thread, self._watchdog):
            if thread.is_alive():
                thread.join(timeout=30)
        self.follower.close()

    def release(self) -> None:
        """Hands the lease over at once (after the apps stopped), so the passive need not
        wait out the lease time."""
        try:
            self.lease.release()
            if self.active:
                log.info("HA: released the lease of group '%s' (epoch %s): stopping",
                         self.group_id, self.epoch)
        except SQLAlchemyError as error:
            log.warning("HA: could not release the lease: %s", error)

    def history(self) -> list[dict[str, Any]]:
        """The role changes so far, oldest first."""
        return self._history.entries()

    def planned_apps(self) -> list[str]:
        """The apps a takeover of this passive only has to start (see ``GET /ha``)."""
        return self.registry.planned_apps()

    def sink_token(self, app: str) -> str:
        """The app's sink-id token, shared with the other node (an app deployed here a
        moment ago is published first)."""
        try:
            return self.catalog.sink_token(app)
        except LookupError:
            self.apps.sync()
            return self.catalog.sink_token(app)

    # -- the keeper thread ----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._beat(started)
            except Exception:
                log.exception("HA: the role keeper's round failed")
            self._stop.wait(max(0.0, self._next_tick_s() - (time.monotonic() - started)))

    def _next_tick_s(self) -> float:
        """The time to the next round: an interval, or just past the moment the holder's
        lease expires by the database's clock when that comes sooner (a dead active is
        replaced up to an interval earlier)."""
        view = self._view
        if self.active or view is None or view.mine or view.holder is None:
            return self.interval_s
        expires_s = (view.renewed_ms + self.lease.ttl_ms - view.now_ms) / 1000
        ticks = [self.interval_s, max(0.0, expires_s) + EXPIRY_MARGIN_S]
        arm_s = (view.renewed_ms + self.arm_after_ms - view.now_ms) / 1000
        if self._armed_at is None and arm_s > 0:
            ticks.append(arm_s + EXPIRY_MARGIN_S)
        return min(ticks)

    def _beat(self, started: float) -> None:
        if self._stopping.is_set():
            if self.active:
                self._renew_while_stopping(started)
            return
        try:
            view = self.lease.tick()
        except SQLAlchemyError as error:
            reason = f"the cluster database is out of reach: {_short(error)}"
            if self.active and time.monotonic() - self._renewed_at > self.deadline_s:
                self._step_down(reason)
            elif not self.active:
                self._publish_role("passive", reason)
            return
        previous, self._view = self._view, view
        if view.mine:
            if self.active and view.epoch != self.epoch:  # lost and taken back meanwhile
                self._step_down(f"the lease came back at epoch {view.epoch}, not {self.epoch}")
            with self._renewal:
                late = time.monotonic() - self._renewed_at > self.deadline_s and self.active
                self._renewed_at = started
                self._renewal.notify_all()
            if late:
                log.info("HA: the late renewal still holds the lease at epoch %s: the apps "
                         "carry on", view.epoch)
            if not self.active:
                self._take_over(view, previous)
        elif self.active:
            self._step_down(f"node '{view.holder}' holds the lease now (epoch {view.epoch})")
        else:
            self._consider_arming(view)
        if time.monotonic() >= self._next_poll:
            self._next_poll = time.monotonic() + self.poll_s
            self._poll()
        if self.active:
            self._publish_role("active", None)
        else:
            self._publish_role("passive", f"node '{view.holder}' holds the lease (epoch "
                                          f"{view.epoch})" if view.holder else None)

    def _renew_while_stopping(self, started: float) -> None:
        try:
            view = self.lease.tick()
        except SQLAlchemyError:
            return  # past the deadline the batches wait, and fail within the lease time
        with self._renewal:
            if view.mine and view.epoch == self.epoch:
                self._renewed_at = started
            else:
                self.active = False  # lost it: the last batches are not written
            self._renewal.notify_all()

    def _watch(self) -> None:
        """Steps down when the keeper thread itself is stuck (a database that stopped
        answering mid-statement) for nearly the whole lease time. Past the mere deadline the
        batches wait in ``before_write`` instead (a late renewal may still hold the lease)."""
        while not self._stop.wait(self.interval_s / 8):
            if self.active and time.monotonic() - self._renewed_at > self.give_up_s:
                self._step_down(f"the lease was not renewed for {self.give_up_s:.1f} s "
                                f"(the cluster database does not answer)")

    def _poll(self) -> None:
        try:
            self.apps.sync()
            settled = self._transition is None or self._transition.done()
            if not self.active and settled and self._armed_at is None:
                self.follower.follow(lambda: not self.active)
            elif self.active and settled and time.monotonic() >= self._next_retry:
                self._next_retry = time.monotonic() + RETRY_S
                self._transition = self.registry.retry_failed()
            if self.active:
                self.follower.protect()
        except SQLAlchemyError as error:
            log.warning("HA: could not read the group's apps or state: %s", _short(error))
            self.follower.in_sync = False

    # -- role changes ---------------------------------------------------------------------

    def _note_takeover(self, *, loss_ms: int | None = None, recovered_ms: int | None = None,
                       first_output_ms: int | None = None) -> None:
        """Writes the takeover's times that are given into the history; a time written
        is no longer awaited."""
        with self._lock:
            self._history.note_takeover(loss_ms=loss_ms, recovered_ms=recovered_ms,
                                        first_output_ms=first_output_ms)
            if recovered_ms is not None:
                self._recovering = False
            if first_output_ms is not None:
                self._awaiting_output = False

    def _apps_active(self, epoch: int) -> None:
        """The takeover's apps have all started (called as the registry's role change
        ends, so the time is not rounded up to the next poll)."""
        with self._lock:
            if self.active and self.epoch == epoch and self._recovering:
                self._note_takeover(recovered_ms=now_ms())

    def _output_seen(self, batch_id: int, events: int) -> None:
        """A runner appended a batch's outputs: the first with events after a takeover
        ends the failover as a client of the outputs sees it."""
        if events and self._awaiting_output and self.active:
            self._note_takeover(first_output_ms=now_ms())

    def _take_over(self, view: LeaseView, previous: LeaseView | None = None) -> None:
        try:
            # the mirror's bounded sessions: a paused old holder cannot stall this
            raise_fence(self.mirror.engine, self.group_id, view.epoch)
        except (Fenced, SQLAlchemyError) as error:
            log.warning("HA: holding the lease but cannot fence the persistence database: %s",
                        _short(error))
            return
        export_epoch(Epoch(self.group_id, view.epoch))  # before any query of this epoch
        with self._lock:
            self.epoch = view.epoch
            self.active = True
            self._armed_at = None
            self._took_at = time.monotonic()
            self._batches_logged = 0
        reason = f"took the lease of group '{self.group_id}' at epoch {view.epoch}"
        self._publish_role("active", reason)
        if previous is not None and previous.holder not in (None, self.node_id):
            self._note_takeover(loss_ms=previous.renewed_ms)
            self._recovering = self._awaiting_output = True
        try:
            self.lease.report("active", {}, 0)
        except SQLAlchemyError:
            pass  # only for `eddy ha status`; the next round reports again
        self._transition = self.registry.go_active(self._prepare, self._keep_armed)
        self._transition.add_done_callback(lambda _: self._apps_active(view.epoch))

    def _consider_arming(self, view: LeaseView) -> None:
        """Passive: arms the apps when the holder is late renewing, disarms them when it
        renewed after all (see the module docstring)."""
        if view.holder is None:
            return  # a free lease: the next round takes it
        if self._armed_at is not None:
            if view.renewed_ms - self._armed_at >= self.lease.ttl_ms:
                self._disarm(f"node '{view.holder}' kept renewing its lease for "
                             f"{self.lease.ttl_ms} ms after all")
            return
        late_ms = view.now_ms - view.renewed_ms
        settled = self._transition is None or self._transition.done()
        if late_ms < self.arm_after_ms or not settled or not self.registry.armable():
            return
        self._armed_at = view.renewed_ms
        log.info("HA: node '%s' last renewed its lease %d ms ago: the apps' queries start "
                 "ahead, their first micro-batch held until this node holds the lease",
                 view.holder, late_ms)
        self._transition = self.registry.arm(self._arm_app)

    def _disarm(self, reason: str) -> None:
        with self._renewal:
            self._armed_at = None
            self._set_gates("refused")
        log.info("HA: %s: the queries started ahead stop", reason)
        self._transition = self.registry.disarm(reason)
        # The armed queries wrote into the checkpoints: pull them whole once they stopped.
        self._transition.add_done_callback(lambda _: self.follower.pulled.clear())

    def _set_gates(self, gate: str) -> None:
        """Sets every armed app's gate, waking the batches that wait on it."""
        with self._renewal:
            for app in self._gates:
                self._gates[app] = gate
            self._renewal.notify_all()

    def _arm_app(self, app: str) -> bool:
        """Readies an app's checkpoint for its armed queries, whose batches are then held;
        False (the app is not armed) when the node was disarmed or took over meanwhile."""
        with self._renewal:
            if self._armed_at is None:
                return False
            self._gates[app] = "held"
        self.follower.pull(app)
        return True

    def _keep_armed(self, app: str) -> bool:
        """At takeover (the fence raised): whether an armed app's queries may go on —
        its mirror has not moved since it was armed. Releases or refuses its batches."""
        self._fence_tables(app)
        head = self.mirror.head(app)
        keep = (head.rev if head is not None else 0) == self.follower.pulled.get(app, 0)
        with self._renewal:
            if keep:
                self._gates.pop(app, None)
            else:
                self._gates[app] = "refused"
            self._renewal.notify_all()
        if keep:
            log.info("HA: app %s resumes with its queries started ahead (micro-batch %s of "
                     "epoch %s is still the newest)", app,
                     head.batch_id if head else "-", head.epoch if head else "-")
        return keep

    def _step_down(self, reason: str) -> None:
        with self._renewal:
            if not self.active:
                return
            self.active = False
            self.follower.pulled.clear()  # our own last batches may not be the group's
            self._renewal.notify_all()  # a batch waiting for a renewal fails now
        if self._stopping.is_set():  # the apps are being stopped anyway
            log.warning("HA: node '%s' stepped down while stopping: %s", self.node_id, reason)
            return
        self._transition = self.registry.go_passive(reason)
        self._publish_role("passive", f"stepped down: {reason}")

    def _publish_role(self, status: str, reason: str | None) -> None:
        with self._lock:
            view = self._view
            reason, changed = self._history.record(
                status, reason, self.epoch or (view.epoch if view else None),
                view.holder if view else None)
            if changed:
                log.warning("HA: node '%s' is %s: %s", self.node_id, status, reason)
            self._set_role(NodeRole(
                mode="ha", status=status,  # type: ignore[arg-type]
                cluster_id=self.group_id, node_id=self.node_id,
                epoch=self.epoch if self.active else (view.epoch if view else None),
                holder=view.holder if view else None,
                last_renewal_ms=view.renewed_ms if view else None,
                in_sync=self.active or self.follower.in_sync,
                last_sync_ms=self.follower.last_sync_ms,
                lag_events=0 if self.active else self.follower.lag_events, reason=reason))

    # -- state ----------------------------------------------------------------------------

    def _batch_hook(self, app: str, checkpoint: Path) -> Callable[[int], None]:
        def before_write(batch_id: int) -> None:
            epoch = self._await_lease(app, batch_id)
            self.mirror.push(app, checkpoint, epoch, batch_id)
            self.follower.pushed(app, checkpoint)
            with self._lock:
                if self._batches_logged < LOG_FIRST_BATCHES:
                    self._batches_logged += 1
                    log.info("HA: app %s: micro-batch %d starts %.1f s after the lease was "
                             "taken", app, batch_id, time.monotonic() - self._took_at)
        return before_write

    def _await_lease(self, app: str, batch_id: int) -> int:
        """The epoch a batch may write under: at once while the lease is fresh; past the
        deadline, once a late renewal lands (see the module docstring); for an armed app,
        once the takeover released it. Raises :class:`NotActive` when this node is (or
        becomes) passive, no renewal lands within the lease time, or an armed app's batch is
        refused."""
        with self._renewal:
            held_until = time.monotonic() + ARM_HOLD_S
            while self._gates.get(app) == "held" and time.monotonic() < held_until:
                self._renewal.wait(min(self.interval_s, held_until - time.monotonic()))
            gate = self._gates.get(app)
            if gate is not None:
                raise NotActive(f"app {app}: batch {batch_id} was started ahead on the passive "
                                f"and is not written ({gate})")
            limit = time.monotonic() + self.give_up_s
            while self.active and time.monotonic() - self._renewed_at > self.deadline_s \
                    and time.monotonic() < limit:
                self._renewal.wait(min(self.interval_s / 4, limit - time.monotonic()))
            epoch, active = self.epoch, self.active
            fresh = time.monotonic() - self._renewed_at <= self.deadline_s
        if not active or epoch is None:
            raise NotActive(f"app {app}: this node is not the active one of HA group "
                            f"'{self.group_id}'; batch {batch_id} is not written")
        if not fresh:
            raise NotActive(f"app {app}: the lease was not renewed in time; batch "
                            f"{batch_id} is not written")
        return epoch

    def _forget(self, app: str) -> None:
        """An app was undeployed: see :meth:`MirrorFollower.forget`."""
        with self._lock:
            epoch = self.epoch if self.active else None
        self.follower.forget(app, epoch)

    def _prepare(self, app: str) -> None:
        """Shuts the old epochs out of the app's table databases and brings its checkpoint
        to the mirror's newest (at takeover)."""
        with self._renewal:
            self._gates.pop(app, None)  # any armed queries of the app are stopped by now
        self._fence_tables(app)
        self.follower.pull(app)

    def _fence_tables(self, app: str) -> None:
        """Shuts the old epochs out of the app's table databases."""
        view = self.registry.get(app)
        if view.analyzed is not None and self.epoch is not None:
            for url in app_databases(view.analyzed):
                raise_fence(connect(url), self.group_id, self.epoch)


def _short(error: BaseException) -> str:
    return str(error).splitlines()[0][:200]
