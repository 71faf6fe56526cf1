"""The faults between blocks that no single block can see (datasources named but not
defined, what minimum HA, a distributed worker and a manager need)."""

from __future__ import annotations

from pathlib import Path

from eddy.config.base import DB_PERSISTENCE_STORE, Profile, dotted_path
from eddy.config.model import DeploymentYaml

KeyLines = dict[tuple[str | int, ...], int]


def cross_check(model: DeploymentYaml, lines: KeyLines, source: Path,
                profile: Profile = "worker") -> list[str]:
    """Faults between blocks: datasources that are named but not defined, what minimum
    HA needs (a group id, the cluster and persistence databases), what a distributed
    worker needs (its interface, its managers) and what a manager needs."""
    faults: list[str] = []
    defined = {d.name for d in model.datasources.dataSources}

    def fault(path: tuple[str, ...], message: str) -> None:
        known = path
        while known and known not in lines:
            known = known[:-1]
        faults.append(f"{source}:{lines.get(known, 1)}: {dotted_path(path)}: {message}")

    def need_datasource(path: tuple[str, ...], name: str | None) -> None:
        if name is None:
            fault(path, "required: the name of a wso2.datasources entry")
        elif name not in defined:
            fault(path, f"no datasource '{name}' under wso2.datasources.dataSources "
                        f"(defined: {', '.join(sorted(defined)) or 'none'})")

    persistence = model.persistence
    if persistence.in_database:
        need_datasource(("state.persistence", "config", "datasource"), persistence.datasource)
    cluster, ha = model.cluster, model.deployment.type == "ha"
    if ha and not cluster.enabled:
        fault(("deployment.config", "type"), "minimum HA needs cluster.config.enabled: true")
    if cluster.enabled and ha:
        if not cluster.groupId:
            fault(("cluster.config", "groupId"), "required: both nodes of the pair use the "
                                                  "same groupId")
        need_datasource(("cluster.config", "strategyConfig", "datasource"),
                        cluster.strategyConfig.datasource)
        if not persistence.in_database:
            fault(("state.persistence", "persistenceStore"),
                  f"minimum HA needs {DB_PERSISTENCE_STORE}: the two nodes share no file "
                  f"system, the passive takes over from the state in the database")
    deployment = model.deployment
    if profile == "manager":
        if deployment.type != "distributed":
            fault(("deployment.config", "type"), "a manager runs the fully distributed "
                                                 "deployment: type: distributed")
        if deployment.datasource is not None:
            need_datasource(("deployment.config", "datasource"), deployment.datasource)
        if cluster.enabled:
            if not cluster.groupId:
                fault(("cluster.config", "groupId"), "required: every manager of the "
                                                      "cluster uses the same groupId")
            need_datasource(("cluster.config", "strategyConfig", "datasource"),
                            cluster.strategyConfig.datasource)
            if deployment.datasource is None:
                fault(("deployment.config", "datasource"), "required with cluster.config "
                      "enabled: the managers share their apps and placement there")
        if deployment.appCreatorClass.endswith("NatsSiddhiAppCreator") \
                and not deployment.natsServerUrl:
            fault(("deployment.config", "natsServerUrl"),
                  "required with the NatsSiddhiAppCreator: the NATS server of the bus")
    elif deployment.type == "distributed":
        if deployment.httpsInterface is None:
            fault(("deployment.config", "httpsInterface"), "required: the host, port and "
                  "credentials the managers deploy child apps through")
        if not deployment.resourceManagers:
            fault(("deployment.config", "resourceManagers"), "required: the managers this "
                  "worker registers with (host, port, username, password each)")
    return faults
