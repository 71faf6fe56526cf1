"""A validated deployment.yaml as the node reads it: paths resolved, the bus, databases,
listeners and users it implies."""

from __future__ import annotations

from pathlib import Path

from eddy.config.base import LOOPBACK_HOSTS, MANAGER_PORT, ConfigError, Profile
from eddy.config.model import DeploymentYaml
from eddy.config.node_blocks import STORE_QUERY_DEFAULTS, Listener
from eddy.store.aggregation_settings import NodeSettings


class WorkerConfig:
    """A validated deployment.yaml (or the embedded defaults) with paths resolved; a
    manager's (``profile`` ``manager``) is read by the same model and rules."""

    def __init__(self, model: DeploymentYaml, source: Path | None,
                 ignored: tuple[str, ...] = (), profile: Profile = "worker") -> None:
        self.model = model
        self.source = source
        self.ignored_blocks = ignored
        self.profile = profile
        base = source.parent if source is not None else Path.cwd()
        self.base_dir = base.resolve()

    @property
    def embedded(self) -> bool:
        """Whether no deployment.yaml was given."""
        return self.source is None

    def resolve(self, path: Path) -> Path:
        """``path`` made absolute against the config file's folder (or the CWD)."""
        return path if path.is_absolute() else self.base_dir / path

    @property
    def node_id(self) -> str:
        """``wso2.carbon.id``."""
        return self.model.carbon.id

    @property
    def data_dir(self) -> Path:
        """``eddy.dataDir``, absolute."""
        return self.resolve(self.model.eddy.dataDir)

    @property
    def deployment_dir(self) -> Path:
        """The folder watched for ``.siddhi`` files: ``<data>/deployment/siddhi-files``."""
        return self.data_dir / "deployment" / "siddhi-files"

    @property
    def persistence_dir(self) -> Path:
        """``state.persistence.config.location``, relative to the data folder."""
        location = self.model.persistence.config.location
        return location if location.is_absolute() else self.data_dir / location

    @property
    def bus_url(self) -> str:
        """``eddy.busUrl``; else the Kafka bus at ``deployment.config.bootstrapURLs`` (the
        app named by ``cluster.config.groupId``, default ``eddy``, so that every node of a
        cluster shares it); else the SQLite bus in the data folder."""
        if self.model.eddy.busUrl:
            return self.model.eddy.busUrl
        deployment = self.model.deployment
        if deployment.natsServerUrl and deployment.appCreatorClass.endswith(
                "NatsSiddhiAppCreator"):
            from eddy.bus.url import nats_url

            return nats_url(deployment.natsServerUrl, deployment.clusterId
                            or self.model.cluster.groupId or "eddy")
        if self.model.deployment.bootstrapURLs:
            from eddy.bus.url import kafka_url

            return kafka_url(self.model.deployment.bootstrapURLs,
                             self.model.cluster.groupId or "eddy")
        return f"sqlite:///{self.data_dir / 'bus' / 'bus.db'}"

    def bus_notes(self) -> list[str]:
        """What the node should say about bus settings it accepts but does not need."""
        deployment = self.model.deployment
        zookeeper = deployment.zooKeeperURLs or (
            deployment.zooKeeperConfig.zooKeeperURLs if deployment.zooKeeperConfig else None)
        if not zookeeper:
            return []
        return [f"deployment.config zooKeeperURLs ({zookeeper}) is not needed: the Kafka "
                f"bus creates its topics through the brokers (bootstrapURLs)"]

    def node_settings(self) -> NodeSettings:
        """``siddhi.properties`` (``partitionById``, ``shardId``) and ``wso2.datasources``: what
        the app's aggregations need from the node (exported to Spark's Python workers with
        :func:`eddy.store.aggregation_settings.export_settings`)."""
        properties = self.model.siddhi.properties
        datasources = {d.name: {"jdbcUrl": d.definition.configuration.jdbcUrl,
                                "username": d.definition.configuration.username,
                                "password": d.definition.configuration.password}
                       for d in self.model.datasources.dataSources}
        return NodeSettings(properties.partitionById, properties.shardId, datasources)

    @property
    def is_ha(self) -> bool:
        """Whether this worker is one node of a minimum-HA pair."""
        return self.model.cluster.enabled and self.model.deployment.type == "ha"

    @property
    def is_distributed_worker(self) -> bool:
        """Whether this worker takes its apps from managers (``type: distributed``)."""
        return self.profile == "worker" and self.model.deployment.type == "distributed"

    @property
    def manager_group(self) -> str:
        """The managers' group (``cluster.config.groupId``; one manager alone: its own)."""
        return self.model.cluster.groupId or f"eddy-manager-{self.node_id}"

    def manager_db_url(self) -> str:
        """The manager database: ``deployment.config.datasource``, or SQLite in the data
        folder (embedded defaults: one manager on one machine)."""
        name = self.model.deployment.datasource
        if name is not None:
            return self.datasource_url(name)
        return f"sqlite:///{self.data_dir / 'database' / 'manager.db'}"

    def manager_cluster_db_url(self) -> str:
        """Where the managers' lease lives: ``cluster.config.strategyConfig.datasource`` when
        clustered, else the manager database."""
        name = self.model.cluster.strategyConfig.datasource
        if self.model.cluster.enabled and name is not None:
            return self.datasource_url(name)
        return self.manager_db_url()

    def datasource_url(self, name: str) -> str:
        """The SQLAlchemy URL of datasource ``name`` (checked to exist at load time)."""
        from eddy.store.connect import store_url

        return store_url({"datasource": name}, self.node_settings().datasources)

    def peer_verify(self) -> str | bool:
        """How an HTTPS client of another node checks its certificate (``eddy.peerCaFile``,
        else not at all)."""
        ca = self.model.eddy.peerCaFile
        return str(self.resolve(ca)) if ca is not None else False

    def spark_conf(self) -> dict[str, str]:
        """Spark settings: ``eddy.spark.conf`` plus ``spark.master``."""
        spark = self.model.eddy.spark
        conf = {k: str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in spark.conf.items()}
        return {**conf, "spark.master": spark.master}

    def listeners(self) -> list[Listener]:
        """The API's listeners (``wso2.transport.http``), with ``wso2.carbon.ports.offset``
        applied; a manager without that block listens on WSO2's 9543."""
        if self.profile == "manager" and "transport" not in self.model.model_fields_set:
            return self._offset([Listener(id="msf4j-https", port=MANAGER_PORT,
                                          scheme="https")])
        return self._offset(self.model.transport.listenerConfigurations)

    def store_query_listeners(self) -> list[Listener]:
        """The store query API's own listeners (``siddhi.stores.query.api``), offset like the
        others. Without that block a deployment.yaml has none (the API is off); the embedded
        defaults take WSO2's shipped ones, HTTP 7070 and HTTPS 7443, on loopback."""
        if self.profile == "manager":
            return []
        if self.model.store_query_api is not None:
            return self._offset(self.model.store_query_api.listenerConfigurations)
        if self.embedded:
            return self._offset(STORE_QUERY_DEFAULTS)
        return []

    def _offset(self, listeners: list[Listener]) -> list[Listener]:
        offset = self.model.carbon.ports.offset
        return [listener.model_copy(update={"port": listener.port + offset})
                if listener.port else listener for listener in listeners]

    def users(self) -> dict[str, tuple[str, bool]]:
        """``{username: (password, is_admin)}`` of the local user store."""
        manager = self.model.auth.userManager
        admin_ids = {r.role.id for r in manager.userStore.roles
                     if r.role.displayName == manager.adminRole}
        return {u.user.username: (u.user.plain_password, bool(u.user.role_ids & admin_ids))
                for u in manager.userStore.users}

    def default_credentials(self) -> bool:
        """Whether anyone can log in as admin/admin."""
        return self.users().get("admin", ("", False))[0] == "admin"

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback while admin/admin works."""
        exposed = [f"{listener.host}:{listener.port}"
                   for listener in self.listeners() + self.store_query_listeners()
                   if listener.host not in LOOPBACK_HOSTS]
        if exposed and self.default_credentials():
            where = f"{self.source}: " if self.source else ""
            raise ConfigError([
                f"{where}refusing to listen on {', '.join(exposed)} with the default "
                f"credentials admin:admin; set other users under auth.configs.userManager."
                f"userStore.users (passwords base64-encoded), or listen on 127.0.0.1 only"])
