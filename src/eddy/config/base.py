"""What every block of deployment.yaml shares: the error type, the block base class, and
WSO2's class names and defaults the blocks refer to."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

DEFAULT_DATA_DIR = Path("eddy-data")
DEFAULT_PERSISTENCE_STORE = (
    "org.wso2.carbon.stream.processor.core.persistence.FileSystemPersistenceStore")
DB_PERSISTENCE_STORE = "org.wso2.carbon.stream.processor.core.persistence.DBPersistenceStore"
RDBMS_STRATEGY = "org.wso2.carbon.cluster.coordinator.rdbms.RDBMSCoordinationStrategy"
JOB_MANAGER = "org.wso2.carbon.sp.jobmanager.core"
KAFKA_APP_CREATOR = f"{JOB_MANAGER}.appcreator.KafkaSiddhiAppCreator"
NATS_APP_CREATOR = f"{JOB_MANAGER}.appcreator.NatsSiddhiAppCreator"
ROUND_ROBIN_ALLOCATION = f"{JOB_MANAGER}.allocation.RoundRobinAllocationAlgorithm"
MANAGER_PORT = 9543
# Blocks of a WSO2 SP deployment.yaml for features eddy does not have: accepted, not read.
IGNORED_BLOCKS = frozenset({
    "wso2.metrics", "wso2.metrics.jdbc", "wso2.artifact.deployment", "wso2.securevault",
    "databridge.config", "data.bridge.config", "data.agent.config", "transports",
})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
Scalar = str | int | float | bool
Profile = Literal["worker", "manager"]
"""Which of WSO2 SP's runtimes a deployment.yaml configures (its ``conf/<profile>`` folder)."""


class ConfigError(Exception):
    """A deployment.yaml that cannot be used; ``str()`` is one line per fault."""

    def __init__(self, faults: list[str]) -> None:
        self.faults = faults
        super().__init__("\n".join(faults))


class Block(BaseModel):
    """Every block rejects unknown keys and accepts both WSO2's key and the Python name."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


def dotted_path(loc: tuple[str | int, ...]) -> str:
    """A key path as the user writes it: ``state.persistence.config.location``, ``[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"
