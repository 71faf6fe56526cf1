"""``eddy manager``: one manager of the fully distributed deployment.

Managers of one ``cluster.config.groupId`` share the manager database
(:mod:`eddy.store.manager_state`) and elect a leader with the same fenced lease as minimum
HA (:mod:`eddy.store.lease`, renewed every ``strategyConfig.heartbeatInterval``). Only the
leader changes anything; a follower answers reads from the database and sends writes and
heartbeats to the leader (307 / 301).

**Worker credentials** (the ``httpsInterface`` a worker sends in each heartbeat) are kept
in the leader's memory only, never in the manager database (:mod:`eddy.store.manager_state`):
a leader calls a worker's API only once that worker heartbeated to it.

**The leader.** On taking the lease it raises the fence in the manager database to its
epoch (a paused old leader can write nothing after that), loads the workers, waits until
each has heartbeated (bringing its credentials) or is lost, and *reconciles*: it lists
every worker's apps and makes them match the desired placement — a missing or changed
child (content hash) is deployed, a child a worker runs but should not (an orphan of a
leader that died mid-change) is undeployed. Then, every
``deployment.config.heartbeatInterval``, a round:

* a worker silent for ``heartbeatInterval × heartbeatMaxRetry`` is lost: its children are
  placed on the other workers; if any cannot be, the whole parent is undeployed and waits;
* every waiting parent is placed all-or-nothing (:mod:`eddy.cluster.placement`), never
  while fewer than ``minResourceCount`` resource workers are up — the reason is kept with
  the app and shown by the API;
* the deployment folder: parent apps dropped, changed or deleted there are deployed,
  replaced or undeployed as through the API (:mod:`eddy.cluster.manager_folder`);
* the children of deleted or replaced parents (retired in the manager database) have
  their state deleted from the workers' persistence database by a live worker;
* every ``RECONCILE_ROUNDS`` rounds, the reconciliation again (a worker that restarted or
  wiped its apps gets its children back; a child that failed on its worker is deployed
  there again; a returning worker that was lost is empty, and takes new placements).

A parent is never half-deployed for longer than one round: placement is recorded only
after every child was deployed, and a failure undeploys what this attempt deployed. Before
it places a parent's children the leader creates the bus topics they read and holds them
from retention under each reader's consumer (:mod:`eddy.cluster.child_inputs`), so what a
receiver child takes while the others still start is kept for them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from eddy.bus import Bus, open_bus
from eddy.cluster.child_inputs import InputHolds
from eddy.cluster.manager_folder import ManagerFolder
from eddy.cluster.topic_lag import child_lags
from eddy.cluster.placement import Waiting, assign, resource_shortage
from eddy.cluster.worker_client import FAULTY, DeployError, WorkerClient, content_version
from eddy.config import WorkerConfig
from eddy.node.deployment import DeploymentFolder
from eddy.plan.children import ChildApp, split_app
from eddy.store.connect import connect
from eddy.store.fence import Fenced, raise_fence
from eddy.store.lease import Lease
from eddy.store.manager_state import ChildRow, ManagerState, ParentApp, WorkerRow

log = logging.getLogger("eddy.cluster.manager")
RECONCILE_ROUNDS = 5
"""Every how many rounds the leader compares every worker's apps with the placement."""
SCHEDULE_EVENTS = 200
"""How many scheduling events (:meth:`Manager.schedule_events`) a manager keeps."""
STANDALONE_LEASE_MS = 1000
"""Lease renewal of a manager that is not clustered (it is its group's only member)."""


Split = Callable[[str, str], Sequence[ChildApp]]
"""``(app text, origin) -> child apps`` (:func:`eddy.plan.children.split_app`)."""


class AppExists(RuntimeError):
    """A POST of a parent app whose name is taken."""


class NotLeader(RuntimeError):
    """A change asked of a manager that does not lead (the API redirects it)."""


@dataclass
class LiveWorker:
    """A worker the leader hears from; ``seen`` is monotonic seconds. ``heard``: it has
    heartbeated to this leader, so ``row`` holds the credentials it sent (the database
    keeps none); a worker only loaded from the database at a takeover is not called until
    then."""

    row: WorkerRow
    seen: float
    heard: bool = True

    @property
    def callable(self) -> bool:
        """Whether the leader can call the worker's API: it heard the credentials, or the
        worker needs none."""
        return self.heard or self.row.username is None


class Manager:
    """One manager process: its lease, and — while it leads — the scheduler."""

    def __init__(self, config: WorkerConfig, split: Split = split_app) -> None:
        self.config = config
        deployment = config.model.deployment
        cluster = config.model.cluster
        self.node_id = config.node_id
        self.group_id = config.manager_group
        self.clustered = cluster.enabled
        self.interval_s = deployment.heartbeatInterval / 1000
        self.heartbeat_max_retry = deployment.heartbeatMaxRetry
        self.worker_timeout_s = self.interval_s * deployment.heartbeatMaxRetry
        self.min_resource_count = deployment.minResourceCount
        strategy = cluster.strategyConfig
        lease_ms = strategy.heartbeatInterval if self.clustered else STANDALONE_LEASE_MS
        ttl_ms = lease_ms * (strategy.heartbeatMaxRetry if self.clustered else 3)
        self.lease_interval_s = lease_ms / 1000
        # Stop acting before the database can have given the lease away (see lease.py).
        self.deadline_s = (ttl_ms - max(lease_ms / 2, ttl_ms / 4)) / 1000
        self.db = connect(config.manager_db_url())
        self.state = ManagerState(self.db, self.group_id)
        self.lease = Lease(connect(config.manager_cluster_db_url()), self.group_id,
                           self.node_id, ttl_ms)
        self.host, self.port = self._advertised()
        self.client = WorkerClient(config.peer_verify())
        self.bus_url = config.bus_url
        self._split = split
        self.folder = ManagerFolder(DeploymentFolder(config.deployment_dir),
                                    lambda text, name: self.submit(text, name, replace=True),
                                    self.remove)
        self.epoch: int | None = None
        self.holder: str | None = None
        self._renewed_at = 0.0
        self._workers: dict[str, LiveWorker] = {}
        self._workers_lock = threading.Lock()  # heartbeats never wait for a round
        self._heard = threading.Condition(self._workers_lock)  # notified on each heartbeat
        self._takeover = False
        self._rounds = 0
        self._reconcile_soon = False
        self._lock = threading.RLock()  # one change at a time: API calls and rounds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._bus: Bus | None = None  # opened on first use (held inputs, topic lags)
        self._bus_lock = threading.Lock()
        self._holds = InputHolds()  # the topics of placed children, held from retention
        self._events: deque[dict[str, Any]] = deque(maxlen=SCHEDULE_EVENTS)
        self._threads = [threading.Thread(target=self._lease_loop, name="eddy-mgr-lease",
                                          daemon=True),
                         threading.Thread(target=self._schedule_loop, name="eddy-mgr-sched",
                                          daemon=True)]

    def _advertised(self) -> tuple[str, int]:
        interface = self.config.model.deployment.httpsInterface
        listener = next((l for l in self.config.listeners() if l.scheme == "https"),
                        self.config.listeners()[0])
        if interface is not None:
            return interface.host, interface.port
        return ("localhost" if listener.host in ("0.0.0.0", "::") else listener.host,
                listener.port)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the lease and the scheduler threads."""
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stops both threads and hands the lease over at once (the workers keep their
        apps; the next leader reconciles them)."""
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout=30)
        with self._bus_lock:
            if self._bus is not None:
                self._bus.close()
        try:
            self.lease.release()
        except SQLAlchemyError as error:
            log.warning("could not release the managers' lease: %s", error)

    # -- leadership -----------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this manager holds the lease (and surely still does)."""
        return self.epoch is not None and \
            time.monotonic() - self._renewed_at < self.deadline_s

    def leader(self) -> dict[str, Any] | None:
        """``{id, host, port}`` of the leader as the database knows it; None: no leader."""
        if self.is_leader:
            return {"id": self.node_id, "host": self.host, "port": self.port}
        holder = self.holder
        for manager in self.state.managers():
            if manager.node_id == holder:
                return {"id": holder, "host": manager.host, "port": manager.port}
        return None

    def connected_managers(self) -> list[dict[str, Any]]:
        """Every manager that showed up within the lease time (WSO2's ``connectedManagers``)."""
        ttl_ms = self.lease.ttl_ms
        return [{"host": m.host, "port": m.port} for m in self.state.managers()
                if m.now_ms - m.seen_ms <= ttl_ms]

    def _lease_loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.state.manager_seen(self.node_id, self.host, self.port)
                view = self.lease.tick()
                self.holder = view.holder
                if view.mine:
                    self._renewed_at = started
                    if self.epoch != view.epoch:
                        self._take_over(view.epoch)
                elif self.epoch is not None:
                    self._step_down(f"manager {view.holder} holds the lease now "
                                    f"(epoch {view.epoch})")
            except SQLAlchemyError as error:
                log.warning("manager database out of reach: %s", str(error).splitlines()[0])
            if self.epoch is not None and not self.is_leader:
                self._step_down("the lease could not be renewed in time")
            self._stop.wait(max(0.0, self.lease_interval_s - (time.monotonic() - started)))

    def _take_over(self, epoch: int) -> None:
        raise_fence(self.db, self.group_id, epoch)
        # Every registered worker gets one detection time to heartbeat here, and is known
        # (EXISTS) when it does: NEW would make it drop its apps.
        now = time.monotonic()
        with self._workers_lock:
            self._workers = {n: LiveWorker(w, now, heard=False)
                             for n, w in self.state.workers().items()}
        with self._lock:
            self.epoch = epoch
            self._takeover = True
        log.info("manager %s leads group '%s' (epoch %d)", self.node_id, self.group_id, epoch)
        self._note("lead", None, f"manager {self.node_id} leads (epoch {epoch})")
        self._wake.set()

    def _step_down(self, reason: str) -> None:
        with self._lock:
            if self.epoch is None:
                return
            log.warning("manager %s no longer leads group '%s': %s", self.node_id,
                        self.group_id, reason)
            self.epoch = None
            self.folder.forget()
            with self._workers_lock:
                self._workers.clear()

    def _epoch(self) -> int:
        epoch = self.epoch
        if epoch is None or not self.is_leader:
            raise NotLeader(f"manager {self.node_id} does not lead group '{self.group_id}'")
        return epoch

    # -- the API's changes ----------------------------------------------------------------

    def submit(self, text: str, name: str, *, replace: bool) -> bool:
        """Stores parent app ``name`` (split into its children) and places it at once when
        it can; True when it is new. :class:`AppExists` for a POST of a taken name; a
        :class:`~eddy.lang.SiddhiAppError` when it cannot be split."""
        children = [ChildRow(c.name, name, c.group, c.instance, c.receiver, c.text,
                             c.version, None) for c in self._split(text, f"{name}.siddhi")]
        with self._lock:
            epoch = self._epoch()
            existing = self.state.apps().get(name)
            if existing is not None and not replace:
                raise AppExists(name)
            if existing is not None:
                same = {(c.name, c.version) for c in self.state.children(name)} == \
                    {(c.name, c.version) for c in children}
                if same and existing.text == text:
                    return False
                self._undeploy_parent(name)  # the old children go first (product-sp#964)
            self.state.put_app(epoch, name, text, children, "waiting for its first placement")
            log.info("app %s stored: %d child apps (%s)", name, len(children),
                     ", ".join(c.name for c in children))
            self._place(name)
            return existing is None

    def remove(self, name: str) -> bool:
        """Undeploys every child of parent ``name`` and forgets it; False if unknown."""
        with self._lock:
            epoch = self._epoch()
            if name not in self.state.apps():
                return False
            self._undeploy_parent(name)
            self.state.delete_app(epoch, name)
            log.info("app %s undeployed and deleted", name)
            return True

    def heartbeat(self, node_id: str, state: str, host: str, port: int,
                  username: str | None, password: str | None,
                  receiver: bool) -> str:
        """Records a worker's heartbeat; returns its ``joinedState`` (``NEW`` when the
        leader did not know it, else ``EXISTS``)."""
        row = WorkerRow(node_id, host, port, username, password, receiver)
        epoch = self._epoch()
        with self._workers_lock:
            known = self._workers.get(node_id)
            self._workers[node_id] = LiveWorker(row, time.monotonic())
            self._heard.notify_all()
        if known is None or known.row != row:
            self.state.save_worker(epoch, row)
        if known is None:
            log.info("worker %s joined (%s:%d, %s node)", node_id, host, port,
                     "receiver" if receiver else "resource")
            self._note("joined", None, f"worker {node_id} joined ({host}:{port})")
            self._wake.set()
            return "NEW"
        if state == "NEW":
            # It restarted or dropped its apps (no manager in reach) within the detection
            # time: give it its children back in the next round.
            log.info("worker %s came back empty: its children are redeployed", node_id)
            self._reconcile_soon = True
            self._wake.set()
        return "EXISTS"

    # -- reading (any manager) ------------------------------------------------------------

    def apps(self) -> dict[str, ParentApp]:
        return self.state.apps()

    def children(self, parent: str | None = None) -> list[ChildRow]:
        return self.state.children(parent)

    def workers(self) -> dict[str, WorkerRow]:
        """The workers the leader hears from (a follower: those registered)."""
        if self.is_leader:
            return self._live_rows()
        return self.state.workers()

    def last_seen_ms(self, node_id: str) -> int | None:
        """When the leader last heard from a worker (epoch ms), None if it does not."""
        live = self._workers.get(node_id)
        if live is None:
            return None
        return int((time.time() - (time.monotonic() - live.seen)) * 1000)

    # -- the scheduler --------------------------------------------------------------------

    def _schedule_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stop.is_set() or not self.is_leader:
                continue
            try:
                self._round()
            except (Fenced, NotLeader) as error:
                self._step_down(str(error))
            except Exception:
                log.exception("the scheduling round failed")

    def _round(self) -> None:
        with self._lock:
            self._epoch()
            self._drop_lost_workers()
            if self._takeover:
                if not self._all_callable():
                    return  # a heartbeat brings each worker's credentials within a beat
                self._reconcile()
                self._takeover = False
            for name, app in self.state.apps().items():
                if any(c.node_id is None or c.node_id not in self._workers
                       for c in self.state.children(name)) or app.status != "deployed":
                    self._place(name)
            self.folder.poll()
            self._forget_retired()
            self._rounds += 1
            if self._rounds >= RECONCILE_ROUNDS or self._reconcile_soon:
                self._rounds, self._reconcile_soon = 0, False
                self._reconcile()

    def _drop_lost_workers(self) -> None:
        epoch = self._epoch()
        now = time.monotonic()
        with self._workers_lock:
            lost = [n for n, w in self._workers.items()
                    if now - w.seen > self.worker_timeout_s]
            for node in lost:
                del self._workers[node]
        for node in lost:
            self.state.remove_worker(epoch, node)
            moved = [c for c in self.state.children() if c.node_id == node]
            log.warning("worker %s lost (no heartbeat for %.1f s): moving %d child apps",
                        node, self.worker_timeout_s, len(moved))
            self.state.place(epoch, {c.name: None for c in moved})
            self._note("lost", None, f"worker {node} lost (no heartbeat for "
                                     f"{self.worker_timeout_s:.1f} s): rescheduling "
                                     f"{', '.join(c.name for c in moved) or 'nothing'}")

    def _live_rows(self) -> dict[str, WorkerRow]:
        with self._workers_lock:
            return {n: w.row for n, w in self._workers.items()}

    def _callable_rows(self) -> dict[str, WorkerRow]:
        """The live workers whose API the leader can call (:attr:`LiveWorker.callable`)."""
        with self._workers_lock:
            return {n: w.row for n, w in self._workers.items() if w.callable}

    def _await_callable(self, nodes: set[str]) -> None:
        """Waits until each of ``nodes`` that is live has heartbeated to this leader (just
        after a takeover it has no credentials for them), at most one detection time:
        then it is lost anyway. Heartbeats take no round lock, so they come meanwhile."""
        deadline = time.monotonic() + self.worker_timeout_s
        with self._heard:
            while True:
                waiting = [n for n in nodes
                           if n in self._workers and not self._workers[n].callable]
                left = deadline - time.monotonic()
                if not waiting or left <= 0:
                    return
                self._heard.wait(left)

    def _all_callable(self) -> bool:
        with self._workers_lock:
            return all(w.callable for w in self._workers.values())

    def _place(self, parent: str) -> None:
        """Places the parent's unplaced children, all or none; on failure the whole parent
        is undeployed and waits, with the reason."""
        epoch = self._epoch()
        children = self.state.children(parent)
        live = self._live_rows()
        stay = [c for c in children if c.node_id is not None and c.node_id in live]
        todo = [c for c in children if c not in stay]
        if not todo:
            self.state.set_status(epoch, parent, "deployed", "")
            return
        with self._bus_lock:
            held = self._holds.hold(self._shared_bus, children)
        if not held:
            return  # the next round tries again
        if not self._all_callable():
            return  # just took over: placed once every worker heartbeated (next round)
        load = Counter(c.node_id for c in self.state.children() if c.node_id in live)
        chosen = assign(todo, live, {n: load[n] for n in live}, self.min_resource_count,
                        stay)
        if isinstance(chosen, Waiting):
            self._hold(parent, children, chosen.reason)
            return
        deployed: list[ChildRow] = []
        for child in todo:
            node = chosen[child.name]
            try:
                self.client.deploy(live[node], child.name, child.text)
            except DeployError as error:
                self._hold(parent, stay + deployed, str(error), also={
                    c.name: chosen[c.name] for c in deployed})
                return
            deployed.append(replace(child, node_id=node))
        self.state.place(epoch, chosen)
        self.state.set_status(epoch, parent, "deployed", "")
        log.info("app %s deployed: %s", parent,
                 ", ".join(f"{c.name} on {c.node_id}" for c in stay + deployed))
        self._note("placed", parent, ", ".join(f"{c.name} on {c.node_id}" for c in deployed))

    def _shared_bus(self) -> Bus:
        """The manager's bus connection, opened on first use (call under ``_bus_lock``)."""
        if self._bus is None:
            self._bus = open_bus(self.bus_url)
        return self._bus

    def _hold(self, parent: str, placed: Sequence[ChildRow], reason: str,
              also: dict[str, str] | None = None) -> None:
        """Undeploys what of ``parent`` is deployed and marks it waiting with ``reason``."""
        epoch = self._epoch()
        live = self._callable_rows()
        where = {c.name: c.node_id for c in placed if c.node_id is not None}
        where.update(also or {})
        for child, node in where.items():
            if node in live:
                try:
                    self.client.undeploy(live[node], child)
                except DeployError as error:
                    log.warning("%s (the reconciliation retries it)", error)
        self.state.place(epoch, {c.name: None for c in self.state.children(parent)})
        app = self.state.apps().get(parent)
        if app is None or app.reason != reason or app.status != "waiting":
            log.warning("app %s waits: %s", parent, reason)
            self._note("waiting", parent, reason)
        self.state.set_status(epoch, parent, "waiting", reason)

    def _undeploy_parent(self, parent: str) -> None:
        children = self.state.children(parent)
        self._await_callable({c.node_id for c in children if c.node_id is not None})
        live = self._callable_rows()  # on the others the reconciliation undeploys it
        for child in children:
            if child.node_id in live:
                try:
                    self.client.undeploy(live[child.node_id], child.name)
                except DeployError as error:
                    log.warning("%s (the reconciliation retries it)", error)

    def _forget_retired(self) -> None:
        """Has a live worker delete the state of each retired child (its parent was deleted
        or replaced) from the persistence database: any worker, as they all share it and
        the one that ran the child may be dead; what fails is asked again next round."""
        retired = self.state.retired()
        workers = self._callable_rows()
        if not retired or not workers:
            return
        epoch = self._epoch()
        current = {c.name for c in self.state.children()}  # a changed parent's, same name
        for child, version in retired:
            for node in sorted(workers):  # the next one when a worker cannot do it
                try:
                    self.client.forget_state(workers[node], child, version,
                                             positions=child not in current)
                except DeployError as error:
                    log.warning("%s (another worker or the next round tries again)", error)
                    continue
                self.state.state_deleted(epoch, child, version)
                log.info("the state of retired child %s deleted by %s", child, node)
                break

    def _reconcile(self) -> None:
        """Makes every live worker run exactly the children placed on it, each with its
        current version: missing or changed ones are deployed, others undeployed."""
        epoch = self._epoch()
        desired: dict[str, dict[str, ChildRow]] = {}
        for child in self.state.children():
            if child.node_id is not None:
                desired.setdefault(child.node_id, {})[child.name] = child
        with self._workers_lock:
            recent = {n: w.row for n, w in self._workers.items()
                      if w.callable and time.monotonic() - w.seen <= 2 * self.interval_s}
        for node, row in recent.items():  # a silent one is probably paused or gone
            try:
                actual = self.client.apps(row)
            except DeployError as error:
                log.warning("reconciling: %s", error)
                continue
            wanted = desired.get(node, {})
            for name in sorted(set(actual) - set(wanted)):
                log.info("reconciling: %s runs %s, which is placed elsewhere or nowhere: "
                         "undeploying it", node, name)
                self._try(lambda: self.client.undeploy(row, name))
            for name, child in sorted(wanted.items()):
                if actual.get(name) != content_version(child.text):
                    failed = actual.get(name) == FAULTY
                    log.info("reconciling: %s %s %s", node,
                             "lacks" if name not in actual else "has a faulty copy of"
                             if failed else "has another version of", name)
                    if not self._try(lambda: self.client.deploy(row, name, child.text,
                                                                again=failed)):
                        self.state.place(epoch, {name: None})

    @staticmethod
    def _try(call: Callable[[], None]) -> bool:
        try:
            call()
            return True
        except DeployError as error:
            log.warning("reconciling: %s", error)
            return False

    # -- what the API shows ---------------------------------------------------------------

    def _note(self, kind: str, app: str | None, message: str) -> None:
        """Keeps a scheduling event for the dashboard (``lead``, ``joined``, ``lost``,
        ``placed``, ``waiting``); in memory, so a follower knows only what it did itself
        while it led."""
        self._events.append({"atMs": int(time.time() * 1000), "kind": kind, "app": app,
                             "manager": self.node_id, "message": message})

    def topic_lags(self, parent: str) -> list[dict[str, Any]]:
        """Each child of ``parent``'s lag on the topics it reads, from the shared bus
        (:func:`~eddy.cluster.topic_lag.child_lags`)."""
        with self._bus_lock:
            return child_lags(self._shared_bus(), self.state.children(parent))

    def schedule_events(self) -> list[dict[str, Any]]:
        """The latest scheduling events, oldest first."""
        return list(self._events)

    def waiting_reason(self, parent: str) -> str | None:
        """Why a parent is not deployed (None when it is)."""
        app = self.state.apps().get(parent)
        if app is None or app.status == "deployed":
            return None
        return app.reason or resource_shortage(self.workers().values(),
                                               self.min_resource_count)
