"""Fixtures of the API tests: one real ``eddy worker`` process for the whole package.

The worker process helper lives beside the node tests (``tests/node/worker_process.py``).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

_NODE_TESTS = Path(__file__).resolve().parents[1] / "node"
if str(_NODE_TESTS) not in sys.path:
    sys.path.insert(0, str(_NODE_TESTS))

from worker_process import WorkerProcess  # noqa: E402

APP_FILE = Path(__file__).with_name("TestSiddhiApp.siddhi")
SEED_CURL = ('curl -X POST "https://localhost:9443/siddhi-apps" -H "accept: application/json" '
             '-H "Content-Type: text/plain" -d @TestSiddhiApp.siddhi -u admin:admin -k')
SeedCurl = Callable[[Path], tuple[int, str]]

def metrics_datasource(jdbc_url: str) -> str:
    """A ``wso2.datasources`` block with the ``WSO2_METRICS_DB`` entry at ``jdbc_url``."""
    return (f"wso2.datasources:\n  dataSources:\n    - name: WSO2_METRICS_DB\n"
            f"      definition:\n        type: RDBMS\n        configuration:\n"
            f"          jdbcUrl: {jdbc_url}\n")


@pytest.fixture(scope="package")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """A worker keeping two revisions per app, taking request bodies up to 64 KiB and
    writing its metrics into an SQLite file (``metrics.db``) every second."""
    home = tmp_path_factory.mktemp("api-worker")
    process = WorkerProcess(home,
                            extra_config="state.persistence:\n  revisionsToKeep: 2\n"
                            + metrics_datasource(f"jdbc:sqlite:{home / 'metrics.db'}"),
                            eddy_config="  maxRequestBytes: 65536\n  metricsIntervalS: 1\n")
    process.start()
    yield process
    assert process.stop() == 0, process.log_tail()


@pytest.fixture(scope="package")
def seed_curl(worker: WorkerProcess) -> SeedCurl:
    """Runs the seed's curl command in a folder holding TestSiddhiApp.siddhi — verbatim but
    for the port, plus ``-s -w`` to read the status code; returns (status, body)."""
    command = shlex.split(SEED_CURL.replace(":9443", f":{worker.port}"))

    def run(folder: Path) -> tuple[int, str]:
        shutil.copy(APP_FILE, folder / APP_FILE.name)
        result = subprocess.run(command + ["-s", "-w", "\n%{http_code}"], cwd=folder,
                                capture_output=True, text=True, timeout=60, check=True)
        body, code = result.stdout.rsplit("\n", 1)
        return int(code), body

    return run


@pytest.fixture(scope="package")
def app_text() -> str:
    """The text of TestSiddhiApp.siddhi."""
    return APP_FILE.read_text()


@pytest.fixture(scope="package")
def deployed(worker: WorkerProcess, seed_curl: SeedCurl,
             tmp_path_factory: pytest.TempPathFactory) -> WorkerProcess:
    """The worker with TestSiddhiApp deployed by the seed's curl command, and running."""
    code, body = seed_curl(tmp_path_factory.mktemp("curl"))
    assert code == 201, body
    assert httpx.Response(201, content=body).json() == {
        "type": "success",
        "message": "Siddhi App saved successfully and will be deployed in next deployment cycle"}
    worker.wait_status("TestSiddhiApp", "active")
    return worker
