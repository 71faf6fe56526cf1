"""Fixtures of the dashboard tests: a real ``eddy worker``, a real ``eddy dashboard`` and
Debian's Chromium driven by Playwright (never a downloaded browser).

Without Chromium the browser tests FAIL with the command that installs it (``.ci/run`` runs
it): a dashboard that nobody checked in a browser is not tested. Screenshots go to
``test-artifacts/dashboard/`` at the top of the repository.
"""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

_NODE_TESTS = Path(__file__).resolve().parents[1] / "node"
if str(_NODE_TESTS) not in sys.path:
    sys.path.insert(0, str(_NODE_TESTS))

from worker_process import SRC, WorkerProcess, free_port, wait_for  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
CLUSTER_UI_MS = 30_000
"""How long a cluster page waits for what the manager or an HA pair shows (loaded box)."""


def chromium_path() -> str:
    """Debian's Chromium; fails (never skips) when it is not installed."""
    found = os.environ.get("EDDY_CHROMIUM") or next(
        (p for p in map(shutil.which, CHROMIUM_CANDIDATES) if p), None)
    if found is None:
        pytest.fail("Debian's chromium is not installed, so the dashboard cannot be tested "
                    "in a browser: run `apt-get update && apt-get install -y chromium` "
                    "(.ci/run does), or set EDDY_CHROMIUM to a Chromium binary",
                    pytrace=False)
    return found


class DashboardProcess:
    """One ``eddy dashboard --config <home>/deployment.yaml`` process in its own group."""

    def __init__(self, home: Path, metrics_db: Path) -> None:
        self.home = home
        self.port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / "deployment.yaml"
        self.config.write_text(
            f"wso2.transport.http:\n  listenerConfigurations:\n    - id: dashboard\n"
            f"      host: 127.0.0.1\n      port: {self.port}\n      scheme: https\n"
            f"wso2.status.dashboard:\n  pollingInterval: 1\n"
            f"wso2.datasources:\n  dataSources:\n"
            + "".join(f"    - name: {name}\n      definition:\n        type: RDBMS\n"
                      f"        configuration:\n          jdbcUrl: jdbc:sqlite:{path}\n"
                      for name, path in (("WSO2_STATUS_DASHBOARD_DB", home / "status.db"),
                                         ("DASHBOARD_DB", home / "dashboard.db"),
                                         ("WSO2_METRICS_DB", metrics_db)))
            + "eddy:\n  dataDir: data\n")
        self.log = home / "dashboard.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"https://127.0.0.1:{self.port}"

    def start(self) -> DashboardProcess:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "eddy.cli", "dashboard", "--config", str(self.config)],
                cwd=self.home, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        wait_for(self._answers, 180, "the dashboard to answer", interval=0.2)
        return self

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"the dashboard exited: {self.log.read_text()[-3000:]}")
        cert = self.home / "data" / "security" / "eddy-worker.crt"
        if not cert.exists():
            return False
        try:
            context = ssl.create_default_context(cafile=str(cert))
            return httpx.get(f"{self.url}/login", verify=context, timeout=5).status_code == 200
        except (httpx.TransportError, ssl.SSLError):
            return False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture(scope="package")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """A worker writing its metrics into ``metrics.db`` every second."""
    home = tmp_path_factory.mktemp("dash-worker")
    process = WorkerProcess(
        home, extra_config=(f"wso2.datasources:\n  dataSources:\n    - name: WSO2_METRICS_DB\n"
                            f"      definition:\n        type: RDBMS\n        configuration:\n"
                            f"          jdbcUrl: jdbc:sqlite:{home / 'metrics.db'}\n"),
        eddy_config="  metricsIntervalS: 1\n")
    try:
        process.start()
        yield process
    finally:
        if process.process is not None:
            process.stop()


@pytest.fixture(scope="package")
def dashboard(tmp_path_factory: pytest.TempPathFactory,
              worker: WorkerProcess) -> Iterator[DashboardProcess]:
    process = DashboardProcess(tmp_path_factory.mktemp("dashboard"), worker.home / "metrics.db")
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.fixture(scope="module")
def cluster_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardProcess]:
    """A dashboard of its own, watching no node yet (for the manager and HA views)."""
    home = tmp_path_factory.mktemp("dashboard-alone")
    process = DashboardProcess(home, home / "metrics.db")
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.fixture
def cluster_page(browser: Any, cluster_dashboard: DashboardProcess) -> Iterator[Any]:
    """A page of :func:`cluster_dashboard`, logged in as admin; its context closed after."""
    context = browser.new_context(ignore_https_errors=True, base_url=cluster_dashboard.url,
                                  viewport={"width": 1280, "height": 900})
    context.set_default_timeout(CLUSTER_UI_MS)
    page = context.new_page()
    try:
        page.goto("/login")
        page.get_by_label("User name").fill("admin")
        page.get_by_label("Password").fill("admin")
        page.get_by_role("button", name="Log in").click()
        yield page
    finally:
        context.close()


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="package")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, a screenshot of the browser page (``FAILED-<test>.png``) to see why."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    page = getattr(item, "funcargs", {}).get("page")
    if report.when == "call" and report.failed and page is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(ARTIFACTS / f"FAILED-{item.name}.png"), full_page=True)
        except Exception as error:  # the page may be gone; the failure matters more
            report.sections.append(("screenshot", f"no screenshot: {error}"))
