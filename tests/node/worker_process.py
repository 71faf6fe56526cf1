"""``eddy worker`` as a real process for tests: its own folder, free ports, real HTTPS.

A test module starts one (Spark takes seconds to start), talks to it over HTTPS verified
against the worker's own self-signed certificate, and can SIGKILL and restart it on the
same data folder. Every wait is bounded; a failure shows the end of the worker's log.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psutil

from polling import free_port, wait_for

SRC = Path(__file__).resolve().parents[2] / "src"
SPARK_START_S = 420.0  # a 2-core machine under seven test runs has taken 200 s to start Spark
ADMIN = ("admin", "admin")


def deployment_yaml(https_port: int, http_port: int | None = None, extra: str = "",
                    eddy: str = "", store_port: int | None = None) -> str:
    """A worker's config: HTTPS (and HTTP) on loopback, the store query API on HTTPS at
    ``store_port``, data under ``data``; ``eddy`` adds lines to the ``eddy:`` block,
    ``extra`` adds blocks."""
    listeners = (f"    - id: msf4j-https\n      host: 127.0.0.1\n      port: {https_port}\n"
                 f"      scheme: https\n")
    if http_port is not None:
        listeners += f"    - id: default\n      host: 127.0.0.1\n      port: {http_port}\n"
    store = ""
    if store_port is not None:
        store = (f"siddhi.stores.query.api:\n  listenerConfigurations:\n    - id: msf4j-https\n"
                 f"      host: 127.0.0.1\n      port: {store_port}\n      scheme: https\n")
    return (f"wso2.carbon:\n  id: test-worker\nwso2.transport.http:\n"
            f"  listenerConfigurations:\n{listeners}{store}eddy:\n  dataDir: data\n"
            f"  deploymentPollIntervalMs: 100\n{eddy}  spark:\n    conf:\n"
            f"      spark.sql.shuffle.partitions: 1\n{extra}")


class WorkerProcess:
    """One ``eddy worker --config <home>/deployment.yaml`` process."""

    def __init__(self, home: Path, extra_config: str = "", eddy_config: str = "") -> None:
        self.home = home
        self.port = free_port()
        self.http_port = free_port()
        self.store_port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / "deployment.yaml"
        self.config.write_text(deployment_yaml(self.port, self.http_port, extra_config,
                                               eddy_config, self.store_port))
        self.log = home / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = f"https://localhost:{self.port}"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def siddhi_files(self) -> Path:
        return self.data / "deployment" / "siddhi-files"

    @property
    def bus_url(self) -> str:
        return f"sqlite:///{self.data / 'bus' / 'bus.db'}"

    def start(self) -> WorkerProcess:
        env = {**os.environ, "PYTHONPATH": str(SRC), "EDDY_LOG_LEVEL": "INFO"}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "eddy.cli", "worker", "--config", str(self.config)],
                cwd=self.home, stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_for(self._answers, 60, "the worker's API", interval=0.2)
        return self

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"the worker exited with {self.process.returncode}:\n"
                                 f"{self.log_tail()}")
        try:
            with self.client() as client:
                return bool(client.get("/siddhi-apps").status_code == 200)
        except (httpx.TransportError, ssl.SSLError, FileNotFoundError):
            return False

    def client(self, auth: tuple[str, str] | None = ADMIN) -> httpx.Client:
        """An HTTPS client of the worker API that trusts only the worker's self-signed
        certificate."""
        return self._client(self.base_url, auth)

    def store_client(self, auth: tuple[str, str] | None = ADMIN) -> httpx.Client:
        """An HTTPS client of the store query API (its own listener)."""
        return self._client(f"https://localhost:{self.store_port}", auth)

    def _client(self, base_url: str, auth: tuple[str, str] | None) -> httpx.Client:
        context = ssl.create_default_context(
            cafile=str(self.data / "security" / "eddy-worker.crt"))
        return httpx.Client(base_url=base_url, auth=auth, verify=context, timeout=60)

    def status(self, app: str, client: httpx.Client | None = None) -> dict[str, Any]:
        """The app's status body, ``{"status": "absent"}`` when it is not deployed."""
        if client is None:
            with self.client() as own:
                return self.status(app, own)
        response = client.get(f"/siddhi-apps/{app}/status")
        if response.status_code == 404:
            return {"status": "absent"}
        body: dict[str, Any] = response.json()
        return body

    def wait_status(self, app: str, status: str, timeout: float = SPARK_START_S) -> dict[str, Any]:
        """Polls the app's status on one kept-alive connection: a TLS handshake per poll
        would cost the worker CPU that, on a loaded 2-core machine, Spark is waiting for."""
        last: dict[str, Any] = {}
        with self.client() as client:
            def reached() -> bool:
                nonlocal last
                last = self.status(app, client)
                return bool(last["status"] == status)

            try:
                wait_for(reached, timeout, f"{app} to be {status}", interval=0.1)
            except AssertionError:
                raise AssertionError(f"{app} is {last}, not {status}:\n"
                                     f"{self.log_tail()}") from None
        return last

    def kill(self) -> None:
        """SIGKILL: no clean stop, no final checkpoint."""
        assert self.process is not None
        children = self._children()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._reap(children)

    def stop(self) -> int:
        """SIGTERM and wait for a clean exit."""
        assert self.process is not None
        children = self._children()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self._reap(children)
        return self.process.returncode

    def _children(self) -> list[psutil.Process]:
        assert self.process is not None
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    @staticmethod
    def _reap(children: list[psutil.Process]) -> None:
        """Spark's JVM exits when its driver's pipe closes; wait for it (and kill what
        lingers) so no process of this worker writes its checkpoint after a restart."""
        _, alive = psutil.wait_procs(children, timeout=30)
        for child in alive:
            child.kill()
        psutil.wait_procs(alive, timeout=10)

    def append(self, topic: str, rows: dict[str, list[Any]]) -> None:
        """Sends events to an app's input topic on the worker's bus."""
        import pyarrow as pa

        from eddy.bus import open_bus

        with open_bus(self.bus_url) as bus:
            bus.append(topic, pa.table(rows))

    def outputs(self, topic: str) -> list[list[Any]]:
        """The data of every event on an output topic (empty before the topic exists)."""
        from eddy.bus import UnknownTopicError, open_bus
        from eddy.engine.run.group_topics import output_events

        with open_bus(self.bus_url) as bus:
            try:
                return [event["data"] for event in output_events(bus, topic)]
            except UnknownTopicError:
                return []

    def wait_outputs(self, topic: str, count: int, timeout: float = 120) -> list[list[Any]]:
        """The outputs once there are at least ``count``."""
        found: list[list[Any]] = []

        def enough() -> bool:
            nonlocal found
            found = self.outputs(topic)
            return len(found) >= count

        try:
            wait_for(enough, timeout, f"{count} events on {topic}", interval=0.25)
        except AssertionError:
            raise AssertionError(f"{topic} has {found}:\n{self.log_tail()}") from None
        return found

    def log_tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
