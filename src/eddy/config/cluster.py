"""``cluster.config`` (the RDBMS lease of an HA pair or a manager cluster) and
``deployment.config`` (HA, distributed worker and manager keys, the bus as WSO2 names it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from eddy.config.base import (KAFKA_APP_CREATOR, NATS_APP_CREATOR, RDBMS_STRATEGY,
                              ROUND_ROBIN_ALLOCATION, Block)


class StrategyConfig(Block):
    """``cluster.config.strategyConfig`` of the RDBMS coordination: the lease is renewed
    every ``heartbeatInterval`` ms and lost after ``heartbeatMaxRetry`` missed renewals;
    a passive node looks for changes (apps, state) every ``eventPollingInterval`` ms."""

    datasource: str | None = None
    heartbeatInterval: int = Field(default=5000, gt=0)
    heartbeatMaxRetry: int = Field(default=3, ge=1)
    eventPollingInterval: int = Field(default=5000, gt=0)


class ClusterConfig(Block):
    """``cluster.config``: both nodes of a minimum-HA pair use the SAME ``groupId`` (a
    guide's advice to make them differ would give two groups of one node, both active)."""

    enabled: bool = False
    groupId: str | None = None
    coordinationStrategyClass: str = RDBMS_STRATEGY
    strategyConfig: StrategyConfig = StrategyConfig()

    @field_validator("coordinationStrategyClass")
    @classmethod
    def _rdbms_only(cls, value: str) -> str:
        if not value.endswith("RDBMSCoordinationStrategy"):
            raise ValueError(f"eddy coordinates through a database only; use {RDBMS_STRATEGY}")
        return value


class Endpoint(Block):
    host: str = "localhost"
    port: int = Field(default=9443, ge=0, le=65535)
    username: str | None = None
    password: str | None = None


class SyncServer(Block):
    host: str = "0.0.0.0"
    port: int = 9893
    advertisedHost: str | None = None
    advertisedPort: int | None = None
    bossThreads: int = 10
    workerThreads: int = 10


class SyncClientPool(Block):
    maxActive: int = 10
    maxTotal: int = 10
    maxIdle: int = 10
    maxWait: int = 60_000
    minEvictableIdleTimeMillis: int = 120_000


class ZooKeeperConfig(Block):
    """``deployment.config.zooKeeperConfig``: accepted for WSO2 compatibility, not needed
    (eddy's Kafka bus creates topics through Kafka's AdminClient)."""

    zooKeeperURLs: str | None = None
    connectionTimeout: int | None = None
    sessionTimeout: int | None = None


class DeploymentConfig(Block):
    """``deployment.config`` of an HA worker (``type: ha``) or a distributed one.

    ``eventSyncServer``, ``eventSyncClientPool``, ``eventByteBufferQueueCapacity`` and
    ``byteBufferExtractorThreadPoolSize`` are accepted and not needed: WSO2 SP forwards every
    input event to the passive over TCP; eddy's sources land events on the shared bus, and
    the passive follows the active's checkpoint in ``PERSISTENCE_DB`` instead.
    """

    type: Literal["single-node", "ha", "distributed"] = "single-node"
    bootstrapURLs: str | None = None
    """Kafka brokers (``host:port,…``): with no ``eddy.busUrl``, the bus is Kafka there."""
    zooKeeperURLs: str | None = None
    zooKeeperConfig: ZooKeeperConfig | None = None
    eventSyncServer: SyncServer | None = None
    eventSyncClientPool: SyncClientPool | None = None
    eventByteBufferQueueCapacity: int = 20_000
    byteBufferExtractorThreadPoolSize: int = 5
    passiveNodeDetailsWaitTimeOutMillis: int = 300_000
    passiveNodeDetailsRetrySleepTimeMillis: int = 500
    httpsInterface: Endpoint | None = None
    resourceManagers: list[Endpoint] = []
    leaderRetryInterval: int = Field(default=10_000, gt=0)
    """Distributed worker: ms without reaching any manager before it undeploys every app."""
    isReceiverNode: bool = False
    # -- a manager's keys (``type: distributed`` on a manager; digest §6) --
    heartbeatInterval: int = Field(default=10_000, gt=0)
    """Manager: ms between the workers' heartbeats (it dictates their cadence)."""
    heartbeatMaxRetry: int = Field(default=2, ge=1)
    """Manager: a worker silent for ``heartbeatInterval × heartbeatMaxRetry`` is lost."""
    datasource: str | None = None
    """Manager: the manager database (parent apps, placement, workers), a datasource name."""
    minResourceCount: int = Field(default=1, ge=1)
    allocationAlgorithm: str = ROUND_ROBIN_ALLOCATION
    appCreatorClass: str = KAFKA_APP_CREATOR
    natsServerUrl: str | None = None
    clusterId: str | None = None
    factoryInitial: str | None = None
    providerUrl: str | None = None

    @field_validator("allocationAlgorithm")
    @classmethod
    def _round_robin(cls, value: str) -> str:
        if not value.endswith("RoundRobinAllocationAlgorithm"):
            raise ValueError(f"eddy places child apps round-robin over the least-loaded "
                             f"workers; use {ROUND_ROBIN_ALLOCATION}")
        return value

    @field_validator("appCreatorClass")
    @classmethod
    def _bus_creator(cls, value: str) -> str:
        if not value.endswith(("KafkaSiddhiAppCreator", "NatsSiddhiAppCreator")):
            raise ValueError(f"eddy's bus is Kafka or NATS: use {KAFKA_APP_CREATOR} or "
                             f"{NATS_APP_CREATOR}")
        return value
