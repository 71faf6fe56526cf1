"""deployment.yaml: WSO2 SP's keys, faults that name the line and the key, embedded defaults."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from eddy.config import ConfigError, load_config, parse_config

WSO2_STYLE = """\
wso2.carbon:
  id: worker-1
  ports:
    offset: 1
wso2.transport.http:
  transportProperties:
    - name: server.bootstrap.socket.timeout
      value: 60
  listenerConfigurations:
    - id: default
      host: 127.0.0.1
      port: 9090
    - id: msf4j-https
      host: 127.0.0.1
      port: 9443
      scheme: https
      keyStoreFile: security/keystore.p12
      keyStorePassword: wso2carbon
state.persistence:
  enabled: true
  intervalInMin: 1
  revisionsToKeep: 2
  persistenceStore: org.wso2.carbon.stream.processor.core.persistence.FileSystemPersistenceStore
  config:
    location: siddhi-app-persistence
wso2.datasources:
  dataSources:
    - name: WSO2_METRICS_DB
      description: The datasource used for dashboard feature
      jndiConfig:
        name: jdbc/WSO2MetricsDB
        useJndiReference: true
      definition:
        type: RDBMS
        configuration:
          jdbcUrl: jdbc:postgresql://127.0.0.1:5432/WSO2_METRICS_DB
          username: wso2
          password: secret
          driverClassName: org.postgresql.Driver
          maxPoolSize: 10
          idleTimeout: 60000
          connectionTestQuery: SELECT 1
          validationTimeout: 30000
          isAutoCommit: false
siddhi:
  properties:
    partitionById: true
    shardId: wso2-sp-1
auth.configs:
  type: local
  userManager:
    adminRole: admin
    userStore:
      users:
       -
         user:
           username: admin
           password: c2VjcmV0
           roles: 1
       -
         user:
           username: viewer
           password: dmlld2Vy
           roles: 2
      roles:
       -
         role:
           id: 1
           displayName: admin
       -
         role:
           id: 2
           displayName: viewer
wso2.metrics:
  enabled: false
eddy:
  dataDir: data
  spark:
    master: local[2]
    conf:
      spark.sql.shuffle.partitions: 2
"""


def faults(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, Path("/etc/eddy/deployment.yaml"))
    return caught.value.faults


def test_a_wso2_sp_file_is_read_with_its_key_names(tmp_path: Path) -> None:
    path = tmp_path / "deployment.yaml"
    path.write_text(WSO2_STYLE)
    config = load_config(path)
    assert config.node_id == "worker-1"
    assert [(x.scheme, x.port) for x in config.listeners()] == [("http", 9091), ("https", 9444)]
    assert config.model.persistence.revisionsToKeep == 2
    assert config.model.siddhi.properties.shardId == "wso2-sp-1"
    assert config.model.datasources.dataSources[0].definition.configuration.maxPoolSize == 10
    assert config.users() == {"admin": ("secret", True), "viewer": ("viewer", False)}
    assert not config.default_credentials()
    assert config.data_dir == tmp_path / "data"
    assert config.persistence_dir == tmp_path / "data" / "siddhi-app-persistence"
    assert config.bus_url == f"sqlite:///{tmp_path / 'data' / 'bus' / 'bus.db'}"
    assert config.spark_conf() == {"spark.sql.shuffle.partitions": "2", "spark.master": "local[2]"}
    assert config.ignored_blocks == ("wso2.metrics",)


def test_an_unknown_key_names_its_line_path_and_the_likely_key() -> None:
    text = "state.persistence:\n  enabled: true\n  intervalInMins: 5\n"
    assert faults(text) == ["/etc/eddy/deployment.yaml:3: state.persistence.intervalInMins: "
                            "unknown key; did you mean 'intervalInMin'?"]


def test_a_wrong_type_names_its_line_and_path_inside_lists() -> None:
    text = WSO2_STYLE.replace("      port: 9443", "      port: nine")
    [fault] = faults(text)
    line = WSO2_STYLE.splitlines().index("      port: 9443") + 1
    assert fault.startswith(f"/etc/eddy/deployment.yaml:{line}: "
                            f"wso2.transport.http.listenerConfigurations[1].port: ")
    assert "valid integer" in fault and "'nine'" in fault


def test_every_fault_is_reported_in_line_order() -> None:
    text = ("eddy:\n  dataDir: 5x\n  sparks: {}\n"
            "wso2.carbon:\n  id: ''\n"
            "wso2.transport.http:\n  listenerConfigurations:\n    - id: x\n      scheme: ftp\n")
    reported = faults(text)
    assert [f.split(":")[1] for f in reported] == ["3", "5", "8", "9"]
    assert "eddy.sparks: unknown key; did you mean 'spark'?" in reported[0]
    assert "wso2.carbon.id:" in reported[1]
    assert "listenerConfigurations[0].port: required key is missing" in reported[2]
    assert "listenerConfigurations[0].scheme:" in reported[3]


def test_an_unknown_top_level_block_lists_the_known_ones() -> None:
    [fault] = faults("wso2.transports.http: {}\n")
    assert fault.startswith("/etc/eddy/deployment.yaml:1: wso2.transports.http: unknown key; "
                            "did you mean 'wso2.transport.http'?")


def test_passwords_are_base64_as_in_wso2_and_a_clear_one_is_explained() -> None:
    text = WSO2_STYLE.replace("password: c2VjcmV0", "password: secret!")
    [fault] = faults(text)
    assert "users[0].user.password: WSO2 SP keeps local passwords base64-encoded" in fault


def test_duplicate_keys_bad_yaml_and_missing_environment_variables_are_faults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert faults("eddy:\n  dataDir: a\n  dataDir: b\n") == [
        "/etc/eddy/deployment.yaml:3: eddy.dataDir: duplicate key (first at line 2)"]
    [bad] = faults("eddy: [\n")
    assert bad.startswith("/etc/eddy/deployment.yaml:2: not valid YAML")
    monkeypatch.delenv("EDDY_TEST_SHARD", raising=False)
    assert faults("siddhi:\n  properties:\n    shardId: ${env:EDDY_TEST_SHARD}\n") == [
        "/etc/eddy/deployment.yaml:3: siddhi.properties.shardId: environment variable "
        "EDDY_TEST_SHARD is not set"]
    monkeypatch.setenv("EDDY_TEST_SHARD", "shard-7")
    config = parse_config("siddhi:\n  properties:\n    shardId: ${env:EDDY_TEST_SHARD}\n",
                          Path("d.yaml"))
    assert config.model.siddhi.properties.shardId == "shard-7"


def test_incremental_persistence_stores_are_refused() -> None:
    [fault] = faults("state.persistence:\n  persistenceStore: org.wso2.carbon.stream.processor"
                     ".core.persistence.IncrementalDBPersistenceStore\n")
    assert fault.startswith("/etc/eddy/deployment.yaml:2: state.persistence.persistenceStore: "
                            "eddy keeps full revisions on the file system or in a database")


def test_embedded_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(None)
    assert config.embedded
    assert config.data_dir == tmp_path / "eddy-data"
    assert config.bus_url == f"sqlite:///{tmp_path / 'eddy-data' / 'bus' / 'bus.db'}"
    assert config.spark_conf() == {"spark.master": "local[*]"}
    [listener] = config.listeners()
    assert (listener.scheme, listener.host, listener.port) == ("https", "127.0.0.1", 9443)
    assert config.users() == {"admin": ("admin", True)}
    assert config.default_credentials()
    config.check_exposure()  # loopback only: allowed


def test_default_credentials_beyond_loopback_refuse_to_start() -> None:
    exposed = ("wso2.transport.http:\n  listenerConfigurations:\n"
               "    - {id: default, host: 0.0.0.0, port: 9090}\n")
    config = parse_config(exposed, Path("d.yaml"))
    with pytest.raises(ConfigError, match="refusing to listen on 0.0.0.0:9090 with the default "
                                          "credentials admin:admin"):
        config.check_exposure()
    password = base64.b64encode(b"long and secret").decode()
    users = ("auth.configs:\n  userManager:\n    userStore:\n      users:\n"
             f"        - user: {{username: ops, password: '{password}', roles: 1}}\n")
    parse_config(exposed + users, Path("d.yaml")).check_exposure()


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")


def test_real_time_mode_is_off_unless_configured(tmp_path: Path) -> None:
    assert parse_config("", Path("d.yaml")).model.eddy.realTimeBatchS is None
    config = parse_config("eddy:\n  realTimeBatchS: 300\n", Path("d.yaml"))
    assert config.model.eddy.realTimeBatchS == 300
    [fault] = faults("eddy:\n  realTimeBatchS: 0\n")
    assert fault.startswith("/etc/eddy/deployment.yaml:2: eddy.realTimeBatchS: ")


def test_real_time_batches_end_before_each_persisting() -> None:
    from eddy.node.worker import real_time_batch_s

    def batch_s(text: str) -> float | None:
        return real_time_batch_s(parse_config(text, Path("d.yaml")))

    assert batch_s("eddy:\n  realTimeBatchS: 300\n") == 300
    persisted = "state.persistence:\n  enabled: true\n  intervalInMin: {}\n"
    assert batch_s("eddy:\n  realTimeBatchS: 300\n" + persisted.format(1)) == 30
    assert batch_s("eddy:\n  realTimeBatchS: 300\n" + persisted.format(60)) == 300
    assert batch_s(persisted.format(1)) is None
    # A distributed worker's children move with their micro-batch state: no real time.
    distributed = ("deployment.config:\n  type: distributed\n  httpsInterface: "
                   "{host: localhost, port: 9444, username: a, password: b}\n"
                   "  resourceManagers:\n    - {host: localhost, port: 9543, "
                   "username: a, password: b}\n")
    assert batch_s("eddy:\n  realTimeBatchS: 300\n" + distributed) is None


def test_wso2_bootstrap_urls_make_the_bus_kafka_and_zookeeper_is_not_needed() -> None:
    config = parse_config(
        "cluster.config:\n  groupId: sp\n"
        "deployment.config:\n  type: distributed\n  bootstrapURLs: k1:9092,k2:9092\n"
        "  zooKeeperConfig:\n    zooKeeperURLs: zk:2181\n    connectionTimeout: 10000\n",
        Path("d.yaml"), "manager")  # a distributed worker's file names its managers instead
    assert config.bus_url == "kafka://k1:9092,k2:9092?app=sp"
    assert config.bus_notes() == [
        "deployment.config zooKeeperURLs (zk:2181) is not needed: the Kafka bus creates "
        "its topics through the brokers (bootstrapURLs)"]
    flat = parse_config("deployment.config:\n  bootstrapURLs: k1:9092\n  zooKeeperURLs: zk:2181\n",
                        Path("d.yaml"))
    assert flat.bus_url == "kafka://k1:9092?app=eddy" and len(flat.bus_notes()) == 1
    explicit = parse_config("deployment.config:\n  bootstrapURLs: k1:9092\n"
                            "eddy:\n  busUrl: nats://n:4222?app=x\n", Path("d.yaml"))
    assert explicit.bus_url == "nats://n:4222?app=x" and explicit.bus_notes() == []
