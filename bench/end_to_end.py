"""End to end: HTTP → bus → Spark → bus, with the seed's filter app (target: p99 ≤ 250 ms at
half the maximum rate), on the SQLite bus and on NATS JetStream.

``eddy run`` hosts the app (query-3 of ``examples/temperature.siddhi``: ``TempStream[(roomNo
>= 100 and roomNo < 110) and temp > 40]``, here also selecting ``deviceID``) with an HTTP
source, as a user runs it. Client processes POST 1,000-event JSON arrays; every event
passes the filter (rooms 100-109, 41-50 degrees) so each input has one output, and carries
the client's send time (epoch ms) in ``deviceID``. This process follows the output topic on
the bus and stamps each output event when it sees it.

1. **Maximum rate**: ``--clients`` processes POST as fast as they are answered for
   ``--burst-seconds``; events/s = events sent / (time the last of their outputs appeared
   on the bus − start), so the app must process them, not only ingest them. (A short
   burst: a backlog of millions would be read as one micro-batch — the bus reader's
   ``maxRowsPerBatch`` is not applied by Spark here — and exhaust the driver's 1 GB heap.)
2. **Latency at half that rate**: one paced client POSTs at half the measured rate for
   ``--seconds`` (after the burst's backlog is worked off); latency = time the output
   appears on the bus − client send time; p50/p99/max over every event sent in the phase.

Clients answered 503 (the app lags more than its bound) wait ``Retry-After`` and resend.

With ``--real-time SECONDS`` the app runs in Spark's real-time mode (``eddy run
--real-time``: one long-running task reads the bus as events arrive, checkpointing every
SECONDS); run the paced phase longer than that interval to include a checkpoint's pause.

Run: .venv/bin/python bench/end_to_end.py [--bus sqlite|nats] [--seconds 20] [--clients 3]
     [--real-time SECONDS]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from eddy.bus import Bus, open_bus, sqlite_url

SRC = Path(__file__).resolve().parents[1] / "src"
NATS = "nats://127.0.0.1:4222"
BATCH = 1000
APP = """\
@App:name('{app}')

@source(type='http', receiver.url='http://127.0.0.1:{port}/temp', @map(type='json'))
define stream TempStream (deviceID long, roomNo int, temp double);

@info(name = 'query-3')
from TempStream[(roomNo >= 100 and roomNo < 110) and temp > 40]
select roomNo, temp, deviceID
insert into HighTempStream;
"""


def _template() -> str:
    events = [f'{{"event": {{"deviceID": SENT, "roomNo": {100 + i % 10}, '
              f'"temp": {41 + (i % 90) / 10}}}}}' for i in range(BATCH)]
    return "[" + ", ".join(events) + "]"


def _client(url: str, deadline: float, rate: float, sent: Any) -> None:
    """POSTs until ``deadline`` (wall clock); paced at ``rate`` events/s when > 0."""
    template = _template()
    interval = BATCH / rate if rate > 0 else 0.0
    next_at = time.time()
    with httpx.Client(timeout=30) as http:
        while time.time() < deadline:
            if interval:
                pause = next_at - time.time()
                if pause > 0:
                    time.sleep(pause)
                next_at += interval
            body = template.replace("SENT", str(int(time.time() * 1000)))
            answer = http.post(url, content=body, headers={"Content-Type": "application/json"})
            while answer.status_code == 503 and time.time() < deadline:  # the app lags
                time.sleep(float(answer.headers.get("Retry-After", "1")))
                answer = http.post(url, content=body,
                                   headers={"Content-Type": "application/json"})
            if answer.status_code == 503:
                return
            answer.raise_for_status()
            with sent.get_lock():
                sent.value += BATCH


class Follower:
    """Watches the output topic; records when each output event was seen."""

    def __init__(self, bus: Bus, topic: str) -> None:
        self.bus, self.topic = bus, topic
        self.position = bus.end_offsets(topic)[0]
        self.seen: list[tuple[float, np.ndarray]] = []  # (seen at, send times)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            end = self.bus.end_offsets(self.topic)[0]
            if end > self.position:
                table = self.bus.read_table(self.topic, 0, self.position, end)
                now = time.time() * 1000
                self.seen.append((now, table.column("deviceID").to_numpy()))
                self.position = end
            else:
                time.sleep(0.002)

    def count_since(self, start_ms: float, end_ms: float) -> int:
        return sum(len(ids) for at, ids in self.seen if start_ms <= at < end_ms)

    def latencies(self, start_ms: float, end_ms: float) -> np.ndarray:
        """Output seen − send time of the events sent in ``[start_ms, end_ms)`` (a backlog of
        an earlier phase is not counted)."""
        parts = [(at - ids)[(ids >= start_ms) & (ids < end_ms)] for at, ids in self.seen]
        return np.concatenate(parts) if parts else np.array([])

    def drain(self, bus: Bus, topic: str, timeout: float = 300) -> None:
        """Waits until every event on the input ``topic`` has its output (all pass)."""
        target = bus.end_offsets(topic)[0]
        deadline = time.time() + timeout
        while self.position < target and time.time() < deadline:
            time.sleep(0.01)


def _phase(url: str, seconds: float, clients: int, rate: float) -> tuple[float, float, int]:
    sent = multiprocessing.Value("q", 0)
    start = time.time()
    deadline = start + seconds
    procs = [multiprocessing.Process(target=_client, args=(url, deadline, rate / clients, sent))
             for _ in range(clients)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return start * 1000, time.time() * 1000, int(sent.value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bus", choices=("sqlite", "nats"), default="sqlite")
    parser.add_argument("--real-time", type=float, default=None, metavar="SECONDS",
                        help="run the app in real-time mode, checkpointing every SECONDS")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--burst-seconds", type=float, default=5.0,
                        help="how long the clients send as fast as they can")
    args = parser.parse_args()
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = f"E2eBench{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="eddy-e2e-bench-"))
    path = work / f"{app}.siddhi"
    path.write_text(APP.format(app=app, port=port))
    data = work / "data"
    command = [sys.executable, "-m", "eddy.cli", "run", str(path), "--data-dir", str(data)]
    bus_url = sqlite_url(data / "bus" / "bus.db")
    if args.bus == "nats":
        command += ["--bus", NATS]
        bus_url = f"{NATS}?app={app}"
    if args.real_time is not None:
        command += ["--real-time", str(args.real_time)]
    log = open(work / "eddy.stderr", "wb")
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        deadline = time.time() + 300
        while b" running on Spark " not in (work / "eddy.stderr").read_bytes():
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit((work / "eddy.stderr").read_text()[-3000:])
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/temp"
        bus = open_bus(bus_url)
        follower = Follower(bus, f"{app}.HighTempStream")
        # Warm-up: the first micro-batches compile code paths.
        _phase(url, 5, 1, 20_000)
        follower.drain(bus, f"{app}.TempStream")
        first = follower.position
        start, end, sent = _phase(url, args.burst_seconds, args.clients, 0)
        target = first + sent
        waited = time.time() + 300
        while follower.position < target and time.time() < waited:
            time.sleep(0.01)
        last_ms = max(at for at, _ in follower.seen)
        max_rate = (follower.position - first) / ((last_ms - start) / 1000)
        ingest_rate = sent / ((end - start) / 1000)
        half = max(BATCH, max_rate / 2)
        start, end, sent = _phase(url, args.seconds, 1, half)
        follower.drain(bus, f"{app}.TempStream", 60)
        latencies = follower.latencies(start, end)
        follower.stop.set()
        result = {
            "bus": args.bus, "real_time_checkpoint_s": args.real_time,
            "max_ingest_events_per_s": round(ingest_rate),
            "burst_events": target - first, "max_end_to_end_events_per_s": round(max_rate),
            "paced_rate_events_per_s": round(half), "paced_events": sent,
            "outputs_measured": int(latencies.size),
            "p50_ms": float(np.percentile(latencies, 50)) if latencies.size else None,
            "p99_ms": float(np.percentile(latencies, 99)) if latencies.size else None,
            "p99_9_ms": float(np.percentile(latencies, 99.9)) if latencies.size else None,
            "max_ms": float(latencies.max()) if latencies.size else None,
            "load_average": os.getloadavg()[0],
        }
        print(json.dumps(result, indent=2))
        bus.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
