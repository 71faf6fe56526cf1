"""``deployment.yaml``: the worker's configuration, with WSO2 Stream Processor's key names.

A WSO2 SP user's file keeps working: the blocks eddy reads (``wso2.carbon``,
``wso2.transport.http``, ``state.persistence``, ``wso2.datasources``, ``siddhi``,
``auth.configs``, ``cluster.config``, ``deployment.config``, ``siddhi.stores.query.api``) are
validated key by key, and blocks of WSO2 SP features eddy does not have (:data:`IGNORED_BLOCKS`)
are accepted with a warning. eddy's own settings live under ``eddy:``.

An unknown key or a wrong type stops start-up with :class:`ConfigError`, whose message names
the file, the line and the key path: ``deployment.yaml:14: state.persistence.intervalInMins:
unknown key; did you mean 'intervalInMin'?``. String values may use ``${env:NAME}``.

Relative paths in a file are relative to the file's folder; with no file at all,
:func:`load_config` returns the embedded defaults (data under ``./eddy-data/``, the SQLite bus,
Spark ``local[*]``, HTTPS on 127.0.0.1:9443, the store query API on 127.0.0.1:7070 and
:7443, user ``admin`` with password ``admin``).
"""

from __future__ import annotations

from eddy.config.base import ConfigError
from eddy.config.cluster import Endpoint
from eddy.config.loader import load_config, parse_config
from eddy.config.node_blocks import Listener
from eddy.config.node_config import WorkerConfig

__all__ = ["ConfigError", "Endpoint", "Listener", "WorkerConfig", "load_config", "parse_config"]
