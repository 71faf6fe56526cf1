"""An active stopped (SIGSTOP) at a random point of its checkpoint pushes, as a real
process: its successor raises the fence and pushes within a few lease times every time.

Before the push sent its file bodies under names of its own ahead of the fence check, a
push stopped half-way through sending a many-row insert kept the fence row locked on
PostgreSQL for as long as the process stayed stopped (about one stop in four here, with
these sizes); the idle-transaction bound cannot end such a session.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.fence import raise_fence
from eddy.store.revisions import CheckpointMirror
from process_group import stop_group

HERE = Path(__file__).parent
SRC = HERE.parent.parent / "src"
DATABASES = {"postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
             "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test"}
LEASE_MS = 2000
STOPS = 8


@pytest.mark.parametrize("database", sorted(DATABASES))
def test_a_push_stopped_anywhere_never_holds_its_successor_off(database: str,
                                                               tmp_path: Path) -> None:
    url = jdbc_to_sqlalchemy(DATABASES[database])
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
    waits: list[float] = []
    for stop in range(STOPS):
        table, group = f"P_{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:10]}"
        pusher = subprocess.Popen(
            [sys.executable, str(HERE / "checkpoint_pusher.py"), url, table, group,
             str(tmp_path / str(stop)), "50000", str(LEASE_MS)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        try:
            assert pusher.stdout is not None
            ready = pusher.stdout.readline()
            assert ready == b"ready\n", ready + pusher.stdout.read()
            time.sleep(rng.uniform(0.1, 1.0))  # somewhere in its pushes
            os.killpg(pusher.pid, signal.SIGSTOP)
            successor = CheckpointMirror(connect(url), table, group, lease_ms=LEASE_MS)
            started = time.monotonic()
            while True:  # a lock wait fails a takeover's tick or a batch: both are retried
                try:
                    raise_fence(successor.engine, group, 2)
                    assert successor.push("app", tmp_path / str(stop), 2, 1) >= 2
                    break
                except OperationalError:
                    assert time.monotonic() - started < 5 * LEASE_MS / 1000, \
                        f"stop {stop}: the successor waited on the stopped push"
                    time.sleep(0.1)
            waits.append(time.monotonic() - started)
        finally:
            stop_group(pusher, grace_s=5)
    assert max(waits) < 5 * LEASE_MS / 1000, waits
