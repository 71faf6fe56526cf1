"""The seed's ``@dist`` app split into child apps that two real worker processes run over
one shared bus, with a resource worker SIGKILLed and its children moved to the other.

``split_app`` gives four children: the receiver (HTTP source → ``TempApp.TempStream``),
group-1 (query-1 and query-2, all of the stream) and the two round-robin instances of
group-2 (query-3). Worker A (the receiver node) runs the receiver and group-1, worker B the
two group-2 instances; both share the SQLite bus file and the persistence location (the
children's checkpoints), as WSO2's workers share their state persistence. Events go in
over HTTP; the outputs on the parent's topics must equal the parent app run as one group
by the per-event runtime on the same input events (read back from the input topic, with
their timestamps). Then worker B is SIGKILLed, the test deploys its two children on worker
A (the manager will do that), sends more events, and the outputs must still be exact: no
event lost, none twice.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from run_process import free_port, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "node"))
from worker_process import WorkerProcess  # type: ignore[import-not-found]  # noqa: E402

from eddy.bus import UnknownTopicError, open_bus  # noqa: E402
from eddy.engine.run.group_topics import output_events  # noqa: E402
from eddy.lang import check  # noqa: E402
from eddy.plan.children import split_app  # noqa: E402
from eddy.runtime.group import build_runtime  # noqa: E402
from eddy.runtime.model import InputEvent  # noqa: E402

SEED = (Path(__file__).parents[1] / "plan" / "explain" / "seed_distributed.siddhi").read_text()
WAIT_S = 420.0


def _app(port: int) -> str:
    """The seed app with an HTTP source on its input stream."""
    return SEED.replace(
        "define stream TempStream",
        f"@source(type='http', receiver.url='http://127.0.0.1:{port}/temps', "
        "@map(type='json'))\ndefine stream TempStream", 1)


RETRIES = 40


class Placement:
    """Which worker runs which child, and redeploying a child that failed because the
    loaded machine kept Spark's Python worker from connecting back (``PUT`` retries a
    faulty app; at most :data:`RETRIES` times in all) — that failure is load, not the app;
    the manager will do the same for a faulty child."""

    def __init__(self) -> None:
        self.children: dict[str, tuple[WorkerProcess, str]] = {}
        self.retries = 0

    def deploy(self, worker: WorkerProcess, name: str, text: str) -> None:
        with worker.client() as client:
            answer = client.post("/siddhi-apps", content=text.encode(),
                                 headers={"Content-Type": "text/plain"})
        assert answer.status_code == 201, answer.text
        self.children[name] = (worker, text)

    def forget(self, worker: WorkerProcess) -> None:
        self.children = {n: wt for n, wt in self.children.items() if wt[0] is not worker}

    def running(self) -> bool:
        """Whether every child is active; retries those that failed from load."""
        active = True
        for name, (worker, text) in self.children.items():
            status = worker.status(name)
            if status["status"] == "faulty":
                assert self.retries < RETRIES and "connect back" in json.dumps(status), \
                    f"{name}: {status}\n{worker.log_tail()}"
                self.retries += 1
                with worker.client() as client:
                    answer = client.put("/siddhi-apps", content=text.encode(),
                                        headers={"Content-Type": "text/plain"})
                assert answer.status_code in (200, 201), answer.text
            active = active and status["status"] == "active"
        return active


def _send(port: int, first: int, count: int) -> None:
    for lo in range(first, first + count, 50):
        body = [{"deviceID": i % 7, "roomNo": 100 + (i * 3) % 14,
                 "temp": float(30 + (i * 13) % 21)} for i in range(lo, min(lo + 50, first + count))]
        answer = httpx.post(f"http://127.0.0.1:{port}/temps", json=body, timeout=60)
        assert answer.status_code == 200, answer.text


def _topic(url: str, topic: str) -> list[dict[str, Any]]:
    with open_bus(url) as bus:
        try:
            return output_events(bus, topic)
        except UnknownTopicError:
            return []


def _reference(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """The parent app as one group, per-event runtime, on the events of the input topic."""
    runtime = build_runtime(check(re.sub(r"@dist\([^)]*\)", "", SEED)))
    events = [InputEvent(i, e["timestamp"], "TempStream", tuple(e["data"]))
              for i, e in enumerate(_topic(url, "TempApp.TempStream"))]
    out: dict[str, list[tuple[Any, ...]]] = {}
    for event in runtime.process(events):
        if event.target is not None:
            out.setdefault(event.target, []).append(tuple(event.data))
    return out


def _wait_exact(url: str, expected: dict[str, list[tuple[Any, ...]]], what: str,
                placement: Placement) -> None:
    def exact() -> bool:
        placement.running()
        alerts = [tuple(e["data"]) for e in _topic(url, "TempApp.AlertStream")]
        high = Counter(tuple(e["data"]) for e in _topic(url, "TempApp.HighTempStream"))
        return alerts == expected["AlertStream"] and \
            high == Counter(expected["HighTempStream"])

    try:
        wait_for(exact, WAIT_S, what, interval=1.0)
    except AssertionError:
        high = Counter(tuple(e["data"]) for e in _topic(url, "TempApp.HighTempStream"))
        want = Counter(expected["HighTempStream"])
        raise AssertionError(f"{what}: missing {want - high}, extra {high - want}") from None


def test_children_on_two_workers_survive_a_killed_worker(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    url = f"sqlite:///{shared / 'bus.db'}"
    persistence = (f"state.persistence:\n  config:\n    location: {shared / 'persistence'}\n")
    port = free_port()
    children = {c.group: c for c in split_app(_app(port), "seed.siddhi") if c.instance == 1}
    group2 = [c for c in split_app(_app(port)) if c.group == "group-2"]
    receiver = children["passthrough-TempStream"]
    assert receiver.receiver and len(group2) == 2
    a = WorkerProcess(tmp_path / "a", persistence, f"  busUrl: {url}\n")
    b = WorkerProcess(tmp_path / "b", persistence, f"  busUrl: {url}\n")
    try:
        a.start()
        b.start()
        placement = Placement()
        for child in (receiver, children["group-1"]):
            placement.deploy(a, child.name, child.text)
        for child in group2:
            placement.deploy(b, child.name, child.text)
        wait_for(placement.running, WAIT_S, "the children to run", interval=0.5)

        _send(port, 0, 400)
        wait_for(lambda: len(_topic(url, "TempApp.TempStream")) == 400, 120, "the inputs")
        _wait_exact(url, _reference(url), "outputs of the first events", placement)

        b.kill()  # the resource worker of group-2 is lost; its children move to worker A
        _send(port, 400, 300)  # meanwhile, events keep coming in
        placement.forget(b)
        for child in group2:
            placement.deploy(a, child.name, child.text)
        wait_for(placement.running, WAIT_S, "the moved children to run", interval=0.5)
        _send(port, 700, 300)
        wait_for(lambda: len(_topic(url, "TempApp.TempStream")) == 1000, 120, "the inputs")
        expected = _reference(url)
        assert expected["HighTempStream"] and expected["AlertStream"]
        _wait_exact(url, expected, "outputs after the move", placement)
    finally:
        for worker in (a, b):
            if worker.process is not None and worker.process.poll() is None:
                worker.stop()
