"""Deploying child apps through a worker's own REST API, as WSO2's manager does.

``POST /siddhi-apps`` with the child's text; a 409 (the worker has an app of that name)
is answered by comparing its content hash with the child's and ``PUT`` when they differ;
``DELETE /siddhi-apps/{name}`` undeploys (404 counts as done); ``DELETE
/childApps/{name}/state?version=…`` deletes a retired child's state from the workers'
persistence database (:mod:`eddy.api.child_state`). Credentials are the ones the worker sent
in its heartbeat (its ``httpsInterface``), which the leader keeps in memory only.
"""

from __future__ import annotations

import hashlib

import httpx

from eddy.store.manager_state import WorkerRow

TIMEOUT_S = 10.0
"""A deploy validates the app on the worker: seconds on a loaded machine, not more. A paused
worker accepts connections and never answers: every call must give up soon, or one paused
worker would hold up the leader's round."""
FAULTY = "faulty"
UNDEPLOY_WAIT_S = 5.0
"""How long an undeploy is waited for before the manager moves on (see undeploy)."""


class DeployError(RuntimeError):
    """A worker did not take or drop a child app; the message says which and why."""


def content_version(text: str) -> str:
    """A child's content hash (its ``version``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class WorkerClient:
    """HTTPS calls from the manager to workers."""

    def __init__(self, verify: str | bool, timeout_s: float = TIMEOUT_S) -> None:
        self.verify = verify
        self.timeout_s = timeout_s

    def _client(self, worker: WorkerRow) -> httpx.Client:
        auth = (worker.username or "", worker.password or "") if worker.username else None
        return httpx.Client(base_url=f"https://{worker.host}:{worker.port}", auth=auth,
                            verify=self.verify, timeout=self.timeout_s)

    def deploy(self, worker: WorkerRow, name: str, text: str, *, again: bool = False) -> None:
        """Makes ``worker`` run child ``name`` with exactly ``text``; ``again`` redeploys it
        even when the worker has that text (a child that failed there)."""
        try:
            with self._client(worker) as client:
                if again:
                    response = client.put("/siddhi-apps", content=text.encode("utf-8"),
                                          headers={"Content-Type": "text/plain"})
                    if response.status_code not in (200, 201):
                        raise DeployError(f"worker {worker.node_id} refused {name}: "
                                          f"{response.status_code} {response.text[:300]}")
                    return
                response = client.post("/siddhi-apps", content=text.encode("utf-8"),
                                       headers={"Content-Type": "text/plain"})
                if response.status_code == 409:
                    current = client.get(f"/siddhi-apps/{name}")
                    if current.status_code == 200 and content_version(
                            current.json().get("content", "")) == content_version(text):
                        return
                    response = client.put("/siddhi-apps", content=text.encode("utf-8"),
                                          headers={"Content-Type": "text/plain"})
        except httpx.HTTPError as error:
            raise DeployError(f"cannot reach worker {worker.node_id} to deploy {name}: "
                              f"{error}") from None
        if response.status_code not in (200, 201):
            raise DeployError(f"worker {worker.node_id} refused {name}: "
                              f"{response.status_code} {response.text[:300]}")

    def undeploy(self, worker: WorkerRow, name: str) -> None:
        """Makes ``worker`` stop and forget child ``name``."""
        try:
            with self._client(worker) as client:
                response = client.delete(f"/siddhi-apps/{name}", timeout=UNDEPLOY_WAIT_S)
        except httpx.ReadTimeout:
            # The worker deletes the app's file before it waits for the app to stop (which
            # waits for Spark while it starts): the undeploy is under way. The
            # reconciliation checks it later.
            return
        except httpx.HTTPError as error:
            raise DeployError(f"cannot reach worker {worker.node_id} to undeploy {name}: "
                              f"{error}") from None
        if response.status_code not in (200, 404):
            raise DeployError(f"worker {worker.node_id} did not undeploy {name}: "
                              f"{response.status_code} {response.text[:300]}")

    def forget_state(self, worker: WorkerRow, name: str, version: str,
                     positions: bool = True) -> None:
        """Has ``worker`` delete the state of retired child ``name`` (content hash
        ``version``) from the persistence database all workers share, and with
        ``positions`` its bus consumer positions."""
        try:
            with self._client(worker) as client:
                response = client.delete(f"/childApps/{name}/state",
                                         params={"version": version,
                                                 "positions": str(positions).lower()})
        except httpx.HTTPError as error:
            raise DeployError(f"cannot reach worker {worker.node_id} to delete the state of "
                              f"{name}: {error}") from None
        if response.status_code != 200:
            raise DeployError(f"worker {worker.node_id} did not delete the state of {name}: "
                              f"{response.status_code} {response.text[:300]}")

    def apps(self, worker: WorkerRow) -> dict[str, str]:
        """``{app: content hash}`` of what ``worker`` has deployed; a faulty app's hash is
        ``faulty`` (it failed there: the manager deploys it again)."""
        try:
            with self._client(worker) as client:
                names = client.get("/siddhi-apps")
                names.raise_for_status()
                found: dict[str, str] = {}
                for name in names.json():
                    content = client.get(f"/siddhi-apps/{name}")
                    status = client.get(f"/siddhi-apps/{name}/status")
                    if status.status_code == 200 and status.json().get("status") == "faulty":
                        found[name] = FAULTY
                    elif content.status_code == 200:
                        found[name] = content_version(content.json().get("content", ""))
                return found
        except httpx.HTTPError as error:
            raise DeployError(f"cannot list the apps of worker {worker.node_id}: "
                              f"{error}") from None
