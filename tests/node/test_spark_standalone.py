"""A worker whose apps run on a Spark standalone cluster: the test starts a master and a
worker with the pyspark package's own ``spark-class`` (1 core, 1 GB, loopback ports), an
``eddy worker`` with ``spark.master: spark://127.0.0.1:<port>`` deploys an app with a
filter and a window, and its outputs equal what the app must emit — computed by the
executor the standalone worker launched (its folder holds the run), not in the driver.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyspark
import pytest
from process_group import stop_group
from worker_process import SRC, WorkerProcess, wait_for

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
START_S = 120.0
APP = """@App:name('Standalone')
define stream Trades (symbol string, price double);
from Trades[price > 10.0]
select symbol, price
insert into Expensive;
from Trades#window.length(3)
select symbol, sum(price) as total
insert into Totals;
"""


class Standalone:
    """A Spark standalone master and one worker, each in its own process group."""

    def __init__(self, home: Path) -> None:
        from polling import free_port

        self.home = home
        self.port, self.ui_port = free_port(), free_port()
        self.work = home / "work"
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
                    "SPARK_HOME": str(SPARK_CLASS.parents[1]), "PYSPARK_PYTHON": sys.executable,
                    "PYTHONPATH": str(SRC), "SPARK_LOG_DIR": str(home / "logs")}

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, args: list[str]) -> None:
        with (self.home / f"{name}.log").open("ab") as log:
            self.processes.append(subprocess.Popen(
                [str(SPARK_CLASS), *args], cwd=self.home, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True))

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.ui_port)])
        from polling import free_port

        self._spawn("worker", ["org.apache.spark.deploy.worker.Worker", self.url,
                               "--host", "127.0.0.1", "--webui-port", str(free_port()),
                               "--cores", "1", "--memory", "1g",
                               "--work-dir", str(self.work)])
        wait_for(lambda: self.state().get("aliveworkers") == 1, START_S,
                 "the standalone worker to register with the master", interval=0.5)

    def state(self) -> dict[str, Any]:
        """The master's JSON status (empty while it does not answer)."""
        for process in self.processes:
            assert process.poll() is None, (self.home / "master.log").read_text()[-3000:]
        try:
            found = httpx.get(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def stop(self) -> None:
        for process in reversed(self.processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            stop_group(process, grace_s=20)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    cluster = Standalone(tmp_path / "spark")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def test_a_worker_runs_its_app_on_a_spark_standalone_cluster(standalone: Standalone,
                                                              tmp_path: Path) -> None:
    # The executor gets 512 MB of the worker's 1 GB and its only core.
    spark = (f"      spark.cores.max: 1\n      spark.executor.memory: 512m\n"
             f"      spark.executorEnv.PYTHONPATH: {SRC}\n    master: {standalone.url}\n")
    worker = WorkerProcess(tmp_path / "eddy", extra_config=spark)
    worker.start()
    try:
        (worker.siddhi_files / "Standalone.siddhi").write_text(APP)
        worker.wait_status("Standalone", "active")
        prices = [float(i % 20) for i in range(30)]
        symbols = [f"S{i}" for i in range(30)]
        worker.append("Standalone.Trades", {"symbol": symbols, "price": prices})
        assert worker.wait_outputs("Standalone.Expensive", 9, timeout=240) == \
            [[s, p] for s, p in zip(symbols, prices, strict=True) if p > 10.0]
        assert worker.wait_outputs("Standalone.Totals", 30, timeout=60) == \
            [[s, sum(prices[max(0, i - 2):i + 1])] for i, s in enumerate(symbols)]
        apps = standalone.state().get("activeapps") or []
        assert [a["name"] for a in apps] == ["eddy-worker-test-worker"], apps
        assert apps[0]["cores"] == 1
        executors = list(standalone.work.glob("app-*/*/stderr"))
        assert any("Running task" in e.read_text(errors="replace") for e in executors), \
            "no task ran on the standalone worker's executor"
    finally:
        worker.stop()
