"""``eddy worker``: one process, one SparkSession, any number of apps.

:class:`Worker` assembles the node: the deployment folder and its watcher, the app registry
with its runners, the revision store and periodic persistence, and the node's metrics. The
HTTP API is served by the caller (``eddy.cli`` passes :func:`eddy.api.server.serve_api`),
because the API sits above the node in eddy's layers.

Start-up: the folders, then — on the lifecycle thread, so the API answers meanwhile — the
SparkSession and every app in the folder, each resuming from its checkpoint.
"""

from __future__ import annotations

import hmac
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from dataclasses import replace
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from eddy.config import ConfigError, WorkerConfig, load_config
from eddy.io.config import Authenticate, IoConfig
from eddy.node.deployment import DeploymentFolder
from eddy.node.metrics import NodeStats, metrics_reporter
from eddy.node.persistence import PeriodicPersistence, RevisionStore
from eddy.node.registry import AppRegistry
from eddy.node.role import SINGLE_NODE, NodeRole
from eddy.node.runner import (
    RunnerFactory,
    connector_factory,
    forget_query_identity,
    spark_runner_factory,
    warm_up,
)
from eddy.node.watcher import FolderWatcher

if TYPE_CHECKING:
    from eddy.node.child_state import ChildState
    from eddy.node.distributed import HeartbeatSender
    from eddy.node.ha import RoleKeeper
    from eddy.store.db_revisions import DbRevisions
from eddy.store.aggregation_settings import export_settings
from eddy.store.lease import GroupFull

log = logging.getLogger("eddy.node.worker")
HEALTH_INTERVAL_S = 1.0


def real_time_batch_s(config: WorkerConfig) -> float | None:
    """``eddy.realTimeBatchS``, at most half the persistence interval: persisting restarts
    every app, and a real-time batch cut short by a restart is never committed, so with a
    longer batch an app would replay ever more of its input after each persisting. None
    (micro-batches) on the nodes whose apps change hands: minimum HA and distributed
    workers."""
    batch_s = config.model.eddy.realTimeBatchS
    persistence = config.model.persistence
    if config.is_ha and batch_s is not None:
        log.warning("eddy.realTimeBatchS is ignored in minimum HA: the active hands its "
                    "state over micro-batch by micro-batch")
        return None
    if config.is_distributed_worker and batch_s is not None:
        # A child the manager moves resumes from the state its last worker mirrored, which
        # a real-time batch does not leave: the batch cut by the move would run again under
        # another query and its outputs land twice.
        log.warning("eddy.realTimeBatchS is ignored on a distributed worker: a child app "
                    "moved to another worker continues micro-batch by micro-batch")
        return None
    if batch_s is None or not persistence.enabled or persistence.intervalInMin <= 0:
        return batch_s
    bounded = min(batch_s, persistence.intervalInMin * 60 / 2)
    if bounded < batch_s:
        log.warning("real-time apps checkpoint every %.0f s, not eddy.realTimeBatchS = %.0f s: "
                    "state.persistence restarts them every %.0f s", bounded, batch_s,
                    persistence.intervalInMin * 60)
    return bounded


class Worker:
    """The node's parts, started and stopped together."""

    def __init__(self, config: WorkerConfig, runner_factory: RunnerFactory | None = None,
                 *, start_spark: bool = True) -> None:
        self.config = config
        self.folder = DeploymentFolder(config.deployment_dir)
        persistence = config.model.persistence
        self.store = RevisionStore(config.persistence_dir, persistence.revisionsToKeep,
                                   revision_database(config))
        self.ha: RoleKeeper | None = None
        # Before the HA role keeper, which publishes "starting" as it is made: set after it,
        # a restarted HA node said "active" (the single node's role) until its first round.
        self._role: NodeRole = SINGLE_NODE
        if runner_factory is None:
            settings = io_config(config)
            if config.is_ha:
                settings = replace(settings, sink_token=self._sink_token)
            self.registry = AppRegistry(self.folder, self.store,
                                        spark_runner_factory(real_time_batch_s(config)),
                                        config.bus_url, forget_query_identity,
                                        io_factory=connector_factory(config.data_dir / "io",
                                                                     settings))
        else:
            self.registry = AppRegistry(self.folder, self.store, runner_factory, config.bus_url)
        if config.is_ha:
            from eddy.node.ha import RoleKeeper

            if runner_factory is None:
                scratch = config.data_dir / "warm-up"
                self.registry.warm_up = lambda spec, analyzed: warm_up(
                    spec, analyzed, scratch / spec.name)

            self.ha = RoleKeeper(config, self.registry, self.folder, self.set_role)
        self.distributed: HeartbeatSender | None = None
        self.child_state: ChildState | None = None
        """Distributed with ``DBPersistenceStore``: where moved children continue from."""
        if config.is_distributed_worker:
            from eddy.node.distributed import HeartbeatSender

            self.distributed = HeartbeatSender(config, self.registry, self.folder,
                                               self.set_role, self._worker_metrics)
            if persistence.in_database and self.store.database is not None:
                from eddy.node.child_state import ChildState

                self.child_state = ChildState(self.store.database.engine, persistence.table,
                                              self.registry)
        self.watcher = FolderWatcher(self.folder, self._file_changed,
                                     config.model.eddy.deploymentPollIntervalMs / 1000)
        self.node = NodeStats()
        self.metrics = metrics_reporter(config, self.node, self.registry)
        self.stats_enabled = False
        self.last_persisted: float | None = None
        self._start_spark = start_spark
        self._periodic: PeriodicPersistence | None = None
        if persistence.enabled and persistence.intervalInMin > 0:
            self._periodic = PeriodicPersistence(persistence.intervalInMin * 60,
                                                 self.persist_all)
        self._stop = threading.Event()
        self._health = threading.Thread(target=self._watch_health, name="eddy-health",
                                        daemon=True)

    def role(self) -> NodeRole:
        """The node's current role (a frozen snapshot; single node: always active)."""
        return self._role

    def set_role(self, role: NodeRole) -> None:
        """Replaces the role snapshot; the HA role keeper calls this on every change."""
        self._role = role

    def start(self) -> None:
        """Starts Spark (in the background) and deploys every app in the folder; in minimum
        HA joins the group first (:class:`~eddy.store.lease.GroupFull` when it has two)."""
        if self.ha is not None:
            self.ha.join()
        if self.distributed is not None:
            self.distributed.start()
        self.store.root.mkdir(parents=True, exist_ok=True)
        self.store.recover()
        if self._start_spark:
            self.registry.submit(self._start_spark_session)
        self.watcher.start()
        self.registry.reconcile_all()
        self._health.start()
        if self.ha is not None:
            self.ha.start()
        if self._periodic is not None:
            self._periodic.start()
        if self.metrics is not None:
            self.metrics.start()

    def stop(self) -> None:
        """Stops watching, persisting and every app; checkpoints stay for the next start."""
        self._stop.set()
        if self.ha is not None:
            self.ha.stopping()  # renews a held lease until the apps stopped
        if self.distributed is not None:
            self.distributed.stop()
        self.watcher.stop()
        if self._periodic is not None:
            self._periodic.stop()
        if self.metrics is not None:
            self.metrics.stop()
        self.registry.shutdown()
        if self.child_state is not None:
            self.child_state.close()
        if self.ha is not None:
            self.ha.stop()
            self.ha.release()

    def _worker_metrics(self) -> dict[str, float]:
        """WSO2's ``WorkerMetrics`` of a heartbeat."""
        sample = self.node.sample()
        return {"processCPU": sample.process_cpu, "systemCPU": sample.system_cpu,
                "loadAverage": sample.load_average, "memoryUsage": sample.memory_usage}

    def _sink_token(self, app: str) -> str:
        assert self.ha is not None
        return self.ha.sink_token(app)

    def persist_all(self) -> None:
        """A revision of every running app."""
        self.registry.backup_all(self._stop.is_set)
        self.last_persisted = time.time()

    def _file_changed(self, name: str) -> None:
        log.info("deployment folder: %s.siddhi %s", name,
                 "changed" if self.folder.exists(name) else "deleted")
        self.registry.reconcile(name)

    def _start_spark_session(self) -> None:
        try:
            from eddy.engine.spark.session import get_spark
        except ImportError as error:
            log.error("Spark is not installed (%s); apps cannot run. Install eddy[spark].",
                      error)
            return
        started = time.monotonic()
        export_settings(self.config.node_settings())  # shardId etc. for the aggregations
        spark = get_spark(self.config.spark_conf(), app_name=f"eddy-worker-{self.config.node_id}")
        log.info("Spark %s ready (%s) in %.1f s", spark.version, spark.sparkContext.master,
                 time.monotonic() - started)

    def _watch_health(self) -> None:
        while not self._stop.wait(HEALTH_INTERVAL_S):
            try:
                self.registry.check_health()
            except Exception:
                log.exception("checking the apps' health failed")


def revision_database(config: WorkerConfig) -> DbRevisions | None:
    """``DBPersistenceStore``: the table of ``PERSISTENCE_DB`` (or the named datasource)
    that keeps the revisions; None for the file system store."""
    persistence = config.model.persistence
    if not persistence.in_database:
        return None
    from eddy.store.connect import connect
    from eddy.store.db_revisions import DbRevisions

    return DbRevisions(connect(config.datasource_url(persistence.datasource)),
                       persistence.table)


def io_config(config: WorkerConfig) -> IoConfig:
    """What the apps' sources and sinks take from the worker: its users, checked by sources
    with ``basic.auth.enabled='true'`` (the API's credentials, as in WSO2 SP), and how far
    an app may lag behind its HTTP sources (``eddy.sourceMaxBehindS``)."""
    return IoConfig(authenticate=credentials_checker(config.users()),
                    max_behind_s=config.model.eddy.sourceMaxBehindS)


def credentials_checker(users: dict[str, tuple[str, bool]]) -> Authenticate:
    """``(user, password) -> bool`` over ``users`` (``{name: (password, is_admin)}``): any
    user may send events. Compared in constant time; an unknown user costs the same."""
    known = {name: password.encode("utf-8") for name, (password, _) in users.items()}

    def authenticate(user: str, password: str) -> bool:
        expected = known.get(user, b"\0" * 32)
        return hmac.compare_digest(password.encode("utf-8"), expected) and user in known

    return authenticate


def setup_logging() -> None:
    """Log lines on stderr: time, level, logger, message."""
    logging.basicConfig(level=os.environ.get("EDDY_LOG_LEVEL", "INFO").upper(),
                        stream=sys.stderr,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per callback otherwise


def describe(config: WorkerConfig) -> None:
    """The first log lines: where the configuration came from and what it means."""
    if config.embedded:
        log.info("no deployment.yaml given: running with embedded defaults (data under %s, "
                 "SQLite bus, Spark %s)", config.data_dir, config.model.eddy.spark.master)
    else:
        log.info("configuration: %s", config.source)
    log.info("node %s: data %s, apps %s, state %s, bus %s", config.node_id, config.data_dir,
             config.deployment_dir, config.persistence_dir, config.bus_url)
    persistence = config.model.persistence
    if persistence.enabled:
        log.info("state persistence: a revision every %g min, keeping %d, %s",
                 persistence.intervalInMin, persistence.revisionsToKeep,
                 f"in {persistence.datasource} (table {persistence.table})"
                 if persistence.in_database else f"under {config.persistence_dir}")
    for block in config.ignored_blocks:
        log.warning("ignoring %s: eddy has no such feature", block)
    for note in config.bus_notes():
        log.info("%s", note)
    if config.is_ha:
        cluster = config.model.cluster
        strategy = cluster.strategyConfig
        log.info("minimum HA: group '%s', lease in %s renewed every %d ms, lost after %d "
                 "missed renewals; state in %s (table %s)", cluster.groupId,
                 strategy.datasource, strategy.heartbeatInterval, strategy.heartbeatMaxRetry,
                 persistence.datasource, persistence.table)
        if config.model.deployment.eventSyncServer is not None:
            log.info("deployment.config.eventSyncServer / eventSyncClientPool are not needed: "
                     "the passive follows the active's state in the database and the bus")
    elif config.is_distributed_worker:
        deployment = config.model.deployment
        log.info("distributed worker (%s node): managers %s, undeploys everything after %d "
                 "ms without one", "receiver" if deployment.isReceiverNode else "resource",
                 ", ".join(f"{m.host}:{m.port}" for m in deployment.resourceManagers),
                 deployment.leaderRetryInterval)
        log.info("child apps continue on another worker from %s", f"the state in "
                 f"{persistence.datasource} (table {persistence.table}_CHILD_*)"
                 if persistence.in_database else
                 f"their checkpoints under {config.persistence_dir} only if it is shared")
    elif config.model.cluster.enabled or config.model.deployment.type != "single-node":
        log.warning("cluster.config / deployment.config (%s) are read but not acted on: "
                    "this worker runs as a single node (minimum HA needs both "
                    "cluster.config.enabled and deployment.config.type: ha)",
                    config.model.deployment.type)
    if config.default_credentials():
        log.warning("the API accepts the default credentials admin:admin; set your own users "
                    "under auth.configs in deployment.yaml")


Serve = Callable[[Worker], None]


def run_worker(config_path: str | Path | None, serve: Serve) -> int:
    """Runs a worker until SIGINT or SIGTERM; returns the exit status."""
    setup_logging()
    try:
        config = load_config(config_path)
        config.check_exposure()
    except ConfigError as error:
        for fault in error.faults:
            print(f"eddy worker: {fault}", file=sys.stderr)
        return 2
    log.info("eddy worker %s starting (pid %d)", config.node_id, os.getpid())
    describe(config)
    try:
        worker = Worker(config)
        worker.start()
    except (GroupFull, SQLAlchemyError) as error:
        print(f"eddy worker: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    try:
        serve(worker)
    except OSError as error:  # the port is taken, the certificate is unreadable, …
        log.error("cannot serve the API: %s", error)
        return 1
    finally:
        worker.stop()
    log.info("eddy worker %s stopped", config.node_id)
    return 0
