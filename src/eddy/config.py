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
Spark ``local[*]``, HTTPS on 127.0.0.1:9443, user ``admin`` with password ``admin``).
"""

from __future__ import annotations

import base64
import binascii
import difflib
import os
import re
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eddy.store.aggregation_settings import NodeSettings

DEFAULT_DATA_DIR = Path("eddy-data")
DEFAULT_PERSISTENCE_STORE = (
    "org.wso2.carbon.stream.processor.core.persistence.FileSystemPersistenceStore")
# Blocks of a WSO2 SP deployment.yaml for features eddy does not have: accepted, not read.
IGNORED_BLOCKS = frozenset({
    "wso2.metrics", "wso2.metrics.jdbc", "wso2.artifact.deployment", "wso2.securevault",
    "databridge.config", "data.bridge.config", "data.agent.config", "transports",
})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
Scalar = str | int | float | bool


class ConfigError(Exception):
    """A deployment.yaml that cannot be used; ``str()`` is one line per fault."""

    def __init__(self, faults: list[str]) -> None:
        self.faults = faults
        super().__init__("\n".join(faults))


class _Block(BaseModel):
    """Every block rejects unknown keys and accepts both WSO2's key and the Python name."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


# -- wso2.carbon -----------------------------------------------------------------------

class Ports(_Block):
    offset: int = Field(default=0, ge=0, le=10_000)


class Carbon(_Block):
    """``wso2.carbon``: the node's identity; ``ports.offset`` shifts every listener port."""

    type: str = "wso2-sp"
    id: str = Field(default="wso2-sp", min_length=1)
    name: str = "eddy worker"
    ports: Ports = Ports()


# -- wso2.transport.http ---------------------------------------------------------------

class Listener(_Block):
    """One ``listenerConfigurations`` entry: an HTTP or HTTPS endpoint of the REST API.

    HTTPS takes its certificate from ``keyStoreFile`` (PKCS#12, or PEM with key and
    certificate; ``keyStorePassword``) or from ``certFile`` + ``keyFile`` (PEM; eddy's keys);
    with neither, eddy generates a self-signed certificate on first start.
    """

    id: str = "default"
    host: str = "127.0.0.1"
    port: int = Field(ge=0, le=65535)
    scheme: Literal["http", "https"] = "http"
    keyStoreFile: Path | None = None
    keyStorePassword: str | None = None
    certPass: str | None = None
    certFile: Path | None = None
    keyFile: Path | None = None


class TransportProperty(_Block):
    name: str
    value: Scalar


class Transport(_Block):
    transportProperties: list[TransportProperty] = []
    listenerConfigurations: list[Listener] = [
        Listener(id="msf4j-https", port=9443, scheme="https")]


# -- state.persistence -----------------------------------------------------------------

class PersistenceStoreConfig(_Block):
    location: Path = Path("siddhi-app-persistence")
    datasource: str | None = None
    table: str | None = None


class StatePersistence(_Block):
    """``state.persistence``: periodic revisions of every app's state (digest §3.4, §3.7).

    ``intervalInMin`` may be fractional in eddy (WSO2 takes whole minutes); ≤ 0 disables
    the schedule.
    """

    enabled: bool = False
    intervalInMin: float = 1
    revisionsToKeep: int = Field(default=3, ge=1)
    persistenceStore: str = DEFAULT_PERSISTENCE_STORE
    config: PersistenceStoreConfig = PersistenceStoreConfig()

    @field_validator("persistenceStore")
    @classmethod
    def _file_store_only(cls, value: str) -> str:
        if not value.endswith("FileSystemPersistenceStore") or "Incremental" in value:
            raise ValueError(f"eddy keeps revisions on the file system only; use "
                             f"{DEFAULT_PERSISTENCE_STORE}")
        return value


# -- wso2.datasources ------------------------------------------------------------------

class JndiConfig(_Block):
    name: str
    useJndiReference: bool = False


class RdbmsConfiguration(_Block):
    jdbcUrl: str
    username: str | None = None
    password: str | None = None
    driverClassName: str | None = None
    maxPoolSize: int | None = None
    minIdle: int | None = None
    idleTimeout: int | None = None
    maxLifetime: int | None = None
    connectionTimeout: int | None = None
    connectionTestQuery: str | None = None
    validationTimeout: int | None = None
    isAutoCommit: bool | None = None


class DataSourceDefinition(_Block):
    type: Literal["RDBMS"] = "RDBMS"
    configuration: RdbmsConfiguration


class DataSource(_Block):
    name: str
    description: str | None = None
    jndiConfig: JndiConfig | None = None
    definition: DataSourceDefinition


class DataSources(_Block):
    dataSources: list[DataSource] = []


# -- siddhi ----------------------------------------------------------------------------

class SiddhiProperties(_Block):
    """``siddhi.properties``: node-wide Siddhi settings (digest §4)."""

    partitionById: bool = False
    shardId: str | None = None


class Extension(_Block):
    name: str
    namespace: str
    properties: dict[str, Scalar] = {}


class ExtensionEntry(_Block):
    extension: Extension


class Ref(_Block):
    name: str
    type: str
    properties: dict[str, Scalar] = {}


class RefEntry(_Block):
    ref: Ref


class Siddhi(_Block):
    properties: SiddhiProperties = SiddhiProperties()
    extensions: list[ExtensionEntry] = []
    refs: list[RefEntry] = []


# -- auth.configs ----------------------------------------------------------------------

class User(_Block):
    """A local user; ``password`` is base64-encoded as in WSO2 SP (``YWRtaW4=`` is admin)."""

    username: str = Field(min_length=1)
    password: str
    roles: str = "1"

    @field_validator("password")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("WSO2 SP keeps local passwords base64-encoded (admin is "
                             "'YWRtaW4='); encode it with: printf %s 'secret' | base64") from None
        return value

    @field_validator("roles", mode="before")
    @classmethod
    def _role_ids(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @property
    def plain_password(self) -> str:
        """The password in clear text."""
        return base64.b64decode(self.password).decode("utf-8")

    @property
    def role_ids(self) -> frozenset[str]:
        """The ids in the comma-separated ``roles``."""
        return frozenset(r.strip() for r in self.roles.split(",") if r.strip())


class UserEntry(_Block):
    user: User


class Role(_Block):
    id: str
    displayName: str

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value


class RoleEntry(_Block):
    role: Role


class UserStore(_Block):
    users: list[UserEntry] = [UserEntry(user=User(username="admin", password="YWRtaW4="))]
    roles: list[RoleEntry] = [RoleEntry(role=Role(id="1", displayName="admin"))]


class UserManager(_Block):
    adminRole: str = "admin"
    userStore: UserStore = UserStore()


class AuthConfigs(_Block):
    """``auth.configs``: WSO2 SP's local user store. Users in ``adminRole`` may change apps;
    the others may only read (eddy has no permissions database)."""

    type: Literal["local"] = "local"
    userManager: UserManager = UserManager()


# -- cluster.config and deployment.config (read; HA and distributed modes come later) ---

class StrategyConfig(_Block):
    datasource: str | None = None
    heartbeatInterval: int = Field(default=5000, gt=0)
    heartbeatMaxRetry: int = Field(default=3, ge=1)
    eventPollingInterval: int = Field(default=5000, gt=0)


class ClusterConfig(_Block):
    enabled: bool = False
    groupId: str | None = None
    coordinationStrategyClass: str = (
        "org.wso2.carbon.cluster.coordinator.rdbms.RDBMSCoordinationStrategy")
    strategyConfig: StrategyConfig = StrategyConfig()


class Endpoint(_Block):
    host: str = "localhost"
    port: int = Field(default=9443, ge=0, le=65535)
    username: str | None = None
    password: str | None = None


class SyncServer(_Block):
    host: str = "0.0.0.0"
    port: int = 9893
    advertisedHost: str | None = None
    advertisedPort: int | None = None
    bossThreads: int = 10
    workerThreads: int = 10


class SyncClientPool(_Block):
    maxActive: int = 10
    maxTotal: int = 10
    maxIdle: int = 10
    maxWait: int = 60_000
    minEvictableIdleTimeMillis: int = 120_000


class DeploymentConfig(_Block):
    """``deployment.config`` of an HA worker (``type: ha``) or a distributed one."""

    type: Literal["single-node", "ha", "distributed"] = "single-node"
    eventSyncServer: SyncServer | None = None
    eventSyncClientPool: SyncClientPool | None = None
    eventByteBufferQueueCapacity: int = 20_000
    byteBufferExtractorThreadPoolSize: int = 5
    passiveNodeDetailsWaitTimeOutMillis: int = 300_000
    passiveNodeDetailsRetrySleepTimeMillis: int = 500
    httpsInterface: Endpoint | None = None
    resourceManagers: list[Endpoint] = []
    leaderRetryInterval: int = 10_000
    isReceiverNode: bool = False


# -- eddy ------------------------------------------------------------------------------

class SparkSettings(_Block):
    master: str = "local[*]"
    conf: dict[str, Scalar] = {}


class EddySettings(_Block):
    """``eddy:``: settings WSO2 SP has no key for."""

    dataDir: Path = DEFAULT_DATA_DIR
    busUrl: str | None = None
    spark: SparkSettings = SparkSettings()
    maxRequestBytes: int = Field(default=1 << 20, ge=1024)
    deploymentPollIntervalMs: int = Field(default=250, ge=10, le=5_000)
    metricsIntervalS: float = Field(default=60, gt=0)
    """Seconds between writes to the ``METRIC_*`` tables (WSO2's ``pollingPeriod``)."""
    sourceMaxBehindS: float = Field(default=30, gt=0)
    """Seconds an app may lag behind its HTTP sources' events before they answer 503."""
    realTimeBatchS: float | None = Field(default=None, gt=0)
    """Run apps whose queries are all stateless in Spark's real-time mode, checkpointing
    every this many seconds (e.g. 300); unset: every app runs in micro-batches."""


class DeploymentYaml(_Block):
    """The whole file. Field aliases are WSO2's dotted top-level keys."""

    carbon: Carbon = Field(default=Carbon(), alias="wso2.carbon")
    transport: Transport = Field(default=Transport(), alias="wso2.transport.http")
    persistence: StatePersistence = Field(default=StatePersistence(), alias="state.persistence")
    datasources: DataSources = Field(default=DataSources(), alias="wso2.datasources")
    siddhi: Siddhi = Siddhi()
    auth: AuthConfigs = Field(default=AuthConfigs(), alias="auth.configs")
    cluster: ClusterConfig = Field(default=ClusterConfig(), alias="cluster.config")
    deployment: DeploymentConfig = Field(default=DeploymentConfig(), alias="deployment.config")
    store_query_api: Transport | None = Field(default=None, alias="siddhi.stores.query.api")
    eddy: EddySettings = EddySettings()


class WorkerConfig:
    """A validated deployment.yaml (or the embedded defaults) with paths resolved."""

    def __init__(self, model: DeploymentYaml, source: Path | None,
                 ignored: tuple[str, ...] = ()) -> None:
        self.model = model
        self.source = source
        self.ignored_blocks = ignored
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
        """``eddy.busUrl``, or the SQLite bus in the data folder."""
        if self.model.eddy.busUrl:
            return self.model.eddy.busUrl
        return f"sqlite:///{self.data_dir / 'bus' / 'bus.db'}"

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

    def spark_conf(self) -> dict[str, str]:
        """Spark settings: ``eddy.spark.conf`` plus ``spark.master``."""
        spark = self.model.eddy.spark
        conf = {k: str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in spark.conf.items()}
        return {**conf, "spark.master": spark.master}

    def listeners(self) -> list[Listener]:
        """Every listener of the API — ``wso2.transport.http``'s, then those of
        ``siddhi.stores.query.api`` — with ``wso2.carbon.ports.offset`` applied."""
        offset = self.model.carbon.ports.offset
        listeners = list(self.model.transport.listenerConfigurations)
        if self.model.store_query_api is not None:
            listeners += self.model.store_query_api.listenerConfigurations
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
        exposed = [f"{listener.host}:{listener.port}" for listener in self.listeners()
                   if listener.host not in LOOPBACK_HOSTS]
        if exposed and self.default_credentials():
            where = f"{self.source}: " if self.source else ""
            raise ConfigError([
                f"{where}refusing to listen on {', '.join(exposed)} with the default "
                f"credentials admin:admin; set other users under auth.configs.userManager."
                f"userStore.users (passwords base64-encoded), or listen on 127.0.0.1 only"])


def load_config(path: str | Path | None) -> WorkerConfig:
    """The worker's configuration from ``path``, or the embedded defaults when None."""
    if path is None:
        return WorkerConfig(DeploymentYaml.model_validate({}), None)
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError([f"{source}: cannot read: {error.strerror or error}"]) from None
    return parse_config(text, source)


def parse_config(text: str, source: Path) -> WorkerConfig:
    """Validates deployment.yaml text; :class:`ConfigError` names the line and key path."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f"{mark.line + 1}:" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError([f"{source}:{line} not valid YAML: {problem}"]) from None
    reader = _Reader(source)
    data = reader.plain(root, ()) if root is not None else {}
    lines, faults = reader.lines, reader.faults
    if not isinstance(data, dict):
        raise ConfigError([f"{source}:1: the file must be a mapping of keys to blocks"])
    ignored = tuple(sorted(k for k in data if k in IGNORED_BLOCKS))
    for key in ignored:
        del data[key]
    try:
        model = DeploymentYaml.model_validate(data)
    except ValidationError as error:
        faults += [_describe(e, lines, source) for e in error.errors()]
    if faults:
        prefix = len(f"{source}:")
        raise ConfigError(sorted(faults, key=lambda f: int(f[prefix:].split(":")[0])))
    return WorkerConfig(model, source, ignored)


_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class _Reader:
    """Turns composed YAML nodes into Python values, recording each key's line."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.lines: dict[tuple[str | int, ...], int] = {}
        self.faults: list[str] = []
        self._constructor = yaml.SafeLoader("")

    def plain(self, node: yaml.Node, path: tuple[str | int, ...]) -> Any:
        """The value of ``node`` at key path ``path``, with ``${env:NAME}`` substituted."""
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = str(self._constructor.construct_object(key_node))
                child = (*path, key)
                if key in result:
                    self.faults.append(
                        f"{self.source}:{key_node.start_mark.line + 1}: {_dotted(child)}: "
                        f"duplicate key (first at line {self.lines[child]})")
                    continue
                self.lines[child] = key_node.start_mark.line + 1
                result[key] = self.plain(value_node, child)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(item, (*path, i)) for i, item in enumerate(node.value)]
        value = self._constructor.construct_object(node)
        return _ENV.sub(lambda m: self._env(m.group(1), path), value) \
            if isinstance(value, str) else value

    def _env(self, name: str, path: tuple[str | int, ...]) -> str:
        if name not in os.environ:
            self.faults.append(f"{self.source}:{self.lines[path]}: {_dotted(path)}: "
                               f"environment variable {name} is not set")
            return ""
        return os.environ[name]


def _dotted(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


def _describe(error: Any, lines: dict[tuple[str | int, ...], int], source: Path) -> str:
    """One pydantic error as ``file:line: key.path: message``."""
    loc = tuple(p for p in error["loc"] if isinstance(p, (str, int)))
    known = loc
    while known and known not in lines:
        known = known[:-1]
    line = lines.get(known, 1)
    if error["type"] == "extra_forbidden":
        names = _known_keys(loc[:-1])
        suggestion = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.6)
        hint = (f"; did you mean '{suggestion[0]}'?" if suggestion
                else f"; known keys here: {', '.join(names)}" if names else "")
        return f"{source}:{line}: {_dotted(loc)}: unknown key{hint}"
    if error["type"] == "missing":
        return f"{source}:{line}: {_dotted(loc)}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{source}:{line}: {_dotted(loc)}: {message} (got {error.get('input')!r})"


def _known_keys(loc: tuple[str | int, ...]) -> list[str]:
    """The keys the block at ``loc`` accepts (WSO2's names)."""
    current: Any = DeploymentYaml
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int) or not (isinstance(current, type)
                                         and issubclass(current, BaseModel)):
            continue
        field = next((f for n, f in current.model_fields.items()
                      if (f.alias or n) == part), None)
        if field is None:
            return []
        current = field.annotation
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _unwrap(annotation: Any) -> Any:
    """The model class inside ``X | None`` or ``list[X]``, else the annotation itself."""
    for arg in typing.get_args(annotation):
        found = _unwrap(arg)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation
