"""The fully distributed deployment with real processes on loopback: two ``eddy manager``
processes sharing the manager database (PostgreSQL; MariaDB too with ``EDDY_HA_LONG=1``)
and three distributed ``eddy worker`` processes (one receiver node), followed as a script:

1. With the two resource workers up but no receiver worker, a parent app POSTed with the
   seed's curl call (``--data-binary``) to the follower (redirected to the leader) waits,
   and says why: none of its children is deployed. Once the receiver joins, all of them are
   placed at once — the receiver child on the receiver worker, the two instances of
   group-2 on different workers — and every worker runs exactly the children placed on it.
   40,000 events sent to the receiver's HTTP source (2,500 per request, each request with
   an ``Idempotency-Key``) come out of the children on the parent's bus topics exactly as
   from a single-node run of the parent app (the per-event runtime over the same input
   events).
2. SIGKILL a resource worker with events in flight (a third of the next 30,000 sent, the
   rest still being sent): within the heartbeat timeout its children run on the other.
3. The killed worker comes back; SIGSTOP the other past ``leaderRetryInterval`` with
   events in flight (the last 30,000, sent the same way): its children move to the
   returning worker, and once continued it has dropped its apps and says why
   (``GET /ha``). The workers share no disk: each moved child continues from its
   checkpoint in the persistence database (``DBPersistenceStore``,
   :mod:`eddy.node.child_state`), and the outputs of all 100,000 events still equal a
   single-node run — none lost, none twice.
4. SIGKILL the leader manager: the other leads within 5 s, still lists the app and its
   children, and undeploys it cleanly from every worker.
"""

from __future__ import annotations

import os
import re
import signal
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from collections import Counter
from typing import Any

import httpx
import pytest
from cluster_nodes import (DATABASES as JDBC, DIST_SEED_APP, LEADER_RETRY_MS, NATS_URL,
                           ClusterNode, manager, unique, worker)
from sqlalchemy import Column, Engine, MetaData, String, Table, func, select

from polling import free_port, wait_for

from eddy.bus import Bus, UnknownTopicError, open_bus
from eddy.engine.run.group_topics import output_events
from eddy.lang import check
from eddy.node.ha_positions import mirror_consumer
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent
from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.fence import FENCES
from eddy.store.manager_state import WORKERS

LONG = os.environ.get("EDDY_HA_LONG") == "1"
DATABASES = ["postgresql", "mariadb"] if LONG else ["postgresql"]
START_S = 120.0
SPARK_START_S = 420.0  # three Spark JVMs starting at once on a loaded 2-core machine
MOVE_S = 30.0  # heartbeat timeout (3 s) plus a deploy on a loaded machine

APP = """\
@App:name('{name}')
@App:description('Seed 000: temperatures over HTTP, split into three execution groups')

@source(type='http', receiver.url='http://127.0.0.1:{port}/temp', @map(type='json'))
define stream TempStream (deviceID long, roomNo int, temp double);

@info(name = 'query-1')
@dist(execGroup='group-1')
from TempStream[temp > 40.0]
select roomNo, temp
insert into HotStream;

@info(name = 'query-3')
@dist(execGroup='group-2', parallel='2')
from TempStream[(roomNo >= 100 and roomNo < 110) and temp > 40.0]
select roomNo, temp
insert into HighTempStream;
"""


class Cluster:
    """Two managers, a receiver worker and two resource workers."""

    def __init__(self, root: Path, database: str) -> None:
        group = unique("mgr")
        self.group, self.database = group, database
        self.bus = f"{NATS_URL}?app={unique('dist')}"
        self.managers = [manager(root, f"m{i}", database, group) for i in (1, 2)]
        self.receiver = worker(root, "w-recv", self.managers, self.bus, receiver=True,
                               database=database)
        self.a = worker(root, "w-a", self.managers, self.bus, database=database)
        self.b = worker(root, "w-b", self.managers, self.bus, database=database)
        self.workers = [self.receiver, self.a, self.b]

    def nodes(self) -> list[ClusterNode]:
        return [*self.managers, *self.workers]

    def leader(self) -> ClusterNode | None:
        found = [m for m in self.managers if m.alive()
                 and (r := m.get("/managers/isActive")) is not None and r.status_code == 200]
        assert len(found) <= 1, "two leading managers"
        return found[0] if found else None

    def children(self, via: ClusterNode, app: str) -> list[dict[str, Any]]:
        found = via.json(f"/managers/siddhi-apps/{app}")
        return found if isinstance(found, list) else []

    def placement(self, via: ClusterNode, app: str) -> dict[str, str | None]:
        return {c["childAppName"]: c["deployedNodeId"] for c in self.children(via, app)}

    @staticmethod
    def running(node: ClusterNode) -> set[str]:
        """The apps a worker is set to run: the files the manager's deploys (through the
        worker API) wrote into its deployment folder. (Its registry follows them in order,
        which waits for Spark to start: minutes on a loaded 2-core machine.)"""
        folder = node.home / "data" / "deployment" / "siddhi-files"
        return {f.stem for f in folder.glob("*.siddhi")}

    def wait_active(self, via: ClusterNode, app: str) -> None:
        """Every child of ``app`` active (running on Spark) on the worker it is placed on."""
        nodes = {w.node_id: w for w in self.workers}

        def active() -> bool:
            for child, node in self.placement(via, app).items():
                status = nodes[node].json(f"/siddhi-apps/{child}/status") if node else None
                if not status or status.get("status") != "active":
                    return False
            return True

        wait_for(active, SPARK_START_S, "every child active on its worker", interval=1)

    def matches(self, via: ClusterNode, app: str, workers: list[ClusterNode]) -> bool:
        """Every child placed on one of ``workers`` and each of them running exactly the
        children placed on it."""
        placement = self.placement(via, app)
        if not placement or not set(placement.values()) <= {w.node_id for w in workers}:
            return False
        for node in workers:
            if self.running(node) != {c for c, n in placement.items() if n == node.node_id}:
                return False
        return True


@pytest.fixture(params=DATABASES)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path, request.param)
    try:
        yield made
    finally:
        for node in made.nodes():
            node.stop()


EVENTS = 100_000
"""Events sent in all, in three phases: before the SIGKILL, around it, around the SIGSTOP."""
PHASES = ((0, 40_000), (40_000, 30_000), (70_000, 30_000))
PER_REQUEST = 2_500
"""Events per HTTP request (about 150 kB of JSON, far below the source's 16 MB limit)."""


def _event(i: int) -> dict[str, Any]:
    return {"event": {"deviceID": i % 7, "roomNo": 100 + (i * 3) % 14,
                      "temp": float(30 + (i * 13) % 21)}}


class Sender:
    """Sends events ``[first, first + count)`` to the receiver child's HTTP source on its own
    thread, ``PER_REQUEST`` per request, each request with its own ``Idempotency-Key`` (a
    resend after a lost answer or a 503 is stored once), so that a worker can be killed or
    paused while events are still being sent; ``accepted`` counts what the source took."""

    def __init__(self, port: int, first: int, count: int) -> None:
        self.port, self.first, self.count = port, first, count
        self.accepted = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with httpx.Client(timeout=60) as client:
                end = self.first + self.count
                for lo in range(self.first, end, PER_REQUEST):
                    hi = min(lo + PER_REQUEST, end)
                    body = [_event(i) for i in range(lo, hi)]
                    key = f"batch-{lo}"

                    def accepted() -> bool:  # 503 + Retry-After: the source is busy or behind
                        answer = client.post(f"http://127.0.0.1:{self.port}/temp", json=body,
                                             headers={"Idempotency-Key": key})
                        assert answer.status_code in (200, 503), answer.text
                        return answer.status_code == 200

                    wait_for(accepted, 120, f"the source to accept events {lo}…", interval=1.0)
                    self.accepted += hi - lo
        except BaseException as error:  # noqa: BLE001 - re-raised by join()
            self.error = error

    def wait_accepted(self, at_least: int) -> None:
        """Until the source took ``at_least`` of the events (the rest still to send)."""
        wait_for(lambda: self.error is not None or self.accepted >= at_least, 300,
                 f"{at_least} events accepted", interval=0.1)
        if self.error is not None:
            raise self.error

    def join(self) -> None:
        """Until every event was accepted; re-raises what failed the sending."""
        self._thread.join(600)
        assert not self._thread.is_alive(), "the sender did not finish within 10 min"
        if self.error is not None:
            raise self.error
        assert self.accepted == self.count


def _send(port: int, first: int, count: int) -> None:
    """Events ``[first, first + count)`` to the receiver child's HTTP source, and waits."""
    Sender(port, first, count).join()


def _topic(bus: Bus, topic: str) -> Counter[tuple[Any, ...]]:
    """How often each event's data occurs on ``topic`` (empty while it does not exist)."""
    try:
        return Counter(tuple(e["data"]) for e in output_events(bus, topic))
    except UnknownTopicError:
        return Counter()


def _stored(bus: Bus, topic: str) -> int:
    """How many events ``topic`` holds (0 while it does not exist)."""
    try:
        return sum(bus.end_offsets(topic)) - sum(bus.start_offsets(topic))
    except UnknownTopicError:
        return 0


def _single_node(app: str, events: list[dict[str, Any]]) -> dict[str, Counter[tuple[Any, ...]]]:
    """The outputs of the parent app run as one group by the per-event runtime (the
    reference engine) over ``events``, per output stream."""
    runtime = build_runtime(check(re.sub(r"@dist\([^)]*\)", "", APP.format(name=app, port=1))))
    inputs = [InputEvent(i, e["timestamp"], "TempStream", tuple(e["data"]))
              for i, e in enumerate(events)]
    expected: dict[str, Counter[tuple[Any, ...]]] = {"HotStream": Counter(),
                                                     "HighTempStream": Counter()}
    for event in runtime.process(inputs):
        if event.target in expected:
            expected[event.target][tuple(event.data)] += 1
    return expected


def _wait_exact(bus_url: str, app: str, inputs: int, timeout_s: float = 180) -> None:
    """The outputs on the parent's topics equal the parent app run as one group (the
    per-event runtime) over the same input events, read back from the input topic: no
    output lost, none twice."""
    with open_bus(bus_url) as bus:
        wait_for(lambda: _stored(bus, f"{app}.TempStream") == inputs, 120,
                 f"{inputs} events on the input topic", interval=0.5)
        events = output_events(bus, f"{app}.TempStream")
        assert len(events) == inputs
        expected = _single_node(app, events)
        assert all(expected.values())
        found: dict[str, Counter[tuple[Any, ...]]] = {}

        def exact() -> bool:
            # Counting first: reading every output is worth it only once the totals match.
            if any(_stored(bus, f"{app}.{s}") != sum(c.values()) for s, c in expected.items()):
                return False
            for stream in expected:
                found[stream] = _topic(bus, f"{app}.{stream}")
            return found == expected

        try:
            wait_for(exact, timeout_s, "the outputs of a single-node run", interval=1.0)
        except AssertionError:
            for stream in expected:
                found[stream] = _topic(bus, f"{app}.{stream}")
            raise AssertionError(
                "; ".join(f"{s}: {sum(found[s].values())} of {sum(expected[s].values())}, "
                          f"missing {sum((expected[s] - found[s]).values())}, extra "
                          f"{sum((found[s] - expected[s]).values())}"
                          for s in expected)) from None


STATE_TABLE = "EDDY_DIST_STATE"  # state.persistence.config.table of cluster_nodes.worker_yaml


def _engine(database: str) -> Engine:
    return connect(jdbc_to_sqlalchemy(JDBC[database]))


def _child_state_rows(database: str, app: str) -> dict[str, int]:
    """How many rows of ``app``'s children the persistence database holds: their mirrored
    checkpoint files, mirror heads and fence rows (:mod:`eddy.node.child_state`)."""
    meta = MetaData()
    found: dict[str, int] = {}
    for suffix in ("_CHILD_FILES", "_CHILD_HEAD"):
        table = Table(f"{STATE_TABLE}{suffix}", meta, Column("app", String(100)))
        with _engine(database).connect() as conn:
            found[suffix] = int(conn.execute(select(func.count()).select_from(table).where(
                table.c.app.like(f"{app}-%"))).scalar_one())
    with _engine(database).connect() as conn:
        found["fence"] = int(conn.execute(select(func.count()).select_from(FENCES).where(
            FENCES.c.group_id.like(f"child/{app}-%"))).scalar_one())
    return found


def _mirror_positions(bus_url: str, app: str, child: str) -> list[int]:
    """The positions protecting ``child``'s mirrored checkpoint from bus retention on the
    parent's input topic (:func:`eddy.node.ha_positions.mirror_consumer`)."""
    topic = f"{app}.TempStream"
    with open_bus(bus_url) as bus:
        found = [bus.committed(mirror_consumer(child), topic, p)
                 for p in range(len(bus.end_offsets(topic)))]
    return [p for p in found if p is not None]


def _stored_passwords(cluster: Cluster) -> dict[str, str | None]:
    """The password column of every worker row the managers keep (never filled)."""
    with _engine(cluster.database).connect() as conn:
        return {r[0]: r[1] for r in conn.execute(select(WORKERS.c.node_id, WORKERS.c.password)
                                                 .where(WORKERS.c.group_id == cluster.group))}


def _post(node: ClusterNode, text: str, managers: list[ClusterNode]) -> httpx.Response:
    """The seed's curl: ``curl -X POST https://…/siddhi-apps -H 'Content-Type: text/plain'
    --data-binary @app.siddhi -u admin:admin --location-trusted``, following a follower's
    redirect to the leader (trusting every manager's certificate)."""
    trust = ssl.create_default_context()
    for each in managers:
        trust.load_verify_locations(cafile=str(each.home / "data" / "security" /
                                               "eddy-worker.crt"))
    with httpx.Client(base_url=f"https://localhost:{node.port}", auth=("admin", "admin"),
                      verify=trust, timeout=60) as client:
        headers = {"Content-Type": "text/plain", "accept": "application/json"}
        response = client.post("/siddhi-apps", content=text.encode(), headers=headers)
        if response.status_code == 307:  # curl --location-trusted: credentials go along
            response = client.post(response.headers["Location"], content=text.encode(),
                                   headers=headers)
        return response


def test_managers_place_move_and_undeploy_child_apps(cluster: Cluster) -> None:
    m1, m2 = cluster.managers
    m1.start()
    m2.start()
    wait_for(cluster.leader, START_S, "a leading manager")
    cluster.a.start()
    cluster.b.start()
    app = unique("DistApp")
    source_port = free_port()
    text = APP.format(name=app, port=source_port)
    follower = next(m for m in cluster.managers if m is not cluster.leader())

    # 1. Posted to the follower: redirected to the leader, stored, waiting for workers.
    response = _post(follower, text, cluster.managers)
    assert response.status_code == 201, response.text
    assert response.headers["Location"] == f"siddhi-apps/{app}"
    assert _post(follower, text, cluster.managers).status_code == 409
    status = wait_for(lambda: (s := follower.json(f"/siddhi-apps/{app}/status")) and
                      "needs a receiver worker" in s.get("message", "") and s,
                      MOVE_S, "the app to wait for a receiver worker")
    assert status["status"] == "inactive"
    waiting = cluster.children(follower, app)
    assert {c["childAppName"] for c in waiting} == {
        f"{app}-passthrough-TempStream-1", f"{app}-group-1-1", f"{app}-group-2-1",
        f"{app}-group-2-2"}
    assert all(c["deployedNodeId"] is None and "receiver" in c["waitingReason"]
               for c in waiting)
    assert all(cluster.running(w) == set() for w in (cluster.a, cluster.b))  # none or all

    cluster.receiver.start()
    wait_for(lambda: cluster.matches(follower, app, cluster.workers), START_S,
             "every child placed and running where it is placed")
    placement = cluster.placement(follower, app)
    assert placement[f"{app}-passthrough-TempStream-1"] == "w-recv"
    assert {placement[f"{app}-group-2-1"], placement[f"{app}-group-2-2"]} == {"w-a", "w-b"}
    assert follower.json(f"/siddhi-apps/{app}/status") == {"status": "active"}
    assert follower.get(f"/managers/siddhi-apps-execution/{app}").text == text
    assert follower.json("/resourceClusterWorkers") == 2
    # The manager database keeps the workers' interfaces, never their passwords.
    assert _stored_passwords(cluster) == {"w-recv": None, "w-a": None, "w-b": None}
    cluster.wait_active(follower, app)  # the children run: the split texts are valid apps
    (first, count), kill_phase, stop_phase = PHASES
    sent = time.monotonic()
    _send(source_port, first, count)
    print(f"{count} events accepted in {time.monotonic() - sent:.1f} s")
    _wait_exact(cluster.bus, app, count)
    print(f"{count} events sent and their outputs exact in {time.monotonic() - sent:.1f} s")

    # 2. A resource worker dies with events in flight: its children move to the other one,
    #    which continues them from their state in the persistence database (no shared disk).
    sender = Sender(source_port, *kill_phase)
    sender.wait_accepted(kill_phase[1] // 3)  # the rest is still to come
    killed = time.monotonic()
    cluster.b.kill()
    wait_for(lambda: cluster.matches(follower, app, [cluster.receiver, cluster.a]), MOVE_S,
             "w-b's children running on w-a")
    print(f"children moved {time.monotonic() - killed:.1f} s after the SIGKILL")
    assert set(cluster.placement(follower, app).values()) == {"w-recv", "w-a"}
    sender.join()

    # 3. w-b returns; w-a is paused past leaderRetryInterval: its children go to w-b.
    cluster.b.start()
    wait_for(lambda: "w-b" in (follower.json(
        "/resourceClusterWorkers/clusteredWorkerNodeDetails") or {}), MOVE_S,
        "w-b to rejoin")
    sender = Sender(source_port, *stop_phase)
    sender.wait_accepted(stop_phase[1] // 3)
    cluster.a.signal(signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        wait_for(lambda: cluster.matches(follower, app, [cluster.receiver, cluster.b]),
                 MOVE_S, "w-a's children running on w-b")
        wait_for(lambda: time.monotonic() - stopped > LEADER_RETRY_MS / 1000 + 1, 10,
                 "the pause to outlast leaderRetryInterval", interval=0.2)
    finally:
        cluster.a.signal(signal.SIGCONT)
    ha = wait_for(lambda: (h := cluster.a.json("/ha")) and "undeployed every app" in
                  h.get("reason", "") and h, MOVE_S, "w-a to say it dropped its apps")
    assert "leaderRetryInterval" in ha["reason"] or "no longer knew" in ha["reason"]
    wait_for(lambda: cluster.matches(follower, app, cluster.workers), MOVE_S,
             "w-a empty, the children on w-recv and w-b")
    # Twice moved, once killed and once paused mid-stream: still each output exactly once.
    sender.join()
    assert sum(count for _, count in PHASES) == EVENTS
    settled = time.monotonic()
    _wait_exact(cluster.bus, app, EVENTS, SPARK_START_S)
    print(f"all {EVENTS} outputs exact {time.monotonic() - settled:.1f} s after the moves")
    # Bus retention keeps what each moved child's mirror resumes from: a position under
    # the child's own name, whichever worker runs it.
    groups = [f"{app}-group-1-1", f"{app}-group-2-1", f"{app}-group-2-2"]
    assert all(_mirror_positions(cluster.bus, app, child) for child in groups)

    # 4. The leader manager dies: the other leads within 5 s and undeploys the app.
    old = cluster.leader()
    assert old is not None
    survivor = next(m for m in cluster.managers if m is not old)
    old.kill()
    died = time.monotonic()
    wait_for(lambda: cluster.leader() is survivor, 5, "the other manager to lead",
             interval=0.1)
    print(f"the other manager led {time.monotonic() - died:.1f} s after the SIGKILL")
    assert app in survivor.json("/siddhi-apps")
    assert set(cluster.placement(survivor, app).values()) == {"w-recv", "w-b"}
    wait_for(lambda: cluster.matches(survivor, app, cluster.workers), MOVE_S,
             "the children where the new leader has them")
    before = _child_state_rows(cluster.database, app)
    # Each child claimed its fence; those running Spark queries (not only the receiver's
    # passthrough) mirrored their checkpoints.
    assert before["fence"] == 4 and before["_CHILD_HEAD"] >= 3 and before["_CHILD_FILES"], \
        before
    with survivor.client() as client:
        assert client.delete(f"/siddhi-apps/{app}").status_code == 200
        assert client.get(f"/siddhi-apps/{app}").status_code == 404
    assert survivor.json("/managers/siddhi-apps") == []
    assert all(cluster.running(w) == set() for w in cluster.workers)
    # The deleted app's children leave nothing in the persistence database.
    wait_for(lambda: _child_state_rows(cluster.database, app) ==
             {"_CHILD_FILES": 0, "_CHILD_HEAD": 0, "fence": 0}, MOVE_S,
             "the children's state and fence rows to be deleted")
    assert not any(_mirror_positions(cluster.bus, app, child) for child in groups)
    stored = _stored_passwords(cluster)  # as rewritten under the new leader
    assert stored and set(stored.values()) == {None}, stored




def test_nothing_is_deployed_below_min_resource_count(tmp_path: Path) -> None:
    """``minResourceCount: 3`` with two resource workers: the app waits, and says why; the
    third worker joins and all three children are placed, one per worker."""
    group = unique("mgr")
    bus = f"{NATS_URL}?app={unique('dist')}"
    lead = manager(tmp_path, "m1", "postgresql", group, min_resource_count=3)
    workers = [worker(tmp_path, f"w{i}", [lead], bus) for i in (1, 2, 3)]
    try:
        lead.start()
        for node in workers[:2]:
            node.start()
        wait_for(lambda: lead.json("/resourceClusterWorkers") == 2, START_S,
                 "two resource workers")
        app = unique("SeedApp")
        assert _post(lead, DIST_SEED_APP.format(name=app, parallel=2), [lead]).status_code == 201
        status = lead.json(f"/siddhi-apps/{app}/status")
        assert status == {"status": "inactive", "message": "waiting for resource workers: "
                                                           "minResourceCount is 3 and 2 are up"}
        assert all(c["deployedNodeId"] is None for c in
                   lead.json(f"/managers/siddhi-apps/{app}"))
        assert all(Cluster.running(w) == set() for w in workers[:2])
        workers[2].start()
        wait_for(lambda: lead.json(f"/siddhi-apps/{app}/status") == {"status": "active"},
                 START_S, "the app to deploy once the third worker joined")
        placement = {c["childAppName"]: c["deployedNodeId"]
                     for c in lead.json(f"/managers/siddhi-apps/{app}")}
        assert sorted(placement.values()) == ["w1", "w2", "w3"]
        for node in workers:
            assert Cluster.running(node) == {c for c, n in placement.items()
                                             if n == node.node_id}
    finally:
        for node in [lead, *workers]:
            node.stop()
