"""Live mode's timers: without new input, time windows expire, ``output every <time>``
flushes and absent patterns fire on the wall clock, driven by heartbeat rows
(``__tick__``) that ``eddy run`` spools while its input is idle."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pandas as pd

from eddy.engine.operators.runtime_operator import run_batch, runtime_for, to_events
from eddy.engine.spark.row_layout import SEQ, STREAM, TICK_STREAM, TS, input_layout
from eddy.lang import check

APP = """@app:name('Timers')
define stream S (k string, v int);
@info(name='expire')
from S#window.time(1 sec) select k, v insert expired events into Expired;
@info(name='rate')
from S select k, v output last every 1 sec insert into Rated;
@info(name='absent')
from e1=S[v == 1] -> not S[v == 2] for 1 sec select e1.k as k insert into Absent;
"""
LINE = re.compile(r"^(\w+) : Event\{timestamp=(\d+), data=\[(.*)\], isExpired=\w+\}$")


def test_a_heartbeat_fires_the_timers_due_by_its_time() -> None:
    """A tick row (the layout's attribute-less heartbeat stream) reaches the runtime as
    ``advance``: the window expires and the absent pattern fires, caused by the tick's
    ``_seq``."""
    analyzed = check(APP)
    layout = input_layout(analyzed)
    runtime, pristine = runtime_for(APP, [q.id for q in analyzed.queries])
    runtime.restore(pristine)
    columns = layout.columns("S")
    names = [name for name, _ in layout.streams]
    s, tick = names.index("S"), names.index(TICK_STREAM)
    frame = pd.DataFrame({SEQ: [0, 1, 2], TS: [10_000, 10_500, 11_200],
                          STREAM: [s, tick, tick], columns[0]: ["a", None, None],
                          columns[1]: pd.array([1, None, None], "Int32")})
    events = to_events(frame, layout)
    assert [e.stream for e in events] == ["S", TICK_STREAM, TICK_STREAM]
    outputs = run_batch(runtime, events)
    fired = {(o.query, o.seq) for o in outputs if o.seq == 2}
    assert ("expire", 2) in fired and ("absent", 2) in fired
    assert all(o.seq != 1 for o in outputs)  # at 10,500 nothing is due yet


def _lines(stream: IO[str], into: queue.Queue[tuple[float, str]], log: list[str]) -> None:
    for line in stream:
        log.append(line.rstrip("\n"))
        into.put((time.monotonic(), line.rstrip("\n")))


def _next(lines: queue.Queue[tuple[float, str]], deadline: float,
          log: list[str]) -> tuple[float, str]:
    try:
        return lines.get(timeout=max(deadline - time.monotonic(), 0.1))
    except queue.Empty:
        tail = "\n".join(line for line in log if not line.startswith(("\tat ", "in ")))
        raise AssertionError(f"eddy run said nothing more in time:\n{tail[-3000:]}") from None


def test_eddy_run_fires_timers_without_further_input(tmp_path: Path) -> None:
    app = tmp_path / "timers.siddhi"
    app.write_text(APP, encoding="utf-8")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    process = subprocess.Popen(
        [sys.executable, "-m", "eddy.cli", "run", str(app), "--input", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env)
    out: queue.Queue[tuple[float, str]] = queue.Queue()
    err: queue.Queue[tuple[float, str]] = queue.Queue()
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    log: list[str] = []
    threading.Thread(target=_lines, args=(process.stdout, out, log), daemon=True).start()
    threading.Thread(target=_lines, args=(process.stderr, err, log), daemon=True).start()
    try:
        deadline = time.monotonic() + 300
        while "running on Spark" not in _next(err, deadline, log)[1]:
            pass
        sent_at, sent_ms = time.monotonic(), int(time.time() * 1000)
        process.stdin.write(json.dumps({"stream": "S", "data": ["a", 1]}) + "\n")
        process.stdin.flush()  # stdin stays open: no further input, no end of input
        seen: dict[str, tuple[float, int, str]] = {}
        while len(seen) < 3:
            at, line = _next(out, deadline, log)
            match = LINE.match(line)
            assert match, line
            seen.setdefault(match[1], (at - sent_at, int(match[2]), match[3]))
        assert seen["Expired"][2] == "a, 1" and seen["Rated"][2] == "a, 1"
        assert seen["Absent"][2] == "a"
        for stream in ("Expired", "Absent"):  # due a second after the input, not before
            after, timestamp, _ = seen[stream]
            assert after >= 0.9, (stream, after)
            assert timestamp >= sent_ms + 1000 - 50, (stream, timestamp, sent_ms)
        assert seen["Rated"][0] > 0.0  # a rate limiter's flush, not the input's own output
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
