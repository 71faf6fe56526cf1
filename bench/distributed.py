"""Fully distributed: the seed app (issue 19) on one resource worker against three, and its
query-3 at ``parallel`` 1 against 2, with real ``eddy manager`` / ``eddy worker``
processes on loopback (the manager's database in PostgreSQL, NATS JetStream as the bus).

For each configuration the parent app is POSTed to the manager, the bench waits until
every child runs on the worker it is placed on, then appends events to the parent's input
topic ``<app>.TempStream`` at ``--rate`` ev/s (batches every 100 ms, each event stamped
with the wall-clock time it was appended) and follows the output topics: first for
``--warmup`` seconds, not measured (a new query's first batches start its Python workers),
then, once those outputs are all out, for ``--seconds``:

* **ev/s**: input events / (last output on the bus − first append);
* **end-to-end latency**: for every output, the time the bench saw it on the bus (polling
  every 50 ms) minus the append time of its input event (its ``_ts``); p50 and p99.

The configurations share the processes: one manager and one worker first, then two more
workers join (the app is undeployed and posted again between runs, so each run starts
fresh from new topics).

Usage: ``.venv/bin/python bench/distributed.py [--rate 2000] [--seconds 20] [--warmup 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]

import pyarrow as pa  # noqa: E402
from cluster_nodes import (  # noqa: E402
    DIST_SEED_APP, NATS_URL, ClusterNode, manager, unique, worker)

from polling import wait_for  # noqa: E402

START_S = 600.0


def _post(node: ClusterNode, text: str) -> None:
    with node.client(timeout=120) as client:
        answer = client.post("/siddhi-apps", content=text.encode(),
                             headers={"Content-Type": "text/plain"})
    assert answer.status_code == 201, answer.text


def _active(lead: ClusterNode, workers: list[ClusterNode], app: str) -> bool:
    nodes = {w.node_id: w for w in workers}
    children = lead.json(f"/managers/siddhi-apps/{app}") or []
    if not children:
        return False
    for child in children:
        node = nodes.get(child["deployedNodeId"] or "")
        status = node.json(f"/siddhi-apps/{child['childAppName']}/status") if node else None
        if not status or status.get("status") != "active":
            return False
    return True


def _events(first: int, count: int, now_ms: int) -> pa.Table:
    ids = range(first, first + count)
    return pa.table({"_ts": pa.array([now_ms] * count, pa.int64()),
                     "deviceID": pa.array([i % 7 for i in ids], pa.int64()),
                     "roomNo": pa.array([100 + (i * 3) % 14 for i in ids], pa.int32()),
                     "temp": pa.array([float(30 + (i * 13) % 21) for i in ids], pa.float64())})


def _expected_high(count: int) -> int:
    """How many of the first ``count`` events pass query-3's filter."""
    return sum(1 for i in range(count)
               if 100 <= 100 + (i * 3) % 14 < 110 and 30 + (i * 13) % 21 > 40)


class Follower:
    """Follows the output topics: when each output event was first seen."""

    def __init__(self, bus: Any, topics: list[str]) -> None:
        self.bus, self.topics = bus, topics
        self.read: dict[tuple[str, int], int] = {}
        self.latencies_ms: list[float] = []
        self.counts = dict.fromkeys(topics, 0)
        self.last_ms = 0.0

    @staticmethod
    def positions(bus: Any, topics: list[str]) -> dict[tuple[str, int], int]:
        """Where each output topic ends now."""
        return {(t, p): end for t in topics for p, end in enumerate(bus.end_offsets(t))}

    def poll(self) -> None:
        from eddy.bus import UnknownTopicError

        for topic in self.topics:
            try:
                ends = self.bus.end_offsets(topic)
            except UnknownTopicError:
                continue
            for partition, end in enumerate(ends):
                start = self.read.get((topic, partition))
                if start is None:
                    start = self.bus.start_offsets(topic)[partition]
                if end <= start:
                    continue
                seen_ms = time.time() * 1000
                stamps = self.bus.read_table(topic, partition, start, end).column("_ts")
                self.latencies_ms += [seen_ms - ts for ts in stamps.to_pylist()]
                self.counts[topic] += end - start
                self.read[(topic, partition)] = end
                self.last_ms = seen_ms


def _feed(bus: Any, app: str, follower: Follower, first: int, count: int,
          batch: int) -> int:
    """Appends ``count`` events from event ``first`` on, a batch every 100 ms, following the
    outputs meanwhile; returns the events sent up to its end."""
    sent = first
    next_at = time.monotonic()
    while sent < first + count:
        bus.append(f"{app}.TempStream", _events(sent, batch, int(time.time() * 1000)))
        sent += batch
        next_at += 0.1
        while time.monotonic() < next_at:
            follower.poll()
            time.sleep(0.05)
    return sent


def _drain(follower: Follower, topics: list[str], upto: int, since: int = 0) -> None:
    """Follows until the outputs of events ``since`` … ``upto`` are all on the bus."""
    expected = dict(zip(topics, [upto - since, _expected_high(upto) - _expected_high(since)],
                        strict=True))
    deadline = time.monotonic() + START_S
    while follower.counts != expected:
        assert time.monotonic() < deadline, f"outputs {follower.counts} != {expected}"
        follower.poll()
        time.sleep(0.05)


def run(lead: ClusterNode, workers: list[ClusterNode], bus_url: str, parallel: int,
        rate: int, seconds: float, warmup: float) -> dict[str, Any]:
    from eddy.bus import open_bus

    app = unique("SeedBench")
    _post(lead, DIST_SEED_APP.format(name=app, parallel=parallel))
    started = time.monotonic()
    wait_for(lambda: _active(lead, workers, app), START_S, "every child active", interval=1)
    placed = [(c["childAppName"][len(app) + 1:], c["deployedNodeId"])
              for c in lead.json(f"/managers/siddhi-apps/{app}")]
    print(f"  children active after {time.monotonic() - started:.0f} s: {placed}", flush=True)
    batch = max(1, rate // 10)
    with open_bus(bus_url) as bus:
        topics = [f"{app}.AvgTempStream", f"{app}.HighTempStream"]
        follower = Follower(bus, topics)
        # Warm-up: each new query's first batches start its Python workers; not measured.
        sent = _feed(bus, app, follower, 0, int(rate * warmup) // batch * batch, batch)
        _drain(follower, topics, sent)
        follower = Follower(bus, topics)
        follower.read = dict(Follower.positions(bus, topics))
        first_ms = time.time() * 1000
        total = int(rate * seconds) // batch * batch
        _feed(bus, app, follower, sent, total, batch)
        _drain(follower, topics, sent + total, sent)
    with lead.client(timeout=120) as client:
        assert client.delete(f"/siddhi-apps/{app}").status_code == 200
    latencies = sorted(follower.latencies_ms)
    return {"events": total, "ev_s": total / ((follower.last_ms - first_ms) / 1000),
            "p50_ms": statistics.median(latencies),
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1],
            "outputs": sum(follower.counts.values())}


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000, help="input events per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to measure")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds fed first, at the same rate, and not measured")
    parser.add_argument("--database", default="postgresql", choices=["postgresql", "mariadb"])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="eddy-bench-dist-"))
    bus_url = f"{NATS_URL}?app={unique('bench')}"
    group = unique("mgr")
    lead = manager(root, "m1", args.database, group)
    nodes = [worker(root, f"w{i}", [lead], bus_url, database=args.database)
             for i in (1, 2, 3)]
    rows: list[tuple[str, dict[str, Any], str]] = []
    try:
        lead.start()
        wait_for(lambda: (r := lead.get("/managers/isActive")) is not None
                 and r.status_code == 200, 120, "the manager to lead")
        nodes[0].start()
        wait_for(lambda: lead.json("/resourceClusterWorkers") == 1, 120, "one worker")
        for label, running, parallel in (("1 worker, query-3 parallel 2", 1, 2),
                                         ("3 workers, query-3 parallel 2", 3, 2),
                                         ("3 workers, query-3 parallel 1", 3, 1)):
            if running == 3 and lead.json("/resourceClusterWorkers") == 1:
                for node in nodes[1:]:
                    node.start()
                wait_for(lambda: lead.json("/resourceClusterWorkers") == 3, 120,
                         "three workers")
            print(f"{label} (load average {_loadavg()})", flush=True)
            before = _loadavg()
            result = run(lead, nodes[:running], bus_url, parallel, args.rate, args.seconds,
                         args.warmup)
            rows.append((label, result, f"{before} → {_loadavg()}"))
            print(f"  {result}", flush=True)
    finally:
        for node in [*nodes, lead]:
            node.stop()
    print(f"\n`bench/distributed.py --rate {args.rate} --seconds {args.seconds:g} "
          f"--warmup {args.warmup:g}`, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| configuration | events | ev/s | p50 ms | p99 ms | load average (1/5/15 min) |")
    print("|---|---|---|---|---|---|")
    for label, result, load in rows:
        print(f"| {label} | {result['events']:,} | {result['ev_s']:,.0f} | "
              f"{result['p50_ms']:,.0f} | {result['p99_ms']:,.0f} | {load} |")


if __name__ == "__main__":
    main()
