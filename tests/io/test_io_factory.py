"""Building sources and sinks from an app's annotations: what is built, what each
guarantees, and every mistake reported with the annotation and its line."""

from __future__ import annotations

import pytest

from eddy.io import IoConfig, build_sinks, build_sources
from eddy.io.sinks.distribution import DistributedSink
from eddy.lang import SiddhiAppError, check

APP = """@app:name('Plant')
@source(type='http', receiver.url='http://0.0.0.0:8006/temp', @map(type='json'))
@source(type='nats', destination='temps', queue.group.name='g')
define stream Temps (room int, temp double);
@source(type='file', file.uri='file:/tmp/x.csv', @map(type='csv'))
@source(type='inMemory', topic='t')
@source(type='kafka', topic.list='a,b', group.id='g', bootstrap.servers='127.0.0.1:9092')
define stream Other (room int);
@sink(type='log')
@sink(type='nats', destination='alerts', jetstream='true')
@sink(type='http', publisher.url='http://127.0.0.1:9/x', @map(type='json',
      @payload('{{room}}')))
@sink(type='file', file.uri='/tmp/alerts.jsonl')
@sink(type='inMemory', topic='alerts',
      @distribution(strategy='partitioned', partitionKey='room',
                    @destination(topic='a0'), @destination(topic='a1')))
define stream Alerts (room int, temp double);
from Temps select * insert into Alerts;
from Other select room, 1.0 as temp insert into Alerts;
"""


def errors(text: str, config: IoConfig | None = None, kind: str = "source") -> list[str]:
    """The messages of the SiddhiAppError building raises, as ``line: message``."""
    build = build_sources if kind == "source" else build_sinks
    with pytest.raises(SiddhiAppError) as caught:
        build(check(text), config or IoConfig())
    return [f"{e.line}: {e.message}" + (f" ({e.hint})" if e.hint else "")
            for e in caught.value.errors]


def test_builds_every_transport_with_its_guarantee() -> None:
    analyzed = check(APP)
    sources = build_sources(analyzed)
    assert [(s.stream, s.type, s.guarantee) for s in sources] == [
        ("Temps", "http", "at-least-once"), ("Temps", "nats", "at-most-once"),
        ("Other", "file", "exactly-once"), ("Other", "inMemory", "at-least-once"),
        ("Other", "kafka", "at-least-once")]
    sinks = build_sinks(analyzed)["Alerts"]
    assert [(s.type, s.guarantee) for s in sinks] == [
        ("log", "at-least-once"), ("nats", "exactly-once"), ("http", "at-least-once"),
        ("file", "at-least-once"), ("inMemory", "at-least-once")]
    assert isinstance(sinks[-1], DistributedSink) and len(sinks[-1].destinations) == 2
    assert [s.type for s in build_sources(analyzed, streams={"Other"})] == \
        ["file", "inMemory", "kafka"]
    for sink in sinks:
        sink.close()


def test_unknown_types_and_options_name_the_annotation_and_line() -> None:
    assert errors("""@app:name('A')
define stream Ok (a int);
@source(type='htp', @map(type='json'))
define stream S (a int);
@source(type='http', receiver.ur='http://0.0.0.0:1/a')
define stream T (a int);
@source(type='http', @map(type='jsn'))
define stream U (a int);""") == [
        "3: @source(type='htp') of stream 'S': unknown source type 'htp' "
        "(known types: file, http, inMemory, kafka, nats)",
        "5: @source(type='http') of stream 'T': unknown option 'receiver.ur' "
        "(did you mean 'receiver.url'?)",
        "7: @map(type='jsn') of stream 'U': unknown mapper type 'jsn' "
        "(known mapper types: csv, json, keyvalue, passThrough, text)"]


@pytest.mark.parametrize(("annotations", "message"), [
    ("@source(@map(type='json'))", "@source of stream 'S' needs type='…'"),
    ("@source(type='nats')", "@source(type='nats') of stream 'S': needs the option "
                             "destination='…'"),
    ("@source(type='file', file.uri='/x', tailing='maybe')",
     "@source(type='file') of stream 'S': tailing must be 'true' or 'false', not 'maybe'"),
    ("@source(type='http', receiver.url='https://0.0.0.0:8443/x')",
     "@source(type='http') of stream 'S': receiver.url 'https://0.0.0.0:8443/x' must be an "
     "http:// URL; eddy does not serve TLS itself (terminate https in a proxy)"),
    ("@source(type='http', @map(type='passThrough'))",
     "@source(type='http') of stream 'S': the passThrough mapper reads Python rows, but a "
     "http source receives bytes"),
    ("@source(type='http', basic.auth.enabled='true')",
     "@source(type='http') of stream 'S': basic.auth.enabled='true', but eddy has no "
     "credentials to check them against"),
    ("@source(type='http', @map(type='json', @payload('x')))",
     "@map(type='json') of stream 'S': unexpected nested @payload"),
    ("@OnError(action='RETRY') @source(type='inMemory', topic='t')",
     "@OnError of stream 'S': action must be 'LOG' or 'STREAM', not 'RETRY'"),
    ("@source(type='kafka', topic.list='t', group.id='g', bootstrap.servers='h:1', "
     "optional.configuration='a:1,broken')",
     "@source(type='kafka') of stream 'S': optional.configuration entry 'broken' is not "
     "key:value"),
])
def test_bad_source_annotations(annotations: str, message: str) -> None:
    (error,) = errors(f"{annotations}\ndefine stream S (a int);")
    assert error.startswith(f"1: {message}")


@pytest.mark.parametrize(("annotation", "message"), [
    ("@sink(type='log', priority='LOUD')",
     "@sink(type='log') of stream 'S': priority must be one of FATAL, ERROR, WARN, INFO, "
     "DEBUG, TRACE, not 'LOUD'"),
    ("@sink(type='http', publisher.url='ftp://x/y')",
     "@sink(type='http') of stream 'S': publisher.url 'ftp://x/y' must be an http:// or "
     "https:// URL"),
    ("@sink(type='http', publisher.url='http://x/y', @map(type='passThrough'))",
     "@sink(type='http') of stream 'S': the passThrough mapper yields Python objects, but a "
     "http sink sends text"),
    ("@sink(type='inMemory', @distribution(strategy='random', @destination(topic='a')))",
     "@distribution of stream 'S': strategy must be one of roundRobin, partitioned, "
     "broadcast, not 'random'"),
    ("@sink(type='inMemory', @distribution(strategy='partitioned', partitionKey='b', "
     "@destination(topic='a')))",
     "@distribution of stream 'S': partitionKey 'b' is not an attribute of 'S' (a)"),
    ("@sink(type='inMemory', @distribution(strategy='broadcast'))",
     "@distribution of stream 'S': needs at least one @destination(…)"),
    ("@sink(type='json', @map(type='json', @payload('{{b}}')))",
     "@sink(type='json') of stream 'S': unknown sink type 'json'"),
])
def test_bad_sink_annotations(annotation: str, message: str) -> None:
    (error,) = errors(f"{annotation}\ndefine stream S (a int);", kind="sink")
    assert error.startswith(f"1: {message}")


def test_transports_only_on_streams() -> None:
    assert errors("@source(type='inMemory', topic='t')\ndefine table T (a int);") == [
        "1: @source is only allowed on a stream definition, not on 'T'"]


def test_every_fault_is_reported_at_once() -> None:
    text = ("@source(type='nats')\ndefine stream A (a int);\n"
            "@source(type='file')\ndefine stream B (a int);")
    with pytest.raises(SiddhiAppError) as caught:
        build_sources(check(text, "plant.siddhi"))
    assert [e.line for e in caught.value.errors] == [1, 3]
    assert caught.value.render().startswith(
        "plant.siddhi:1:0: error: @source(type='nats') of stream 'A': needs the option "
        "destination='…'\n  @source(type='nats')\n  ^^^^")


def test_delivery_streams_are_the_topics_sources_need() -> None:
    from eddy.io import delivery_streams

    analyzed = check("""
        @OnError(action='STREAM') @source(type='inMemory', topic='a')
        define stream A (x int);
        @source(type='inMemory', topic='b')
        define stream B (y string);
        define stream C (z int);""")
    assert {name: [(a.name, a.type.value) for a in attributes]
            for name, attributes in delivery_streams(analyzed).items()} == {
        "A": [("x", "INT")], "!A": [("x", "INT"), ("_error", "OBJECT")], "B": [("y", "STRING")]}
