"""Running ``eddy manager``: configuration, the manager, its API, a clean stop."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from eddy.cluster.manager import Manager
from eddy.config import ConfigError, WorkerConfig, load_config
from eddy.node.worker import setup_logging

log = logging.getLogger("eddy.cluster.run")
Serve = Callable[[Manager], None]


def describe(config: WorkerConfig) -> None:
    """The first log lines: where the configuration came from and what it means."""
    deployment = config.model.deployment
    if config.embedded:
        log.info("no deployment.yaml given: one manager with embedded defaults (manager "
                 "database %s)", config.manager_db_url())
    else:
        log.info("configuration: %s", config.source)
    cluster = config.model.cluster
    log.info("manager %s: group '%s' (%s), manager database %s, bus %s", config.node_id,
             config.manager_group, "clustered" if cluster.enabled else "alone",
             deployment.datasource or "embedded SQLite", config.bus_url)
    log.info("workers heartbeat every %d ms and are lost after %d missed beats; at least "
             "%d resource workers before anything is deployed", deployment.heartbeatInterval,
             deployment.heartbeatMaxRetry, deployment.minResourceCount)
    for note in config.bus_notes():
        log.info("%s", note)
    if config.peer_verify() is False:
        log.warning("the workers' HTTPS certificates are not verified: set eddy.peerCaFile "
                    "to the PEM file of their certificates")
    if config.default_credentials():
        log.warning("the API accepts the default credentials admin:admin; set your own users "
                    "under auth.configs in deployment.yaml")


def run_manager(config_path: str | Path | None, serve: Serve) -> int:
    """Runs a manager until SIGINT or SIGTERM; returns the exit status."""
    setup_logging()
    try:
        config = load_config(config_path, "manager")
        config.check_exposure()
    except ConfigError as error:
        for fault in error.faults:
            print(f"eddy manager: {fault}", file=sys.stderr)
        return 2
    log.info("eddy manager %s starting (pid %d)", config.node_id, os.getpid())
    describe(config)
    try:
        manager = Manager(config)
        manager.start()
    except (SQLAlchemyError, ValueError) as error:
        print(f"eddy manager: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    try:
        serve(manager)
    except OSError as error:
        log.error("cannot serve the API: %s", error)
        return 1
    finally:
        manager.stop()
    log.info("eddy manager %s stopped", config.node_id)
    return 0
