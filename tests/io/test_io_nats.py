"""The NATS source and sink against the real server: subjects in, queue groups, core and
JetStream publishing, and JetStream dropping a batch published twice."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable

import nats
import pytest
from io_samples import Landing, wait_until
from nats.js.api import StreamConfig

from eddy.io import Event, build_sinks, build_sources
from eddy.io.sinks.nats_sink import NatsSink


def publish(url: str, subject: str, payloads: list[bytes]) -> None:
    async def run() -> None:
        client = await nats.connect(url)
        for payload in payloads:
            await client.publish(subject, payload)
        await client.flush()
        await client.close()
    asyncio.run(run())


def test_source_lands_subject_messages(nats_url: str,
                                       landing: Callable[[str], Landing]) -> None:
    subject = f"eddy.test.{uuid.uuid4().hex[:8]}"
    landed = landing(f"""
        @source(type='nats', destination='{subject}', bootstrap.servers='{nats_url}',
                @map(type='json'))
        define stream Temps (room int, temp double);
    """)
    (source,) = build_sources(landed.analyzed, landed.config)
    landed.start(source)
    publish(nats_url, subject, [b'{"room": 1, "temp": 1.5}',
                                b'[{"room": 2, "temp": 2.5}, {"room": 3, "temp": 3.5}]',
                                b'{"room": "bad"}'])
    wait_until(lambda: len(landed.rows("Temps")) == 3, what="three events on the bus")
    assert [r["room"] for r in landed.rows("Temps")] == [1, 2, 3]
    wait_until(lambda: landed.config.metrics.count("mapping_errors", "Temps") == 1,
               what="the bad message to be counted")


def test_queue_group_members_share_the_messages(nats_url: str,
                                                landing: Callable[[str], Landing]) -> None:
    subject = f"eddy.test.{uuid.uuid4().hex[:8]}"
    landed = landing(f"""
        @source(type='nats', destination='{subject}', bootstrap.servers='{nats_url}',
                queue.group.name='workers')
        @source(type='nats', destination='{subject}', bootstrap.servers='{nats_url}',
                queue.group.name='workers')
        define stream Temps (room int);
    """)
    for source in build_sources(landed.analyzed, landed.config):
        landed.start(source)
    publish(nats_url, subject, [json.dumps({"room": i}).encode() for i in range(200)])
    wait_until(lambda: len(landed.rows("Temps")) == 200, what="200 events on the bus")
    assert sorted(r["room"] for r in landed.rows("Temps")) == list(range(200))  # once each


def test_core_sink_publishes_each_event(nats_url: str,
                                        landing: Callable[[str], Landing]) -> None:
    subject = f"eddy.test.{uuid.uuid4().hex[:8]}"
    landed = landing(f"""
        @sink(type='nats', destination='{subject}', bootstrap.servers='{nats_url}',
              @map(type='json'))
        define stream Alerts (room int, level string);
    """)
    (sink,) = build_sinks(landed.analyzed, landed.config)["Alerts"]
    received: list[bytes] = []

    async def listen() -> None:
        client = await nats.connect(nats_url)
        subscription = await client.subscribe(subject)
        await client.flush()
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: sink.publish([Event(1, (1, "high")), Event(2, (2, "low"))]))
        for _ in range(2):
            received.append((await subscription.next_msg(timeout=5)).data)
        await client.close()
    try:
        asyncio.run(listen())
    finally:
        sink.close()
    assert [json.loads(m) for m in received] == [{"event": {"room": 1, "level": "high"}},
                                                 {"event": {"room": 2, "level": "low"}}]
    assert sink.guarantee == "at-least-once"


def test_jetstream_sink_drops_a_batch_published_again(nats_url: str,
                                                      landing: Callable[[str], Landing]) -> None:
    name = f"EDDYTEST{uuid.uuid4().hex[:8]}"
    subject = f"eddy.js.{name}"

    async def stream(action: str) -> int:
        client = await nats.connect(nats_url)
        js = client.jetstream()
        try:
            if action == "create":
                await js.add_stream(StreamConfig(name=name, subjects=[subject]))
                return 0
            if action == "count":
                return (await js.stream_info(name)).state.messages
            await js.delete_stream(name)
            return 0
        finally:
            await client.close()

    asyncio.run(stream("create"))
    landed = landing(f"""
        @sink(type='nats', destination='{subject}', bootstrap.servers='{nats_url}',
              jetstream='true', @map(type='json'))
        define stream Alerts (room int);
    """)
    (sink,) = build_sinks(landed.analyzed, landed.config)["Alerts"]
    try:
        assert isinstance(sink, NatsSink) and sink.guarantee == "exactly-once"
        events = [Event(i, (i,)) for i in range(50)]
        ids = [f"q1:7:{i}" for i in range(50)]
        sink.publish(events, ids=ids)
        sink.publish(events, ids=ids)  # the replayed batch
        sink.publish(events[:10], ids=[f"q1:8:{i}" for i in range(10)])  # a new batch
        assert asyncio.run(stream("count")) == 60
    finally:
        sink.close()
        asyncio.run(stream("delete"))


def test_an_unreachable_server_fails_start_with_the_reason(
        landing: Callable[[str], Landing]) -> None:
    landed = landing("""
        @source(type='nats', destination='x', bootstrap.servers='nats://127.0.0.1:1')
        define stream S (a int);
    """)
    (source,) = build_sources(landed.analyzed, landed.config)
    with pytest.raises(Exception, match="cannot connect to NATS at nats://127.0.0.1:1"):
        source.start(landed.deliver)
