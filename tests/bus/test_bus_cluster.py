"""The bus contract on a 3-node JetStream cluster with replicated (R3) streams.

A subset of the backend tests — append and read, partitions, idempotent re-appends,
commits, reopening — runs again here on servers this module starts itself
(:mod:`nats_cluster`), with a bus URL that lists all three seed servers. What a replicated
stream changes — reads from the stream leader, retries through elections — is exercised
under a node's loss in ``test_bus_failover.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from bus_samples import BusFactory, readings, readings_spec, serve
from nats_cluster import NatsCluster, shared_nats_cluster
from polling import wait_for
from test_bus_backends import (
    test_a_replayed_batch_lands_where_the_first_one_did,
    test_any_sub_range_reads_exactly_its_events,
    test_commits_are_per_consumer_and_partition,
    test_create_topic_is_idempotent_and_refuses_a_different_definition,
    test_long_ranges_of_small_batches_read_in_order,
    test_reading_past_the_end_is_an_error,
    test_reopening_keeps_topics_events_and_commits,
    test_replaying_a_batch_id_writes_nothing_and_returns_the_first_ranges,
    test_retention_never_removes_committed_positions,
    test_round_robin_spreads_events_evenly,
    test_sequences_grow_without_gaps_per_partition,
)

from eddy.bus import Bus, open_bus
from eddy.bus.nats_bus import NatsBus

__all__ = [  # the backend tests collected again here, on the cluster
    "shared_nats_cluster",
    "test_a_replayed_batch_lands_where_the_first_one_did",
    "test_any_sub_range_reads_exactly_its_events",
    "test_commits_are_per_consumer_and_partition",
    "test_create_topic_is_idempotent_and_refuses_a_different_definition",
    "test_long_ranges_of_small_batches_read_in_order",
    "test_reading_past_the_end_is_an_error",
    "test_reopening_keeps_topics_events_and_commits",
    "test_replaying_a_batch_id_writes_nothing_and_returns_the_first_ranges",
    "test_retention_never_removes_committed_positions",
    "test_round_robin_spreads_events_evenly",
    "test_sequences_grow_without_gaps_per_partition",
]


@pytest.fixture
def buses(shared_nats_cluster: NatsCluster) -> Iterator[BusFactory]:
    """A factory for the test's bus: an app of its own on the cluster, streams R3 (the
    conftest's ``bus`` fixture opens it)."""
    yield from serve(
        BusFactory("nats", shared_nats_cluster.bus_url(f"test-{uuid.uuid4().hex[:12]}")))


def test_the_servers_fsync_every_write(shared_nats_cluster: NatsCluster) -> None:
    for node in shared_nats_cluster.nodes:
        config = (node.monitor("varz") or {})["jetstream"]["config"]
        assert config["sync_always"] is True, node.name


def test_the_stream_and_bucket_have_three_replicas_on_three_nodes(
        shared_nats_cluster: NatsCluster, bus: Bus) -> None:
    assert isinstance(bus, NatsBus)
    bus.create_topic(readings_spec())
    bus.append("Temp", readings(0, 5))
    for node in shared_nats_cluster.nodes:  # each node holds its own copy of the message
        # an acknowledged append is on a quorum (two nodes); the third may apply it later
        wait_for(lambda: (shared_nats_cluster.stream_state(node, bus.names.stream)
                          or {}).get("messages") == 1,
                 10, f"{node.name} to hold the appended message")
    first = shared_nats_cluster.nodes[0]
    wait_for(lambda: (shared_nats_cluster.stream_state(first, bus.names.bucket_stream)
                      or {}).get("messages") == 1,
             10, "the topic's definition in the bucket on the first node")


def test_one_seed_is_enough_to_find_the_others(shared_nats_cluster: NatsCluster,
                                               buses: BusFactory) -> None:
    writer = buses.open()
    writer.create_topic(readings_spec())
    writer.append("Temp", readings(0, 3))
    seed = shared_nats_cluster.nodes[1].url.removeprefix("nats://")
    app = buses.url.partition("app=")[2]
    with open_bus(f"nats://{seed}?app={app}") as reader:
        assert isinstance(reader, NatsBus)
        assert reader.read_table("Temp", 0, 0, 3).column("temp").to_pylist() == [0.0, 1.0, 2.0]
        known = {f"{s.hostname}:{s.port}" for s in reader._nc.servers}
    assert known == set(shared_nats_cluster.servers.split(","))
