"""Kill one node of a 3-node JetStream cluster under load: nothing acknowledged is lost.

A writer appends batches without pause, each with a (producer, batch id) so that a resent
batch lands once; a reader follows the topic's end as it grows. Once both are under way the
node that leads the app's stream is SIGKILLed, and the writer's only seed server is that
node, so it loses its connection as well as its stream leader. The writer and the reader
must carry on (a new leader is elected, the client reconnects to a server it learnt from
the cluster), a batch appended again after the kill must come back with its first ranges,
and at the end every acknowledged batch is on the stream exactly once, without gaps, and
is what the reader read. The killed node is then restarted and must catch up. A paused
(SIGSTOPped) node must neither stall a writer nor answer a read while it lags.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pyarrow as pa
from bus_samples import readings, readings_spec
from nats_cluster import NatsCluster, NatsNode, nats_cluster

from eddy.bus import Bus, PartitionRange, open_bus
from eddy.bus.nats_names import NatsNames
from polling import wait_for

__all__ = ["nats_cluster"]

BATCH = 200
PARTITIONS = 2
BATCHES_BEFORE_KILL = 30
BATCHES_AFTER_KILL = 30
WAIT_S = 120.0  # bounds every wait; a loaded 2-core machine elects leaders slowly
TOPIC = "Temp"


class Writer(threading.Thread):
    """Appends batch after batch (batch i holds temps i*BATCH …) until told to stop."""

    def __init__(self, bus: Bus) -> None:
        super().__init__(name="writer", daemon=True)
        self.bus = bus
        self.acked: dict[int, list[PartitionRange]] = {}
        self.acked_at: list[float] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            batch_id = 0
            while not self.stop.is_set():
                self.acked[batch_id] = self.bus.append(
                    TOPIC, readings(batch_id * BATCH, BATCH), producer="writer",
                    batch_id=batch_id)
                self.acked_at.append(time.monotonic())
                batch_id += 1
        except BaseException as error:  # reported by the test
            self.error = error


class Reader(threading.Thread):
    """Follows the topic's end and reads every new event, checking sequences as it goes."""

    def __init__(self, bus: Bus) -> None:
        super().__init__(name="reader", daemon=True)
        self.bus = bus
        self.temps: list[float] = []
        self.positions = [0] * PARTITIONS
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while True:
                finishing = self.stop.is_set()  # read once more after the writer stopped
                ends = self.bus.end_offsets(TOPIC)
                for partition, end in enumerate(ends):
                    self.read(partition, end)
                if finishing:
                    return
        except BaseException as error:  # reported by the test
            self.error = error

    def read(self, partition: int, end: int) -> None:
        start = self.positions[partition]
        if end <= start:
            return
        table = self.bus.read_table(TOPIC, partition, start, end)
        assert table.column("_seq").to_pylist() == list(range(start, end))
        self.temps += table.column("temp").to_pylist()
        self.positions[partition] = end


def test_killing_the_stream_leader_under_load_loses_nothing_acknowledged(
        nats_cluster: NatsCluster) -> None:
    cluster = nats_cluster
    app = f"failover-{uuid.uuid4().hex[:10]}"
    stream = NatsNames(app).stream
    with open_bus(cluster.bus_url(app, timeout="2s")) as setup:
        setup.create_topic(readings_spec(TOPIC, partitions=PARTITIONS))
    leader = cluster.stream_leader(stream)
    # The writer's only seed is the leader: it must find the other servers through it.
    writer_bus = open_bus(
        f"{leader.url}?app={app}&replicas=3&timeout=2s&failover=90s")
    reader_bus = open_bus(cluster.bus_url(app, timeout="2s"))
    writer, reader = Writer(writer_bus), Reader(reader_bus)
    try:
        writer.start()
        reader.start()
        _wait_acked(writer, BATCHES_BEFORE_KILL, "batches before the kill")

        cluster.kill(leader)
        killed = time.monotonic()
        killed_at = len(writer.acked)
        _wait_acked(writer, killed_at + BATCHES_AFTER_KILL, "batches after the kill")
        new_leader = cluster.stream_leader(stream)
        assert new_leader is not leader
        # Appending an acknowledged batch again, through the new leader, writes nothing.
        replay = killed_at - 1
        assert writer_bus.append(TOPIC, readings(replay * BATCH, BATCH), producer="writer",
                                 batch_id=replay) == writer.acked[replay]
    finally:
        writer.stop.set()
        writer.join(WAIT_S)
        reader.stop.set()
        reader.join(WAIT_S)
        writer_bus.close()
        reader_bus.close()
    assert writer.error is None, f"the writer failed: {writer.error!r}"
    assert reader.error is None, f"the reader failed: {reader.error!r}"
    assert not writer.is_alive() and not reader.is_alive()

    resumed = next(t for t in writer.acked_at if t > killed) - killed
    print(f"stream leader {leader.name} killed after {killed_at} batches of {BATCH}; the "
          f"writer's next acknowledgement came {resumed:.1f} s later; "
          f"{len(writer.acked)} batches in all")
    expected = sorted(float(v) for b in writer.acked for v in range(b * BATCH, (b + 1) * BATCH))
    with open_bus(cluster.bus_url(app)) as check:
        stored = _check_batches(check, writer.acked)
        assert sorted(stored) == expected  # every acknowledged event once, nothing else
        assert sorted(reader.temps) == expected  # and the reader saw exactly that

        cluster.start_node(leader)
        wait_for(_caught_up(cluster, leader, stream), WAIT_S,
                 f"{leader.name} to catch up on {stream}", interval=0.2)
        cluster.wait_ready(WAIT_S)
        check.commit("after", TOPIC, 0, 5)  # the bucket works with all three again
        assert check.committed("after", TOPIC, 0) == 5


def test_a_paused_node_neither_stalls_a_writer_nor_serves_a_stale_read(
        nats_cluster: NatsCluster) -> None:
    """A follower of the stream is SIGSTOPped while a writer whose only seed it is appends,
    then resumed while it lags: the writer leaves the silent server within seconds, and a
    reader that reads each batch just acknowledged never gets an answer from the lagging
    replica (single messages come from the stream leader)."""
    cluster = nats_cluster
    app = f"paused-{uuid.uuid4().hex[:10]}"
    with open_bus(cluster.bus_url(app, timeout="2s")) as setup:
        setup.create_topic(readings_spec(TOPIC))
        setup.append(TOPIC, readings(0, BATCH))
    leader = cluster.stream_leader(NatsNames(app).stream)
    follower = next(n for n in cluster.nodes if n is not leader)
    writer = open_bus(f"{follower.url}?app={app}&replicas=3&timeout=2s")
    reader = open_bus(cluster.bus_url(app, timeout="2s"))
    appended = 1
    try:
        for _ in range(3):
            cluster.pause(follower)
            try:
                for _ in range(10):
                    writer.append(TOPIC, readings(appended * BATCH, BATCH))
                    appended += 1
            finally:
                cluster.resume(follower)
            for _ in range(10):  # the follower catches up meanwhile
                (r,) = writer.append(TOPIC, readings(appended * BATCH, BATCH))
                assert reader.read_table(TOPIC, 0, r.first_seq, r.last_seq + 1).column(
                    "temp").to_pylist() == [float(v) for v in range(appended * BATCH,
                                                                     (appended + 1) * BATCH)]
                appended += 1
        assert reader.end_offsets(TOPIC) == [appended * BATCH]
    finally:
        writer.close()
        reader.close()


def test_a_bus_opens_when_one_seed_is_down(nats_cluster: NatsCluster) -> None:
    app = f"seeds-{uuid.uuid4().hex[:10]}"
    nats_cluster.kill(nats_cluster.nodes[0])
    with open_bus(nats_cluster.bus_url(app, timeout="2s")) as bus:
        bus.create_topic(readings_spec(TOPIC))  # R3 with one replica away: a majority acks
        assert bus.append(TOPIC, readings(0, 4)) == [PartitionRange(0, 0, 3)]
        assert bus.read_table(TOPIC, 0, 0, 4).column("temp").to_pylist() == \
            [0.0, 1.0, 2.0, 3.0]


def _wait_acked(writer: Writer, batches: int, what: str) -> None:
    def enough() -> bool:
        if writer.error is not None:
            raise AssertionError(f"the writer failed: {writer.error!r}")
        return len(writer.acked) >= batches

    wait_for(enough, WAIT_S, what, interval=0.05)


def _check_batches(bus: Bus, acked: dict[int, list[PartitionRange]]) -> list[float]:
    """Every partition read whole (gap-free sequences); each acknowledged batch found at the
    ranges its append returned. Returns every stored temp."""
    ends = bus.end_offsets(TOPIC)
    assert bus.start_offsets(TOPIC) == [0] * PARTITIONS
    tables = [bus.read_table(TOPIC, p, 0, ends[p]) for p in range(PARTITIONS)]
    for partition, table in enumerate(tables):
        assert table.column("_seq").to_pylist() == list(range(ends[partition]))
    for batch_id, ranges in acked.items():
        got = [t for r in ranges for t in _temps(tables[r.partition], r)]
        assert sorted(got) == [float(v) for v in range(batch_id * BATCH, (batch_id + 1) * BATCH)]
    return [t for table in tables for t in table.column("temp").to_pylist()]


def _temps(table: pa.Table, r: PartitionRange) -> list[float]:
    temps: list[float] = table.slice(r.first_seq, r.events).column("temp").to_pylist()
    return temps


def _caught_up(cluster: NatsCluster, node: NatsNode, stream: str) -> Callable[[], bool]:
    """Whether ``node``'s replica of ``stream`` holds what the other replicas hold."""
    def check() -> bool:
        mine = cluster.stream_state(node, stream)
        others = [cluster.stream_state(n, stream) for n in cluster.nodes if n is not node]
        return mine is not None and all(
            o is not None and (o["last_seq"], o["messages"]) == (mine["last_seq"],
                                                                 mine["messages"])
            for o in others)

    return check

