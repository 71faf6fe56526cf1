"""Seed 003's worker deployment.yaml for minimum HA is read as written; what HA needs and
does not get is a fault naming the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from eddy.config import ConfigError, parse_config

SEED_003 = """\
wso2.carbon:
  id: sp-node-1
wso2.datasources:
  dataSources:
    - name: WSO2_CLUSTER_DB
      description: The datasource used by the cluster coordination
      jndiConfig:
        name: jdbc/WSO2ClusterDB
        useJndiReference: true
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: jdbc:postgresql://127.0.0.1:5432/WSO2_CLUSTER_DB
          username: wso2
          password: password
          driverClassName: org.postgresql.Driver
          maxPoolSize: 10
          idleTimeout: 60000
          connectionTestQuery: SELECT 1
          validationTimeout: 30000
          isAutoCommit: false
    - name: PERSISTENCE_DB
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: jdbc:postgresql://127.0.0.1:5432/PERSISTENCE_DB
          username: wso2
          password: password
          driverClassName: org.postgresql.Driver
    - name: WSO2_METRICS_DB
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: jdbc:postgresql://127.0.0.1:5432/WSO2_METRICS_DB
          username: wso2
          password: password
state.persistence:
  enabled: true
  intervalInMin: 1
  revisionsToKeep: 2
  persistenceStore: org.wso2.carbon.stream.processor.core.persistence.DBPersistenceStore
  config:
    datasource: PERSISTENCE_DB # A datasource with this name should be defined in wso2.datasources namespace
    table: PERSISTENCE_TABLE
cluster.config:
  enabled: true
  groupId: sp
  coordinationStrategyClass: org.wso2.carbon.cluster.coordinator.rdbms.RDBMSCoordinationStrategy
  strategyConfig:
    datasource: WSO2_CLUSTER_DB
    heartbeatInterval: 1000
    heartbeatMaxRetry: 2
    eventPollingInterval: 1000
deployment.config:
  type: ha
  eventByteBufferQueueCapacity: 20000
  byteBufferExtractorThreadPoolSize: 5
  eventSyncServer:
    host: 0.0.0.0
    port: 9893
    advertisedHost: 10.0.0.2
    advertisedPort: 9893
    bossThreads: 10
    workerThreads: 10
  eventSyncClientPool:
    maxActive: 10
    maxTotal: 10
    maxIdle: 10
    maxWait: 60000
    minEvictableIdleTimeMillis: 120000
"""


def faults(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, Path("deployment.yaml"))
    return caught.value.faults


def test_the_seed_003_worker_configuration_is_read_as_written() -> None:
    config = parse_config(SEED_003, Path("deployment.yaml"))
    assert config.is_ha
    assert config.model.cluster.groupId == "sp"
    strategy = config.model.cluster.strategyConfig
    assert (strategy.heartbeatInterval, strategy.heartbeatMaxRetry,
            strategy.eventPollingInterval) == (1000, 2, 1000)
    persistence = config.model.persistence
    assert persistence.in_database and persistence.table == "PERSISTENCE_TABLE"
    assert config.datasource_url(persistence.datasource) == \
        "postgresql+psycopg://wso2:password@127.0.0.1:5432/PERSISTENCE_DB"
    assert config.datasource_url("WSO2_CLUSTER_DB").endswith("/WSO2_CLUSTER_DB")
    assert config.model.deployment.eventSyncServer is not None


def test_the_file_system_store_still_works_for_a_single_node() -> None:
    text = SEED_003.replace("DBPersistenceStore", "FileSystemPersistenceStore") \
        .replace("  type: ha", "  type: single-node")
    assert not parse_config(text, Path("deployment.yaml")).is_ha


def test_an_unknown_key_in_the_ha_blocks_names_line_and_key() -> None:
    text = SEED_003.replace("    heartbeatMaxRetry: 2", "    heartbeatMaxRetries: 2")
    [fault] = faults(text)
    line = SEED_003.splitlines().index("    heartbeatMaxRetry: 2") + 1
    assert fault == (f"deployment.yaml:{line}: cluster.config.strategyConfig."
                     f"heartbeatMaxRetries: unknown key; did you mean 'heartbeatMaxRetry'?")


def test_a_wrong_type_in_the_ha_blocks_names_line_and_key() -> None:
    [fault] = faults(SEED_003.replace("heartbeatInterval: 1000", "heartbeatInterval: soon"))
    assert "cluster.config.strategyConfig.heartbeatInterval" in fault
    assert fault.startswith("deployment.yaml:")


def test_an_undefined_datasource_is_named_with_its_line() -> None:
    [fault] = faults(SEED_003.replace("datasource: WSO2_CLUSTER_DB", "datasource: CLUSTER"))
    line = SEED_003.splitlines().index("    datasource: WSO2_CLUSTER_DB") + 1
    assert fault.startswith(f"deployment.yaml:{line}: cluster.config.strategyConfig."
                            f"datasource: no datasource 'CLUSTER'")


def test_ha_needs_the_database_store_a_group_and_the_rdbms_strategy() -> None:
    found = faults(SEED_003.replace("DBPersistenceStore", "FileSystemPersistenceStore")
                   .replace("  groupId: sp\n", ""))
    assert [f.split(": ")[1] for f in found] == ["state.persistence.persistenceStore",
                                                 "cluster.config.groupId"]
    assert "minimum HA needs" in found[0]
    [fault] = faults(SEED_003.replace("rdbms.RDBMSCoordinationStrategy", "zk.ZKStrategy"))
    assert "cluster.config.coordinationStrategyClass: eddy coordinates through a " \
           "database only" in fault
    ha_off = faults(SEED_003.replace("  enabled: true\n  groupId", "  enabled: false\n  groupId"))
    assert ha_off == [f"deployment.yaml:{SEED_003.splitlines().index('  type: ha') + 1}: "
                      f"deployment.config.type: minimum HA needs cluster.config.enabled: true"]
