"""Node settings that incremental aggregations need where they run, and how they get there.

An aggregation is built inside Spark's Python workers from the app text alone, yet two of
its settings belong to the node, not the app: ``siddhi.properties`` (``partitionById``,
``shardId``: which ``SHARD_ID`` this node writes, digest §4.1) and the ``wso2.datasources``
an ``@store(datasource='…')`` names. They travel as environment variables of the eddy
process (:data:`PROPERTIES_ENV`, :data:`DATASOURCES_ENV`, JSON), which Spark hands to its
Python workers: a worker exports them with :func:`export_settings` before starting Spark,
and :func:`worker_environment`, called where a group is compiled, checks them against the
app and copies them into the SparkContext's ``environment`` (so a change after Spark started
reaches the workers too).

Sharding is on for an aggregation when ``@PartitionById`` is on it (``enable`` defaults to
true) or ``partitionById: true`` is set, unless ``@PartitionById(enable='false')`` opts it
out (digest §4.1); then ``shardId`` is mandatory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field

from eddy.lang import ast
from eddy.store.fence import FENCE_ENV
from eddy.lang.semantic import AnalyzedApp

__all__ = ["DATASOURCES_ENV", "PROPERTIES_ENV", "AggregationDeploymentError",
           "NodeSettings", "export_settings", "node_settings", "shard_of",
           "worker_environment"]

PROPERTIES_ENV = "EDDY_SIDDHI_PROPERTIES"
"""``{"partitionById": bool, "shardId": str}``: this node's ``siddhi.properties``."""
DATASOURCES_ENV = "EDDY_DATASOURCES"
"""``{name: {"jdbcUrl", "username", "password"}}``: this node's ``wso2.datasources``."""

Datasources = Mapping[str, Mapping[str, str | None]]


class AggregationDeploymentError(ValueError):
    """The node's settings cannot run the app's aggregations (e.g. sharding without a
    ``shardId``); the message names the setting."""


@dataclass(frozen=True)
class NodeSettings:
    """This node's ``siddhi.properties`` and datasources."""

    partition_by_id: bool = False
    shard_id: str | None = None
    datasources: Datasources = field(default_factory=dict)


def node_settings(environ: Mapping[str, str] | None = None) -> NodeSettings:
    """The settings exported to this process (``os.environ`` by default)."""
    env = os.environ if environ is None else environ
    properties = json.loads(env.get(PROPERTIES_ENV) or "{}")
    datasources = json.loads(env.get(DATASOURCES_ENV) or "{}")
    shard = properties.get("shardId")
    return NodeSettings(_truthy(properties.get("partitionById", False)),
                        None if shard in (None, "") else str(shard), datasources)


def export_settings(settings: NodeSettings,
                    environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Writes ``settings`` into ``environ`` (``os.environ`` by default); returns what it set."""
    values = {
        PROPERTIES_ENV: json.dumps({"partitionById": settings.partition_by_id,
                                    "shardId": settings.shard_id}),
        DATASOURCES_ENV: json.dumps({k: dict(v) for k, v in settings.datasources.items()}),
    }
    (os.environ if environ is None else environ).update(values)
    return values


def _truthy(value: object) -> bool:
    return value is True or str(value).strip().lower() == "true"


def shard_of(definition: ast.AggregationDefinition, settings: NodeSettings) -> str | None:
    """The ``SHARD_ID`` this node writes for ``definition``: None when it is not sharded.

    Raises :class:`AggregationDeploymentError` when it is sharded and no ``shardId`` is set.
    """
    annotation = ast.find_annotation(definition.annotations, "PartitionById")
    if annotation is not None:
        enable = annotation.get("enable")
        sharded = enable is None or _truthy(enable)
    else:
        sharded = settings.partition_by_id
    if not sharded:
        return None
    if settings.shard_id is None:
        why = "@PartitionById" if annotation is not None else "siddhi.properties.partitionById"
        raise AggregationDeploymentError(
            f"aggregation '{definition.name}' is sharded ({why}) but this node has no "
            f"'shardId': set siddhi.properties.shardId in deployment.yaml (unique per node, "
            f"never changed once rows carry it)")
    return settings.shard_id


def worker_environment(analyzed: AnalyzedApp, environment: MutableMapping[str, str]) -> None:
    """Checks the app's aggregations against this process's settings and copies the
    settings into ``environment`` (a SparkContext's ``environment``, inherited by the Python
    workers that run the aggregations), with the HA epoch their writes carry
    (:data:`~eddy.store.fence.FENCE_ENV`). Raises :class:`AggregationDeploymentError`."""
    settings = node_settings()
    for info in analyzed.streams.values():
        if isinstance(info.definition, ast.AggregationDefinition):
            shard_of(info.definition, settings)
    for name in (PROPERTIES_ENV, DATASOURCES_ENV, FENCE_ENV):
        if name in os.environ:
            environment[name] = os.environ[name]
        else:
            environment.pop(name, None)
