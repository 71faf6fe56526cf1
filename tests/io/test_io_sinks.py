"""Sinks: Siddhi's log line, HTTP with retries against a real server that fails twice, files,
in-memory topics, and the three distribution strategies."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from io_samples import Landing

from eddy.bus.routing import partition_for
from eddy.io import Event, IoConfig, PublishError, Sink, build_sinks
from eddy.io.javafmt import java_double, java_float
from eddy.io.sinks.distribution import DistributedSink
from eddy.io.sinks.log_sink import LOGGER
from eddy.lang import check
from eddy.lang.ast import AttrType


def sinks_of(text: str, config: IoConfig, stream: str = "Alerts") -> list[Sink]:
    return list(build_sinks(check(text), config)[stream])


# -- log ---------------------------------------------------------------------------------------

def test_log_sink_writes_siddhi_event_lines(io_config: IoConfig,
                                            caplog: pytest.LogCaptureFixture) -> None:
    (plain,) = sinks_of("""@app:name('Temps')
        @sink(type='log')
        define stream Alerts (room int, temp double, hot bool, note string, f float);""",
                        io_config)
    (prefixed,) = sinks_of("""@app:name('Temps')
        @sink(type='log', prefix='ALERT', priority='WARN')
        define stream Alerts (room int, temp double, hot bool, note string, f float);""",
                           io_config)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        plain.publish([Event(1700000000000, (7, 25.0, True, None, 0.1))])
        prefixed.publish(pa.table({"_ts": [5], "room": [1], "temp": [1e7], "hot": [False],
                                   "note": ["x y"], "f": pa.array([2.5], pa.float32())}))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "Temps : Alerts : Event{timestamp=1700000000000, data=[7, 25.0, true, null, "
                 "0.1], isExpired=false}"),
        ("WARNING", "ALERT : Event{timestamp=5, data=[1, 1.0E7, false, x y, 2.5], "
                    "isExpired=false}")]


def test_java_number_formatting() -> None:
    assert [java_double(v) for v in (1.0, 0.001, 0.0001, 1234567.0, 12345678.9, -2.5e-9)] == \
        ["1.0", "0.001", "1.0E-4", "1234567.0", "1.23456789E7", "-2.5E-9"]
    assert java_float(0.1) == "0.1" and java_float(3.4e38) == "3.4E38"


# -- http ----------------------------------------------------------------------------------------

class FlakyServer(ThreadingHTTPServer):
    """Answers 503 to the first ``failures`` requests, then 200; records what it got."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.requests: list[tuple[int, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/alerts"


class _Handler(BaseHTTPRequestHandler):
    server: FlakyServer

    def do_POST(self) -> None:  # noqa: N802 - the http.server naming
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            failing = self.server.failures > 0
            self.server.failures -= 1
            self.server.requests.append((503 if failing else 200, dict(self.headers), body))
        self.send_response(503 if failing else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[Callable[[int], FlakyServer]]:
    servers: list[FlakyServer] = []

    def start(failures: int) -> FlakyServer:
        server = FlakyServer(failures)
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        servers.append(server)
        return server
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def http_app(url: str, retries: int = 5) -> str:
    return f"""
        @sink(type='http', publisher.url='{url}', headers="'X-Team:ops','X-Env:test'",
              basic.auth.username='bob', basic.auth.password='pw', max.retries='{retries}',
              retry.interval='10', @map(type='json'))
        define stream Alerts (room int, level string);"""


def test_http_sink_retries_until_the_server_recovers(
        io_config: IoConfig, flaky: Callable[[int], FlakyServer]) -> None:
    server = flaky(2)
    (sink,) = sinks_of(http_app(server.url), io_config)
    sink.publish([Event(1, (7, "high"))], ids=["q:1:0"])
    assert [status for status, _, _ in server.requests] == [503, 503, 200]
    _, headers, body = server.requests[-1]
    assert json.loads(body) == {"event": {"room": 7, "level": "high"}}
    assert headers["Content-Type"] == "application/json"
    assert (headers["X-Team"], headers["X-Env"]) == ("ops", "test")
    assert headers["Authorization"] == "Basic Ym9iOnB3"
    assert headers["Idempotency-Key"] == "q:1:0"
    sink.close()


def test_http_sink_gives_up_with_the_reason(io_config: IoConfig,
                                            flaky: Callable[[int], FlakyServer]) -> None:
    server = flaky(10)
    (sink,) = sinks_of(http_app(server.url, retries=2), io_config)
    with pytest.raises(PublishError, match="failed after 3 attempts \\(HTTP 503"):
        sink.publish([Event(1, (7, "high"))])
    assert io_config.metrics.count("publish_errors", "Alerts") == 1
    sink.close()


# -- file and in-memory ----------------------------------------------------------------------------

def test_file_sink_appends_lines(tmp_path: Path, io_config: IoConfig) -> None:
    path = tmp_path / "out" / "alerts.csv"
    (sink,) = sinks_of(f"""
        @sink(type='file', file.uri='file:{path}', @map(type='csv'))
        define stream Alerts (room int, note string);""", io_config)
    sink.publish([Event(1, (1, "a,b")), Event(2, (2, None))])
    sink.publish([Event(3, (3, "c"))])
    assert path.read_text() == '1,"a,b"\n2,\n3,c\n'


def test_in_memory_sink_reaches_subscribers(io_config: IoConfig) -> None:
    (sink,) = sinks_of("""
        @sink(type='inMemory', topic='alerts')
        define stream Alerts (room int, temp double);""", io_config)
    got: list[object] = []
    io_config.broker.subscribe("alerts", got.append)
    sink.publish(pa.table({"_ts": [9], "room": [1], "temp": [2.5]}))
    assert got == [Event(9, (1, 2.5))]


def test_in_memory_sink_feeds_an_in_memory_source(landing: Callable[[str], Landing]) -> None:
    from eddy.io import build_sources

    landed = landing("""
        @source(type='inMemory', topic='readings', @map(type='json'))
        define stream Readings (room int);
        @sink(type='inMemory', topic='readings', @map(type='json'))
        define stream Out (room int);""")
    (source,) = build_sources(landed.analyzed, landed.config)
    landed.start(source)
    (sink,) = build_sinks(landed.analyzed, landed.config)["Out"]
    sink.publish([Event(1, (4,)), Event(2, (5,))])
    assert landed.rows("Readings") == [{"room": 4}, {"room": 5}]


# -- distribution ----------------------------------------------------------------------------------

DISTRIBUTED = """
    @sink(type='inMemory', @map(type='passThrough'),
          @distribution(strategy='{strategy}', partitionKey='symbol',
                        @destination(topic='d0'), @destination(topic='d1'),
                        @destination(topic='d2')))
    define stream Alerts (symbol string, price double);"""


def distributed(io_config: IoConfig, strategy: str) -> tuple[DistributedSink,
                                                             list[list[Any]]]:
    text = DISTRIBUTED.format(strategy=strategy)
    if strategy != "partitioned":
        text = text.replace(", partitionKey='symbol'", "")
    (sink,) = sinks_of(text, io_config)
    assert isinstance(sink, DistributedSink)
    received: list[list[Any]] = [[], [], []]  # Events, as the broker hands them over
    for index, bucket in enumerate(received):
        io_config.broker.subscribe(f"d{index}", bucket.append)
    return sink, received


EVENTS = [Event(i, (symbol, float(i))) for i, symbol in
          enumerate(["IBM", "WSO2", "ORCL", "IBM", "MSFT", "WSO2", "IBM"])]


def test_round_robin_takes_turns(io_config: IoConfig) -> None:
    sink, received = distributed(io_config, "roundRobin")
    sink.publish(EVENTS[:4])
    sink.publish(EVENTS[4:])
    assert [[e.timestamp for e in bucket] for bucket in received] == [
        [0, 3, 6], [1, 4], [2, 5]]


def test_round_robin_with_ids_repeats_its_routing(io_config: IoConfig) -> None:
    sink, received = distributed(io_config, "roundRobin")
    ids = [f"q:4:{i}" for i in range(len(EVENTS))]
    sink.publish(EVENTS, ids=ids)
    first = [list(bucket) for bucket in received]
    for bucket in received:
        bucket.clear()
    sink.publish(EVENTS, ids=ids)  # the same batch again goes the same way
    assert received == first


def test_partitioned_routes_by_java_hash_code(io_config: IoConfig) -> None:
    sink, received = distributed(io_config, "partitioned")
    sink.publish(EVENTS)
    for index, bucket in enumerate(received):
        for event in bucket:
            assert partition_for(event.data[0], AttrType.STRING, 3) == index
    by_symbol = {e.data[0]: i for i, b in enumerate(received) for e in b}
    # "IBM".hashCode() = 73*31^2 + 66*31 + 77 = 72276, and 72276 % 3 = 0; likewise
    # WSO2 2674079 % 3 = 2, ORCL 2434444 % 3 = 1, MSFT 2375924 % 3 = 2.
    assert by_symbol == {"IBM": 0, "WSO2": 2, "ORCL": 1, "MSFT": 2}
    assert sum(len(b) for b in received) == len(EVENTS)


def test_broadcast_sends_everything_everywhere(io_config: IoConfig) -> None:
    sink, received = distributed(io_config, "broadcast")
    sink.publish(EVENTS)
    assert all(bucket == EVENTS for bucket in received)
