"""Fencing where table and aggregation rows land, with real processes on PostgreSQL and
MariaDB: an old active (``fenced_writer.py``, writing a ``@store`` table row and an
aggregation row per micro-batch with its epoch) is SIGSTOPped past its lease; the successor
takes the lease, raises the fence and writes; the old one is continued: not one row of it
lands after its successor started, and it is told why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fenced_writer import TableRuntime, write_round, writer_aggregation, writer_table
from ha_nodes import unique
from sqlalchemy import Engine

from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.fence import FENCE_ENV, raise_fence
from eddy.store.lease import Lease, LeaseView
from polling import wait_for

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}
TTL_MS = 1000
HOUR_MS = 3_600_000


@pytest.fixture(params=sorted(DATABASES))
def url(request: pytest.FixtureRequest) -> str:
    return jdbc_to_sqlalchemy(DATABASES[request.param])


class Writer:
    """The old active's process and what it printed."""

    def __init__(self, url: str, group: str, table: str, aggregation: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
        env.pop(FENCE_ENV, None)
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "fenced_writer.py"), url, group, table, aggregation,
             str(TTL_MS)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env, start_new_session=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wrote(self) -> int:
        """Rounds written so far; fails at once when the writer died."""
        if self.process.poll() is not None:
            raise AssertionError(f"the writer exited: {self.lines[-20:]}")
        return sum(line.startswith("wrote ") for line in self.lines)

    def signal(self, sig: signal.Signals) -> None:
        os.killpg(self.process.pid, sig)

    def close(self) -> None:
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
            self.process.wait(30)


@pytest.fixture
def names(url: str) -> Iterator[tuple[str, str, str]]:
    group, table, aggregation = unique("g-"), unique("FT_"), unique("FA_")
    yield group, table, aggregation
    engine = connect(url)
    with engine.begin() as conn:
        for name in (table, f"{aggregation}_SECONDS"):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")


def _rows(engine: Engine, url: str, table: str, aggregation: str, writer: str
          ) -> tuple[int, int]:
    table_rows = [r for r in writer_table(url, table).rows() if r[0] == writer]
    aggregated = [r for r in writer_aggregation(engine, aggregation).read("SECONDS", 0, HOUR_MS)
                  if r[3] == (writer,)]
    return len(table_rows), len(aggregated)


def test_a_paused_old_active_lands_no_row_after_its_successor_started(
        url: str, names: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    group, table, aggregation = names
    engine = connect(url)
    old = Writer(url, group, table, aggregation)
    try:
        wait_for(lambda: old.wrote() >= 5, 120, "the old active to write", interval=0.1)
        first = old.lines[0]
        assert first.startswith("epoch "), old.lines
        old_epoch = int(first.split()[1])
        old.signal(signal.SIGSTOP)
        successor = Lease(engine, group, "new", TTL_MS)
        view: LeaseView = wait_for(lambda: (v := successor.tick()).mine and v, 30,
                                   "the successor to take the expired lease", interval=0.1)
        assert view.epoch == old_epoch + 1
        # The paused writer may hold the fence row between its check and its commit: then
        # the successor's raise waits for it, and what it commits comes before the raise.
        raised = threading.Thread(target=raise_fence, args=(engine, group, view.epoch))
        raised.start()
        raised.join(5)
        if raised.is_alive():
            old.signal(signal.SIGCONT)
            raised.join(60)
        assert not raised.is_alive()
        before = _rows(engine, url, table, aggregation, "old")
        assert min(before) >= 5, (before, old.lines)
        monkeypatch.setenv(FENCE_ENV, json.dumps({"group": group, "epoch": view.epoch}))
        write_round(TableRuntime(writer_table(url, table)),
                    writer_aggregation(engine, aggregation), "new", 0)
        old.signal(signal.SIGCONT)
        wait_for(lambda: old.process.poll() is not None, 60, "the old active to be refused")
        assert old.lines[-1].startswith(
            f"fenced: epoch {old_epoch} of HA group '{group}' is stale: epoch {view.epoch} "
            f"has written here since"), old.lines[-5:]
        assert _rows(engine, url, table, aggregation, "old") == before
        assert _rows(engine, url, table, aggregation, "new") == (1, 1)
    finally:
        old.close()
