"""``wso2.datasources``: the named RDBMS connections other blocks and apps refer to."""

from __future__ import annotations

from typing import Literal

from eddy.config.base import Block


class JndiConfig(Block):
    name: str
    useJndiReference: bool = False


class RdbmsConfiguration(Block):
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


class DataSourceDefinition(Block):
    type: Literal["RDBMS"] = "RDBMS"
    configuration: RdbmsConfiguration


class DataSource(Block):
    name: str
    description: str | None = None
    jndiConfig: JndiConfig | None = None
    definition: DataSourceDefinition


class DataSources(Block):
    dataSources: list[DataSource] = []
