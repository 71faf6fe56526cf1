"""An app's sources and sinks run around its bus topics (no Spark: the tests play the query
by appending to the output topics): sources land on ``<app>.<S>`` and ``<app>.!S``, each
sink publishes its topic from a committed bus position, a restarted host neither loses nor
re-sends, and a JetStream sink drops the batch a crash made it publish again."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import httpx
import nats
import pyarrow as pa
from io_samples import wait_until
from nats.js.api import StreamConfig

from eddy.bus import open_bus, sqlite_url
from eddy.io import IoConfig
from eddy.io.app_connectors import AppConnectors
from eddy.io.sources.http_source import HttpSource
from eddy.lang import check

APP = """
@app:name('Relay')
@OnError(action='STREAM')
@source(type='http', receiver.url='http://127.0.0.1:0/in', @map(type='json'))
define stream In (id long, temp double);

@sink(type='file', file.uri='{out}', @map(type='json'))
define stream Out (id long, temp double);
"""


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line)["event"] for line in path.read_text().splitlines() if line]


def _url(connectors: AppConnectors) -> str:
    (source,) = connectors.sources
    assert isinstance(source, HttpSource)
    return source.url


def test_sources_land_on_app_topics_and_sinks_resume_from_their_position(
        tmp_path: Path, io_config: IoConfig) -> None:
    out = tmp_path / "out.jsonl"
    analyzed = check(APP.format(out=out))
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    try:
        with AppConnectors(analyzed, bus, io_config) as connectors:
            answer = httpx.post(_url(connectors), json=[{"id": 1, "temp": 20.5},
                                                        {"id": 2, "temp": 30.0}])
            assert (answer.status_code, answer.json()) == (200, {"events": 2})
            bad = httpx.post(_url(connectors), json={"id": "x", "temp": 1.0})
            assert bad.status_code == 400
            landed = bus.read_table("Relay.In", 0, 0, bus.end_offsets("Relay.In")[0])
            assert landed.select(["id", "temp"]).to_pylist() == [
                {"id": 1, "temp": 20.5}, {"id": 2, "temp": 30.0}]
            (fault,) = bus.read_table("Relay.!In", 0, 0, 1).to_pylist()
            assert fault["id"] is None and "attribute 'id'" in json.loads(fault["_error"])[
                "message"]
            # The query's part: outputs appended to the sink's topic.
            bus.append("Relay.Out", pa.table({"id": [1, 2], "temp": [20.5, 30.0]}))
            wait_until(lambda: len(_lines(out)) == 2, what="the file sink")
        bus.append("Relay.Out", pa.table({"id": [3], "temp": [-1.0]}))  # while stopped
        with AppConnectors(analyzed, bus, io_config) as connectors:
            wait_until(lambda: len(_lines(out)) == 3, what="the restarted file sink")
            assert connectors.wait_until_published(10)
        assert _lines(out) == [{"id": 1, "temp": 20.5}, {"id": 2, "temp": 30.0},
                               {"id": 3, "temp": -1.0}]  # none twice, none lost
    finally:
        bus.close()


def test_a_request_resent_with_its_idempotency_key_lands_once(
        tmp_path: Path, io_config: IoConfig) -> None:
    analyzed = check(APP.format(out=tmp_path / "out.jsonl"))
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    try:
        with AppConnectors(analyzed, bus, io_config) as connectors:
            body = [{"id": i, "temp": 1.0} for i in range(5)]
            for _ in range(3):
                answer = httpx.post(_url(connectors), json=body,
                                    headers={"Idempotency-Key": "client-1/batch-7"})
                assert (answer.status_code, answer.json()) == (200, {"events": 5})
            other = httpx.post(_url(connectors), json=body[:2],
                               headers={"Idempotency-Key": "client-1/batch-8"})
            assert other.status_code == 200
            assert bus.end_offsets("Relay.In") == [7]
            empty = httpx.post(_url(connectors), json=body, headers={"Idempotency-Key": "k" * 201})
            assert empty.status_code == 400
    finally:
        bus.close()


def test_a_jetstream_sink_drops_what_a_crash_makes_it_publish_again(
        tmp_path: Path, io_config: IoConfig, nats_url: str) -> None:
    name = f"EDDYTEST{uuid.uuid4().hex[:8]}"
    subject = f"eddy.relay.{name}"

    async def target(action: str) -> int:
        client = await nats.connect(nats_url)
        js = client.jetstream()
        try:
            if action == "create":
                await js.add_stream(StreamConfig(name=name, subjects=[subject],
                                                 duplicate_window=600))
            elif action == "count":
                return (await js.stream_info(name)).state.messages
            else:
                await js.delete_stream(name)
            return 0
        finally:
            await client.close()

    analyzed = check(f"""
        @app:name('Relay')
        @sink(type='nats', destination='{subject}', bootstrap.servers='{nats_url}',
              jetstream='true', @map(type='json'))
        define stream Out (id long);
    """)
    asyncio.run(target("create"))
    bus = open_bus(sqlite_url(tmp_path / "bus.db"))
    try:
        connectors = AppConnectors(analyzed, bus, io_config)
        (sinks,) = connectors.sinks.values()
        assert sinks[0].guarantee == "exactly-once"
        with connectors:
            bus.append("Relay.Out", pa.table({"id": list(range(100))}))
            assert connectors.wait_until_published(20)
        assert asyncio.run(target("count")) == 100
        # A crash after publishing but before committing: the position is behind.
        bus.commit("Relay/sink/Out/0", "Relay.Out", 0, 40)
        bus.append("Relay.Out", pa.table({"id": [100, 101]}))
        with AppConnectors(analyzed, bus, io_config) as again:
            assert again.wait_until_published(20)
        assert asyncio.run(target("count")) == 102
    finally:
        bus.close()
        asyncio.run(target("delete"))
