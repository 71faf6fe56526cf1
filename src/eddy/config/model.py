"""The whole deployment.yaml as one model, its top-level keys WSO2's dotted block names."""

from __future__ import annotations

from pydantic import Field

from eddy.config.auth import AuthConfigs
from eddy.config.base import Block
from eddy.config.cluster import ClusterConfig, DeploymentConfig
from eddy.config.datasources import DataSources
from eddy.config.eddy_settings import EddySettings, StatusDashboard
from eddy.config.node_blocks import Carbon, Transport
from eddy.config.persistence import StatePersistence
from eddy.config.siddhi_blocks import Siddhi


class DeploymentYaml(Block):
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
    status_dashboard: StatusDashboard = Field(default=StatusDashboard(),
                                              alias="wso2.status.dashboard")
    eddy: EddySettings = EddySettings()
