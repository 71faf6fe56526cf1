"""Minimum HA: how long a failover takes, and what HA costs in throughput.

* **Failover time**: a pair of ``eddy worker`` nodes (PostgreSQL for the lease and the
  checkpoints, NATS JetStream on 127.0.0.1:4222 as the bus; ``heartbeatInterval: 1000``,
  ``heartbeatMaxRetry: 2``) runs a filter app fed by a client at a steady rate; the active
  is SIGKILLed at a random moment, the client fails over to the other node, and the time
  from the SIGKILL to the output of the first event the new active acknowledged is
  measured. The killed node is restarted (it becomes the passive) before the next run.
  Median and max over ``--runs``.
* **Throughput**: events/s through the pair's active against a single worker (no HA) on
  the same app in the same run: 1,000-event POSTs for ``--seconds``, outputs counted on the
  bus.

Usage: ``.venv/bin/python bench/ha_failover.py [--runs N] [--seconds 20]``: 3 kills by
default, 10 (the issue's figure) with ``EDDY_HA_LONG=1``.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import os
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "tests" / "ha")]

import httpx  # noqa: E402
import nats  # noqa: E402
from ha_nodes import APP, NATS_URL, HaNode, unique  # noqa: E402

from polling import wait_for  # noqa: E402

START_S = 600.0
LONG = os.environ.get("EDDY_HA_LONG") == "1"


def outputs(bus_url: str, app: str) -> int:
    from eddy.bus import UnknownTopicError, open_bus

    with open_bus(bus_url) as bus:
        try:
            return sum(bus.end_offsets(f"{app}.Out"))
        except UnknownTopicError:
            return 0


class OutputWatch:
    """The ids of the outputs appended since it was made. Reads only those (the whole
    topic grows by ~1,000 events a second, and re-reading it on every poll would add its
    read time to the figure, more with every run)."""

    def __init__(self, bus_url: str, app: str) -> None:
        from eddy.bus import open_bus

        self.topic = f"{app}.Out"
        self.bus = open_bus(bus_url)
        self.next = self.bus.end_offsets(self.topic)
        self.ids: set[int] = set()

    def seen(self, event_id: int) -> bool:
        """Whether the output of event ``event_id`` is on the bus by now."""
        ends = self.bus.end_offsets(self.topic)
        for p, (start, end) in enumerate(zip(self.next, ends)):
            if end > start:
                table = self.bus.read_table(self.topic, p, start, end)
                self.ids.update(int(i) for i in table.column("id").to_pylist())
        self.next = [max(a, b) for a, b in zip(self.next, ends)]
        return event_id in self.ids

    def close(self) -> None:
        self.bus.close()


async def _stream(action: str, name: str, subject: str = "") -> None:
    client = await nats.connect(NATS_URL)
    try:
        js = client.jetstream(timeout=30)
        if action == "create":
            from nats.js.api import StreamConfig

            await js.add_stream(StreamConfig(name=name, subjects=[subject]))
        else:
            await js.delete_stream(name)
    finally:
        await client.close()


@contextmanager
def sink_target(subject: str) -> Iterator[None]:
    """The JetStream stream the app's ``jetstream='true'`` sink publishes into (without
    one, every publish fails and is retried, which the runs would pay for)."""
    name = unique("HABENCH_")
    asyncio.run(_stream("create", name, subject))
    try:
        yield
    finally:
        asyncio.run(_stream("delete", name))


class Feeder(threading.Thread):
    """Posts batches of events to whichever node accepts them; remembers when each batch
    was acknowledged and by which node."""

    def __init__(self, nodes: list[HaNode], batch: int, rate: float) -> None:
        super().__init__(daemon=True)
        self.nodes, self.batch, self.rate = nodes, batch, rate
        self.next_id = 0
        self.acks: list[tuple[float, int, str]] = []  # (time, first id, node)
        self.stop = threading.Event()
        self.target = 0

    def run(self) -> None:
        with httpx.Client(timeout=5) as http:
            started = time.monotonic()
            while not self.stop.is_set():
                node = self.nodes[self.target]
                body = [{"event": {"id": i, "v": 1.0}}
                        for i in range(self.next_id, self.next_id + self.batch)]
                try:
                    response = http.post(f"http://127.0.0.1:{node.source_port}/in", json=body,
                                         headers={"Idempotency-Key": f"b{self.next_id}"})
                    ok = response.status_code == 200
                except httpx.TransportError:
                    ok = False
                if not ok:
                    self.target = 1 - self.target
                    time.sleep(0.05)
                    continue
                self.acks.append((time.monotonic(), self.next_id, node.node_id))
                self.next_id += self.batch
                ahead = self.next_id / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)


def settled(nodes: list[HaNode], app: str) -> HaNode | None:
    """The node running ``app`` when the other holds it passive, else None."""
    states = [n.app_status(app) for n in nodes]
    if sorted(map(str, states)) != ["active", "passive"]:
        return None
    return nodes[states.index("active")]


def failovers(root: Path, runs: int) -> list[float]:
    group, table = unique("g"), unique("P_")
    bus_url = f"{NATS_URL}?app={unique('hab')}"
    nodes = [HaNode(root / n, f"node-{n}", "postgresql", group, table, bus_url)
             for n in ("a", "b")]
    app = unique("HaBench")
    subject = unique("habench.")
    times: list[float] = []
    with sink_target(subject):
        return _failovers(nodes, app, subject, bus_url, runs, times)


def _failovers(nodes: list[HaNode], app: str, subject: str, bus_url: str, runs: int,
               times: list[float]) -> list[float]:
    try:
        nodes[0].start()
        wait_for(lambda: nodes[0].status() == "active", 120, "a active")
        nodes[1].start()
        with nodes[0].client() as client:
            client.post("/siddhi-apps", headers={"Content-Type": "text/plain"},
                        content=APP.format(app=app, subject=subject,
                                           nats=NATS_URL)).raise_for_status()
        # Node a may have lost the lease meanwhile (a loaded machine, its JVM starting).
        wait_for(lambda: any(n.app_status(app) == "active" for n in nodes), START_S,
                 "the app to run")
        feeder = Feeder(nodes, 100, 1000)
        feeder.start()
        rng = random.Random(7)
        for run in range(runs):
            # On a loaded machine the lease may move while the pair settles (a starved
            # keeper steps down): the active is whichever node runs the app once it does.
            active = wait_for(lambda: settled(nodes, app), START_S,
                              "the app active on one node and passive on the other",
                              interval=0.2)
            successor = nodes[1 - nodes.index(active)]
            print(f"run {run + 1}: {active.node_id} active, {successor.node_id} passive",
                  flush=True)
            time.sleep(rng.uniform(2, 6))
            print(f"run {run + 1}: SIGKILL of {active.node_id} at "
                  f"{time.strftime('%H:%M:%S', time.gmtime())} UTC (the nodes' logs say the "
                  f"rest)", flush=True)
            watch = OutputWatch(bus_url, app)  # before the kill: nothing is missed
            try:
                killed_at = time.monotonic()
                active.kill()
                wait_for(lambda: any(a[2] == successor.node_id and a[0] > killed_at
                                     for a in feeder.acks), START_S,
                         "the successor's first ack")
                first = next(a[1] for a in feeder.acks
                             if a[2] == successor.node_id and a[0] > killed_at)
                wait_for(lambda: watch.seen(first), START_S, "the successor's first output",
                         interval=0.05)
                times.append(time.monotonic() - killed_at)
            finally:
                watch.close()
            print(f"run {run + 1}: first output from the new active {times[-1]:.1f} s "
                  f"after SIGKILL", flush=True)
            active.start()
        feeder.stop.set()
    finally:
        for node in nodes:
            node.stop()
    return times


def throughput(root: Path, seconds: float, ha: bool) -> float:
    group, table = unique("g"), unique("P_")
    bus_url = f"{NATS_URL}?app={unique('hab')}"
    node = HaNode(root, "node-t", "postgresql", group, table, bus_url, ha=ha)
    app = unique("HaRate")
    subject = unique("harate.")
    with sink_target(subject):
        return _throughput(node, app, subject, bus_url, seconds, ha)


def _throughput(node: HaNode, app: str, subject: str, bus_url: str, seconds: float,
                ha: bool) -> float:
    try:
        node.start()
        if ha:
            wait_for(lambda: node.status() == "active", 120, "active")
        with node.client() as client:
            client.post("/siddhi-apps", headers={"Content-Type": "text/plain"},
                        content=APP.format(app=app, subject=subject,
                                           nats=NATS_URL)).raise_for_status()
        wait_for(lambda: node.app_status(app) == "active", START_S, "the app to run")
        feeder = Feeder([node, node], 1000, 1e9)
        started = time.monotonic()
        feeder.start()
        time.sleep(seconds)
        feeder.stop.set()
        feeder.join(30)
        sent = feeder.next_id
        wait_for(lambda: outputs(bus_url, app) >= sent, START_S, "every output")
        return sent / (time.monotonic() - started)
    finally:
        node.stop()


def main() -> int:
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>`: where a stuck run waits
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10 if LONG else 3)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--keep", type=Path, default=None,
                        help="run in this folder and keep it (the nodes' logs) afterwards")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ha-bench-") as folder:
        root = Path(folder) if args.keep is None else args.keep
        if args.runs > 0:  # --runs 0: the throughput alone
            times = failovers(root / "pair", args.runs)
            print(f"failover (SIGKILL to first output of the new active): median "
                  f"{statistics.median(times):.1f} s, max {max(times):.1f} s over "
                  f"{len(times)} runs")
        if not args.skip_throughput:
            pair = throughput(root / "ha", args.seconds, ha=True)
            single = throughput(root / "single", args.seconds, ha=False)
            print(f"throughput: HA active {pair:,.0f} ev/s, single worker {single:,.0f} ev/s "
                  f"({pair / single:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
