"""In-memory sources, and what becomes of events that do not fit: ``@OnError(action='LOG')``
logs and counts them, ``STREAM`` lands them on ``!S`` with the reason; never both nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import pytest
from io_samples import Landing

from eddy.io import Event, build_sources
from eddy.io.sources.inmemory_source import InMemorySource


def in_memory(landed: Landing) -> InMemorySource:
    (source,) = build_sources(landed.analyzed, landed.config)
    assert isinstance(source, InMemorySource)
    landed.start(source)
    return source


APP = """
@OnError(action='{action}')
@source(type='inMemory', topic='stock')
define stream Stock (symbol string, price double, volume long);
"""


def test_send_returns_once_rows_are_on_the_bus(landing: Callable[[str], Landing]) -> None:
    landed = landing(APP.format(action="LOG"))
    source = in_memory(landed)
    result = source.send([("IBM", 75.5, 100), {"symbol": "WSO2", "price": 57, "volume": 10},
                          Event(0, ("ORCL", 1.0, 5))], ts=1234)
    assert result.faults == [] and result.events.num_rows == 3
    table = landed.bus.read_table("Stock", 0, 0, 3)
    assert table.column("_ts").to_pylist() == [1234] * 3
    assert landed.rows("Stock")[1] == {"symbol": "WSO2", "price": 57.0, "volume": 10}
    landed.config.broker.publish("stock", ("MSFT", 2.0, 1))  # Siddhi's InMemoryBroker path
    assert len(landed.rows("Stock")) == 4


def test_log_action_logs_and_counts(landing: Callable[[str], Landing],
                                    caplog: pytest.LogCaptureFixture) -> None:
    landed = landing(APP.format(action="LOG"))
    source = in_memory(landed)
    with caplog.at_level(logging.WARNING, logger="eddy.io.on_error"):
        result = source.send([("IBM", "cheap", 1), ("WSO2", 1.0, 2)])
    assert [row["symbol"] for row in landed.rows("Stock")] == ["WSO2"]
    assert landed.faults("Stock") == []
    assert [r.getMessage() for r in caplog.records] == [
        "inMemory source of Stock: rejected event 0 (dropped): attribute 'price' (double): "
        "expected a number, got the text \"cheap\"; payload: ('IBM', 'cheap', 1)"]
    assert landed.config.metrics.count("mapping_errors", "Stock") == 1
    assert result.faults[0].reason.startswith("attribute 'price'")


def test_stream_action_lands_faults_with_their_reason(
        landing: Callable[[str], Landing]) -> None:
    landed = landing(APP.format(action="STREAM"))
    source = in_memory(landed)
    source.send([("IBM", 1.0, 2**70), ("WSO2", 1.0, 2), 42])
    assert [row["symbol"] for row in landed.rows("Stock")] == ["WSO2"]
    overflow, not_a_row = landed.faults("Stock")
    assert (overflow["symbol"], overflow["price"], overflow["volume"]) == ("IBM", 1.0, None)
    assert json.loads(overflow["_error"])["message"] == \
        f"attribute 'volume' (long): {2**70} does not fit long (64-bit)"
    assert (not_a_row["symbol"], json.loads(not_a_row["_error"])) == (None, {
        "message": "expected a row (a tuple, list or mapping), got 42", "payload": "42"})
    assert landed.config.metrics.count("faults_streamed", "Stock") == 2


def test_a_stopped_source_refuses_to_send(landing: Callable[[str], Landing]) -> None:
    landed = landing(APP.format(action="LOG"))
    source = in_memory(landed)
    source.stop()
    with pytest.raises(Exception, match="is not started"):
        source.send([("IBM", 1.0, 1)])
