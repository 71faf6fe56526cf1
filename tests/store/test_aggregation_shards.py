"""Active-active: real eddy nodes (one process and one SparkSession each) write one
aggregation into the same MariaDB and the same PostgreSQL database under their own
``SHARD_ID``, and any node's retrieval merges the shards. Then a node is SIGKILLed
mid-stream and restarted, and every bucket still equals what one uninterrupted node
computes over all the events.

Each node is ``aggregation_node.py``: its deployment.yaml sets ``siddhi.properties``
(``partitionById: true``, ``shardId``), it reads its own SQLite bus (clients spread events
over the nodes) and answers retrievals on stdin. The app keeps the same aggregation twice,
once per database, with names unique to the run; the tables are dropped after.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import psutil
import pyarrow as pa
import pytest
from sqlalchemy import inspect, text

from eddy.bus import open_bus, sqlite_url
from eddy.lang import check
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent
from eddy.store.connect import connect, jdbc_to_sqlalchemy

DATABASES = {"maria": "jdbc:mysql://root@127.0.0.1:3306/test",
             "postgres": "jdbc:postgresql://root@127.0.0.1:5432/test"}
NODE = Path(__file__).with_name("aggregation_node.py")
HOUR = 1_496_286_000_000  # 2017-06-01 03:00:00 UTC
START_S = 180.0
WAIT_S = 120.0
SELECT = "select AGG_TIMESTAMP, symbol, total, avgPrice, lo, hi, n"


def aggregation(name: str, jdbc_url: str | None) -> str:
    store = f"@store(type='rdbms', jdbc.url='{jdbc_url}')\n" if jdbc_url else ""
    return (f"{store}define aggregation {name}\nfrom TradeStream\n"
            "select symbol, avg(price) as avgPrice, sum(price) as total, min(price) as lo, "
            "max(price) as hi, count() as n\n"
            "group by symbol\naggregate by timestamp every sec ... year;\n")


STREAM = ("define stream TradeStream (symbol string, price double, quantity long, "
          "timestamp long);\n")


class Node:
    """An eddy node process; see ``aggregation_node.py``."""

    def __init__(self, work: Path, shard: str, app: Path) -> None:
        self.work = work
        config = work / f"{shard}.yaml"
        config.write_text(f"siddhi:\n  properties:\n    partitionById: true\n"
                          f"    shardId: {shard}\n")
        self.bus_url = sqlite_url(work / f"{shard}-bus.db")
        self.args = [sys.executable, str(NODE), str(app), str(config), self.bus_url,
                     str(work / f"{shard}-checkpoint")]
        self.log = work / f"{shard}.log"
        self.process: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str] = queue.Queue()

    def start(self) -> Node:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        with self.log.open("a") as log:
            self.process = subprocess.Popen(self.args, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, text=True,
                                            env=env)
        stdout = self.process.stdout
        assert stdout is not None
        threading.Thread(target=self._read, args=(stdout,), daemon=True).start()
        assert self._line(START_S) == "ready", self.log.read_text()[-3000:]
        return self

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self.lines.put(line.strip())

    def _line(self, timeout: float) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"node gave no answer in {timeout} s; log:\n"
                                 f"{self.log.read_text()[-3000:]}") from None

    def ask(self, command: str, timeout: float = WAIT_S) -> Any:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self._line(timeout + 30))

    def send(self, events: list[tuple[int, tuple[Any, ...]]]) -> None:
        """Appends ``(arrival, data)`` events to the node's input topic."""
        names = ["symbol", "price", "quantity", "timestamp"]
        columns: dict[str, list[Any]] = {"_ts": [ts for ts, _ in events]}
        for i, column in enumerate(names):
            columns[column] = [data[i] for _, data in events]
        with open_bus(self.bus_url) as bus:
            bus.append("TradeStream", pa.table(columns))

    def kill(self) -> None:
        """SIGKILL, and its Spark JVM with it (it would outlive the Python driver a while)."""
        assert self.process is not None
        children = psutil.Process(self.process.pid).children(recursive=True)
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        for child in children:
            try:
                child.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(children, timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            assert self.process.stdin is not None
            self.process.stdin.write("exit\n")
            self.process.stdin.flush()
            self.process.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


@pytest.fixture
def names() -> Iterator[dict[str, str]]:
    """An aggregation name per database, unique to the run; tables dropped after."""
    chosen = {db: f"Trade_{db}_{uuid.uuid4().hex[:8]}" for db in DATABASES}
    yield chosen
    for db, name in chosen.items():
        engine = connect(jdbc_to_sqlalchemy(DATABASES[db]))
        with engine.begin() as connection:
            for table in inspect(engine).get_table_names():
                if table.lower().startswith(name.lower() + "_"):
                    quoted = engine.dialect.identifier_preparer.quote(table)
                    connection.execute(text(f"DROP TABLE {quoted}"))


def write_app(work: Path, names: dict[str, str]) -> Path:
    app = work / "trades.siddhi"
    app.write_text(STREAM + "".join(aggregation(names[db], DATABASES[db]) for db in DATABASES))
    return app


def rows(node: Node, name: str, per: str, start: int = 0, end: int = 2_000_000_000_000
         ) -> list[list[Any]]:
    return sorted(node.ask(f"query from {name} within {start}L, {end}L per '{per}' {SELECT}"),
                  key=repr)


def test_two_nodes_write_shards_and_either_reads_the_sum(tmp_path: Path,
                                                         names: dict[str, str]) -> None:
    app = write_app(tmp_path, names)
    one, two = Node(tmp_path, "wso2-sp-1", app), Node(tmp_path, "wso2-sp-2", app)
    try:
        threads = [threading.Thread(target=n.start) for n in (one, two)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert one.process and two.process
        one.send([(HOUR + 600_000 * i, ("WSO2", p, 1, HOUR + 600_000 * i))
                  for i, p in enumerate([5.0, 10.0, 15.0], 1)])
        two.send([(HOUR + 500_000 * i, ("WSO2", p, 1, HOUR + 500_000 * i))
                  for i, p in enumerate([12.0, 13.0, 15.0], 1)])
        assert one.ask(f"idle {WAIT_S}") and two.ask(f"idle {WAIT_S}")
        for node in (one, two):
            for db in DATABASES:
                found = rows(node, names[db], "hours", HOUR, HOUR + 3_600_000)
                assert found == [[HOUR, "WSO2", 70.0, pytest.approx(70.0 / 6), 5.0, 15.0, 6]]
    finally:
        one.stop()
        two.stop()


def test_a_node_killed_mid_stream_resumes_exactly(tmp_path: Path,
                                                  names: dict[str, str]) -> None:
    app = write_app(tmp_path, names)
    events = [(HOUR + 3000 * i, ("WSO2" if i % 3 else "IBM", float(i % 17), i,
                                 HOUR + 3000 * i - (i % 5) * 61_000))  # some arrive late
              for i in range(400)]
    node = Node(tmp_path, "wso2-sp-1", app).start()
    engine = connect(jdbc_to_sqlalchemy(DATABASES["postgres"]))
    years = engine.dialect.identifier_preparer.quote(f"{names['postgres']}_YEARS")

    def processed() -> int:
        """Events in the PostgreSQL YEARS table: written at each micro-batch's end."""
        if not inspect(engine).has_table(f"{names['postgres']}_YEARS"):
            return 0  # created when the first micro-batch builds the aggregation
        with engine.connect() as connection:
            return int(connection.execute(
                text(f'SELECT COALESCE(SUM("AGG_COUNT"), 0) FROM {years}')).scalar_one())

    def wait_until(condition: Any) -> int:
        deadline = time.monotonic() + WAIT_S
        while not condition(count := processed()):
            assert time.monotonic() < deadline, f"{count} events processed"
            time.sleep(0.02)
        return count

    try:
        node.send(events[:150])
        wait_until(lambda n: n == 150)
        node.send(events[150:300])
        # The moment a batch's rows are written, before Spark commits it: SIGKILL.
        wait_until(lambda n: n > 150)
        node.kill()
        node = Node(tmp_path, "wso2-sp-1", app).start()  # same checkpoint and bus
        node.send(events[300:])
        assert node.ask(f"idle {WAIT_S}")
        single = build_runtime(check(STREAM + aggregation("Whole", None)))
        single.process([InputEvent(i, ts, "TradeStream", data)
                        for i, (ts, data) in enumerate(events)])
        for per in ("seconds", "minutes", "hours", "days", "months", "years"):
            expected = sorted(([*row] for row in single.store_query(
                f"from Whole within 0L, 2000000000000L per '{per}' {SELECT}")), key=repr)
            for db in DATABASES:
                assert rows(node, names[db], per) == expected, (db, per)
    finally:
        node.stop()
