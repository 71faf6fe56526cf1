"""The SQLite bus's WAL checkpoints: taken beside the writer, bounded when it never pauses."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from eddy.bus import sqlite_checkpoints
from eddy.bus.sqlite_bus import SqliteBus
from eddy.bus.topic import TopicSpec
from eddy.lang.ast import Attribute, AttrType
from polling import wait_for

ROWS = 20_000  # ~320 KB of values an append


def _bus(tmp_path: Path) -> SqliteBus:
    bus = SqliteBus(tmp_path / "bus.db")
    bus.create_topic(TopicSpec("T", (Attribute("v", AttrType.DOUBLE),), partitions=1))
    return bus


def _append(bus: SqliteBus, i: int) -> None:
    bus.append("T", pa.table({"_ts": np.arange(ROWS, dtype=np.int64) + i * ROWS,
                              "v": np.random.default_rng(i).random(ROWS)}))


def _rows(bus: SqliteBus, appends: int) -> int:
    return sum(b.num_rows for b in bus.read("T", 0, 0, appends * ROWS))


def _size(path: Path) -> int:
    return os.path.getsize(path) if path.exists() else 0


def test_the_writers_commits_leave_checkpoints_to_the_thread(tmp_path: Path) -> None:
    bus = _bus(tmp_path)
    try:
        assert bus._connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        before = _size(tmp_path / "bus.db")
        for i in range(5):
            _append(bus, i)
        # Pages reach the database file only through a checkpoint, and only the thread
        # takes one (the writer's automatic checkpoint is off, the WAL below the limit).
        wait_for(lambda: _size(tmp_path / "bus.db") > before + 5 * ROWS * 8, 30,
                 "the appended pages in the database file")
        assert _rows(bus, 5) == 5 * ROWS
        thread = bus._checkpoints._thread
        assert thread is not None and thread.is_alive()
    finally:
        bus.close()
    assert not thread.is_alive()


def test_a_writer_that_never_pauses_keeps_the_wal_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 1024 * 1024
    monkeypatch.setattr(sqlite_checkpoints, "WAL_LIMIT_BYTES", limit)
    bus = _bus(tmp_path)
    bus._checkpoints.close()  # as if the thread never caught up: only the writer's own
    try:
        wal = tmp_path / "bus.db-wal"
        sizes = []
        for i in range(30):  # ~10 MB in all
            _append(bus, i)
            sizes.append(_size(wal))
        assert max(sizes) < limit + 2 * ROWS * 16, sizes
        assert min(sizes) == 0  # truncated by the writer
        assert _rows(bus, 30) == 30 * ROWS  # nothing lost by a truncation
    finally:
        bus.close()
