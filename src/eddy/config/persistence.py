"""``state.persistence``: where and how often app state revisions are written."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from eddy.config.base import DB_PERSISTENCE_STORE, DEFAULT_PERSISTENCE_STORE, Block


class PersistenceStoreConfig(Block):
    location: Path = Path("siddhi-app-persistence")
    datasource: str | None = None
    table: str | None = None


class StatePersistence(Block):
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
    def _known_store(cls, value: str) -> str:
        if "Incremental" in value or not value.endswith(
                ("FileSystemPersistenceStore", "DBPersistenceStore")):
            raise ValueError(f"eddy keeps full revisions on the file system or in a database; "
                             f"use {DEFAULT_PERSISTENCE_STORE} or {DB_PERSISTENCE_STORE}")
        return value

    @property
    def in_database(self) -> bool:
        """Whether revisions go to ``config.datasource`` (``DBPersistenceStore``)."""
        return self.persistenceStore.endswith("DBPersistenceStore")

    @property
    def table(self) -> str:
        """The revisions table of the DB store (WSO2's default ``PERSISTENCE_TABLE``)."""
        return self.config.table or "PERSISTENCE_TABLE"

    @property
    def datasource(self) -> str:
        """The datasource of the DB store (WSO2's default ``WSO2_CARBON_DB``)."""
        return self.config.datasource or "WSO2_CARBON_DB"
