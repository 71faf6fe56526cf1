"""The HTTP source over real HTTP on 127.0.0.1, landing on a real SQLite bus: a 200 means the
events are on the bus, every kind of bad request gets its own answer and reason, and the
server keeps serving after bad input."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest
from io_samples import Landing

from eddy.io import build_sources
from eddy.io.sources.http_source import HttpSource

APP = """
@app:name('Temps')
@source(type='http', receiver.url='http://127.0.0.1:0/temp', @map(type='json'))
define stream TempStream (room int, temp double, sensor string);
"""
JSON = {"Content-Type": "application/json"}


def http_source(landed: Landing) -> HttpSource:
    source = build_sources(landed.analyzed, landed.config)[0]
    assert isinstance(source, HttpSource)
    landed.start(source)
    return source


@pytest.fixture
def temps(landing: Callable[[str], Landing]) -> tuple[Landing, HttpSource]:
    landed = landing(APP)
    return landed, http_source(landed)


def test_200_only_once_the_events_are_on_the_bus(temps: tuple[Landing, HttpSource]) -> None:
    landed, source = temps
    one = httpx.post(source.url, json={"event": {"room": 1, "temp": 20.5, "sensor": "a"}})
    assert (one.status_code, one.json()) == (200, {"events": 1})
    many = httpx.post(source.url, json=[{"room": 2, "temp": 21, "sensor": "b"},
                                        {"event": {"room": 3, "temp": -4.25, "sensor": "c"}}])
    assert (many.status_code, many.json()) == (200, {"events": 2})
    # The answer came after the append: the events are readable from the bus right away.
    assert landed.rows("TempStream") == [
        {"room": 1, "temp": 20.5, "sensor": "a"}, {"room": 2, "temp": 21.0, "sensor": "b"},
        {"room": 3, "temp": -4.25, "sensor": "c"}]


@pytest.mark.parametrize(("body", "headers", "reason"), [
    (b'{"room": 1, "temp": ', JSON, "invalid JSON: "),
    (b'{"room": "one", "temp": 1.0, "sensor": "a"}', JSON,
     "attribute 'room' (int): expected a whole number, got the text \"one\""),
    (b'{"room": 1, "sensor": "a"}', JSON, "attribute 'temp' is missing"),
    (b'{"room": 1, "temp": 1.0, "sensor": "a"}', {"Content-Type": "text/plain"},
     "Content-Type 'text/plain' is not accepted by the json mapper of 'TempStream'; "
     "send application/json"),
], ids=["bad JSON", "wrong type", "missing attribute", "wrong content type"])
def test_400_says_what_is_wrong(temps: tuple[Landing, HttpSource], body: bytes,
                                headers: dict[str, str], reason: str) -> None:
    landed, source = temps
    response = httpx.post(source.url, content=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"].startswith(reason)
    assert landed.rows("TempStream") == []
    # ... and the server keeps serving.
    good = httpx.post(source.url, json={"room": 9, "temp": 1.0, "sensor": "z"})
    assert good.status_code == 200
    assert landed.rows("TempStream") == [{"room": 9, "temp": 1.0, "sensor": "z"}]


def test_a_partly_bad_request_is_refused_whole(temps: tuple[Landing, HttpSource]) -> None:
    landed, source = temps
    response = httpx.post(source.url, json=[{"room": 1, "temp": 1.0, "sensor": "a"},
                                            {"room": 2, "temp": "hot", "sensor": "b"},
                                            {"room": 3, "temp": 3.0}])
    assert response.status_code == 400
    assert response.json() == {
        "error": "2 of 3 events are malformed (event 1: attribute 'temp' (double): expected a "
                 "number, got the text \"hot\"); none was accepted",
        "faults": [{"event": 1, "error": "attribute 'temp' (double): expected a number, got "
                                         "the text \"hot\""},
                   {"event": 2, "error": "attribute 'sensor' is missing"}],
        "rejected": 2}
    assert landed.rows("TempStream") == []
    counters = landed.config.metrics.snapshot()
    assert counters["mapping_errors"]["TempStream"] == 2


def test_413_for_a_body_over_the_limit(landing: Callable[[str], Landing]) -> None:
    landed = landing(APP)
    landed.config = replace(landed.config, http_max_body_bytes=1000)
    source = http_source(landed)
    big = json.dumps([{"room": i, "temp": 1.0, "sensor": "x"} for i in range(100)])
    assert httpx.post(source.url, content=big, headers=JSON).status_code == 413

    def chunked() -> object:  # no Content-Length: the limit applies while reading
        yield big[:600].encode()
        yield big[600:].encode()
    response = httpx.post(source.url, content=chunked(), headers=JSON)  # type: ignore[arg-type]
    assert response.status_code == 413
    assert "larger than 1000 bytes" in response.json()["error"]
    assert httpx.post(source.url, json={"room": 1, "temp": 1.0, "sensor": "x"}
                      ).status_code == 200


def test_request_size_validation_option_lowers_the_limit(
        landing: Callable[[str], Landing]) -> None:
    landed = landing(APP.replace(
        "@map", "request.size.validation.configuration='request.size.validation:true,"
                "request.size.validation.maximum.value:50', @map"))
    source = http_source(landed)
    assert httpx.post(source.url, json={"room": 1, "temp": 1.0, "sensor": "x" * 60}
                      ).status_code == 413


def test_401_without_valid_basic_auth(landing: Callable[[str], Landing]) -> None:
    landed = landing(APP.replace("@map", "basic.auth.enabled='true', @map"))
    landed.config = replace(landed.config,
                            authenticate=lambda user, password: (user, password) == ("admin",
                                                                                     "s3cret"))
    source = http_source(landed)
    event = {"room": 1, "temp": 1.0, "sensor": "x"}
    refused = httpx.post(source.url, json=event)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Basic realm="eddy"'
    assert httpx.post(source.url, json=event, auth=("admin", "wrong")).status_code == 401
    garbage = {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()}
    assert httpx.post(source.url, json=event, headers=garbage).status_code == 401
    assert httpx.post(source.url, json=event, auth=("admin", "s3cret")).status_code == 200
    assert len(landed.rows("TempStream")) == 1


def test_503_with_retry_after_while_the_stream_is_behind(
        landing: Callable[[str], Landing]) -> None:
    landed = landing(APP)
    lag = {"TempStream": 95.0}
    landed.config = replace(landed.config, behind=lambda stream: lag[stream],
                            max_behind_s=30.0)
    source = http_source(landed)
    event = {"room": 1, "temp": 1.0, "sensor": "x"}
    busy = httpx.post(source.url, json=event)
    assert busy.status_code == 503
    assert busy.headers["Retry-After"] == "60"  # capped at IoConfig.max_retry_after_s
    lag["TempStream"] = 32.5
    assert httpx.post(source.url, json=event).headers["Retry-After"] == "3"
    assert landed.rows("TempStream") == []
    lag["TempStream"] = 0.0
    assert httpx.post(source.url, json=event).status_code == 200


def test_503_when_the_bus_cannot_store(temps: tuple[Landing, HttpSource]) -> None:
    landed, source = temps
    landed.bus.close()  # the bus is gone: nothing may be acknowledged
    response = httpx.post(source.url, json={"room": 1, "temp": 1.0, "sensor": "x"})
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert "could not be stored" in response.json()["error"]


def test_sources_share_a_port_on_different_paths(landing: Callable[[str], Landing]) -> None:
    first = landing(APP)
    temp = http_source(first)
    port = temp.port
    second = landing(f"""
        @source(type='http', receiver.url='http://127.0.0.1:{port}/humidity',
                @map(type='csv'))
        define stream Humidity (room int, percent double);
        @source(type='http', receiver.url='http://127.0.0.1:{port}/temp')
        define stream Clash (a int);
    """)
    humidity, clash = build_sources(second.analyzed, first.config)
    assert isinstance(humidity, HttpSource)
    second.start(humidity)
    assert httpx.post(humidity.url, content="1,40.5\n2,41", headers={
        "Content-Type": "text/csv"}).status_code == 200
    assert httpx.post(temp.url, json={"room": 1, "temp": 1.0, "sensor": "x"}).status_code == 200
    assert second.rows("Humidity") == [{"room": 1, "percent": 40.5},
                                       {"room": 2, "percent": 41.0}]
    with pytest.raises(Exception, match="already listens on"):
        clash.start(second.deliver)
    assert httpx.post(f"http://127.0.0.1:{port}/nothing", json={}).status_code == 404
    assert httpx.get(temp.url).status_code == 405
    humidity.stop()
    assert httpx.post(temp.url, json={"room": 2, "temp": 1.0, "sensor": "x"}).status_code == 200


def test_fault_stream_receives_rejected_events(landing: Callable[[str], Landing]) -> None:
    landed = landing("@OnError(action='STREAM')\n" + APP.split("\n", 2)[2])
    source = http_source(landed)
    response = httpx.post(source.url, json=[{"room": 1, "temp": "x", "sensor": "a"}])
    assert response.status_code == 400
    (fault,) = landed.faults("TempStream")
    assert (fault["room"], fault["temp"], fault["sensor"]) == (1, None, "a")
    assert json.loads(fault["_error"]) == {
        "message": "attribute 'temp' (double): expected a number, got the text \"x\"",
        "payload": '{"room": 1, "temp": "x", "sensor": "a"}'}
