"""Incremental aggregations in an RDBMS, in the runtime (no Spark): WSO2's tables and
columns, shards merged on read, a replayed micro-batch that doubles nothing, ``@purge``,
and the sharding settings. Every test runs against SQLite, MariaDB and PostgreSQL, with
aggregation names unique to the run and the tables dropped after."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import inspect, text

from eddy.lang import SiddhiAppError, check
from eddy.runtime.group import Runtime, build_runtime
from eddy.runtime.model import InputEvent
from eddy.store.aggregation_settings import (
    PROPERTIES_ENV,
    AggregationDeploymentError,
    NodeSettings,
    node_settings,
    shard_of,
)
from eddy.store.connect import connect, jdbc_to_sqlalchemy

BACKENDS = {
    "sqlite": None,
    "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test",
    "postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
}
HOUR = 1_496_286_000_000  # 2017-06-01 03:00:00 UTC


def trades(name: str, jdbc_url: str, annotations: str = "") -> str:
    return (
        "define stream TradeStream (symbol string, price double, quantity long, "
        "timestamp long);\n"
        f"@store(type='rdbms', jdbc.url='{jdbc_url}')\n{annotations}"
        f"define aggregation {name}\nfrom TradeStream\n"
        "select symbol, avg(price) as avgPrice, sum(price) as total, min(price) as lo, "
        "max(price) as hi, count() as n, distinctCount(quantity) as kinds, "
        "sum(quantity) as volume\n"
        "group by symbol\naggregate by timestamp every sec ... year;\n")


@pytest.fixture(params=list(BACKENDS))
def jdbc_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    return BACKENDS[request.param] or f"jdbc:sqlite:{tmp_path}/aggregations.db"


@pytest.fixture
def name(jdbc_url: str) -> Iterator[str]:
    """A fresh aggregation name; its tables are dropped after the test."""
    chosen = f"Trades_{uuid.uuid4().hex[:8]}"
    yield chosen
    engine = connect(jdbc_to_sqlalchemy(jdbc_url))
    with engine.begin() as connection:
        for table in inspect(engine).get_table_names():
            if table.lower().startswith(chosen.lower() + "_"):
                quoted = engine.dialect.identifier_preparer.quote(table)
                connection.execute(text(f"DROP TABLE {quoted}"))


def node(app: str, shard: str | None, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A runtime built as a node with ``siddhi.properties`` shardId ``shard``."""
    monkeypatch.setenv(PROPERTIES_ENV, json.dumps({"partitionById": shard is not None,
                                                   "shardId": shard}))
    return build_runtime(check(app))


def feed(runtime: Runtime, events: list[tuple[int, tuple[Any, ...]]], seq: int = 0) -> None:
    """Processes ``(arrival, data)`` events as one micro-batch and ends the batch."""
    runtime.process([InputEvent(seq + i, ts, "TradeStream", data)
                     for i, (ts, data) in enumerate(events)])
    runtime.snapshot()  # the batch end: changed rows are written


def query(runtime: Runtime, text_: str) -> list[tuple[Any, ...]]:
    return sorted(runtime.store_query(text_), key=repr)


def test_tables_carry_wso2_names_columns_and_keys(jdbc_url: str, name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    node(trades(name, jdbc_url), "wso2-sp-1", monkeypatch)
    engine = connect(jdbc_to_sqlalchemy(jdbc_url))
    found = inspect(engine)
    tables = {t for t in found.get_table_names() if t.lower().startswith(name.lower())}
    assert {t.lower() for t in tables} == {f"{name}_{g}".lower() for g in (
        "SECONDS", "MINUTES", "HOURS", "DAYS", "MONTHS", "YEARS")}
    table = f"{name}_SECONDS"
    columns = [c["name"] for c in found.get_columns(table)]
    assert columns == ["AGG_TIMESTAMP", "SHARD_ID", "AGG_EVENT_TIMESTAMP", "symbol",
                       "AGG_SUM_price", "AGG_COUNT", "AGG_MIN_price", "AGG_MAX_price",
                       "AGG_SET_quantity", "AGG_SUM_quantity"]
    assert found.get_pk_constraint(table)["constrained_columns"] == [
        "AGG_TIMESTAMP", "SHARD_ID", "AGG_EVENT_TIMESTAMP", "symbol"]


def test_two_shards_merge_on_read(jdbc_url: str, name: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    app = trades(name, jdbc_url)
    one, two = node(app, "wso2-sp-1", monkeypatch), node(app, "wso2-sp-2", monkeypatch)
    feed(one, [(HOUR + 1000, ("WSO2", 10.0, 1, HOUR + 1000)),
               (HOUR + 2000, ("WSO2", 20.0, 2, HOUR + 600_000))])
    feed(two, [(HOUR + 1500, ("WSO2", 15.0, 2, HOUR + 1500)),
               (HOUR + 2500, ("WSO2", 25.0, 3, HOUR + 1_200_000)),
               (HOUR + 3000, ("IBM", 5.0, 1, HOUR + 1_800_000))])
    per_hour = (f"from {name} within {HOUR}L, {HOUR + 3_600_000}L per 'hours' "
                "select AGG_TIMESTAMP, symbol, total, avgPrice, lo, hi, n, kinds, volume")
    expected = [(HOUR, "IBM", 5.0, 5.0, 5.0, 5.0, 1, 1, 1),
                (HOUR, "WSO2", 70.0, 17.5, 10.0, 25.0, 4, 3, 8)]
    assert query(one, per_hour) == expected
    assert query(two, per_hour) == expected
    # both shards' rows are there, each under its own SHARD_ID
    engine = connect(jdbc_to_sqlalchemy(jdbc_url))
    table = engine.dialect.identifier_preparer.quote(f"{name}_HOURS")
    with engine.connect() as connection:
        shards = connection.execute(text(
            f'SELECT "SHARD_ID", SUM("AGG_COUNT") FROM {table} GROUP BY "SHARD_ID" '
            'ORDER BY "SHARD_ID"'.replace('"', '`' if engine.dialect.name == "mysql" else '"')
        )).all()
    assert [(s, int(c)) for s, c in shards] == [("wso2-sp-1", 2), ("wso2-sp-2", 3)]


def test_a_replayed_batch_doubles_nothing(jdbc_url: str, name: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    app = trades(name, jdbc_url)
    events = [(HOUR + i * 400, ("WSO2" if i % 3 else "IBM", float(i), i % 4, HOUR + i * 700))
              for i in range(60)]
    crashing = node(app, "wso2-sp-1", monkeypatch)
    feed(crashing, events[:20])
    committed = crashing.snapshot()  # what Spark committed after batch 1
    feed(crashing, events[20:45], seq=20)  # rows written, then the node dies uncommitted
    restarted = node(app, "wso2-sp-1", monkeypatch)
    restarted.restore(committed)
    feed(restarted, events[20:45], seq=20)  # Spark replays batch 2
    feed(restarted, events[45:], seq=45)
    whole = build_runtime(check(trades(name + "_mem", jdbc_url).replace(
        f"@store(type='rdbms', jdbc.url='{jdbc_url}')\n", "")))
    whole.process([InputEvent(i, ts, "TradeStream", data) for i, (ts, data) in enumerate(events)])
    for per in ("seconds", "minutes", "hours", "years"):
        select = "select AGG_TIMESTAMP, symbol, total, lo, hi, n, kinds, volume"
        stored = query(restarted, f"from {name} within 0L, 2000000000000L per '{per}' {select}")
        memory = query(whole, f"from {name}_mem within 0L, 2000000000000L per '{per}' {select}")
        assert stored == memory, per
        assert len(stored) > 1


def test_purge_deletes_rows_past_their_retention(jdbc_url: str, name: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    app = trades(name, jdbc_url, "@purge(enable='true', interval='10 sec', "
                                 "@retentionPeriod(sec='120 sec', min='2 hours'))\n")
    runtime = node(app, None, monkeypatch)
    feed(runtime, [(HOUR + 1000, ("A", 1.0, 1, HOUR + 1000)),
                   (HOUR + 4_000_000, ("A", 2.0, 1, HOUR + 4_000_000))])
    aggregation = runtime.aggregations[name]
    now = HOUR + 4_000_000 + 60_000  # seconds keep 120 s, minutes 2 hours
    aggregation.next_purge = now
    assert aggregation.purge_due(now)
    select = "select AGG_TIMESTAMP, total"
    assert query(runtime, f"from {name} within 0L, {now}L per 'seconds' {select}") == \
        [(HOUR + 4_000_000, 2.0)]
    assert len(query(runtime, f"from {name} within 0L, {now}L per 'minutes' {select}")) == 2
    assert not aggregation.purge_due(now + 1000)  # not before the next interval


def test_purge_retentions_below_the_minimum_are_app_errors() -> None:
    app = ("define stream S (k string, v int);\n"
           "@purge(enable='true', interval='5 min', @retentionPeriod(min='100 min'))\n"
           "define aggregation A from S select k, sum(v) as s group by k "
           "aggregate every sec ... hour;\n")
    with pytest.raises(SiddhiAppError) as raised:
        check(app)
    assert (raised.value.line, raised.value.column) == (2, 57)
    assert "MINUTES" in raised.value.message and "minimum is 2 hours" in raised.value.message
    with pytest.raises(SiddhiAppError, match="DAYS granularity cannot be purged"):
        check(app.replace("min='100 min'", "days='400 days'"))
    with pytest.raises(SiddhiAppError, match="use true or false"):
        check(app.replace("enable='true'", "enable='yes'"))
    check(app.replace("min='100 min'", "sec='120 sec', min='2 hours', hours='all'"))


def test_sharding_needs_a_shard_id() -> None:
    definition = check(
        "define stream S (k string, v int);\n@PartitionById\n"
        "define aggregation A from S select k, sum(v) as s group by k "
        "aggregate every sec ... min;\n").streams["A"].definition
    plain = check("define stream S (k string, v int);\n@PartitionById(enable='false')\n"
                  "define aggregation A from S select k, sum(v) as s group by k "
                  "aggregate every sec ... min;\n").streams["A"].definition
    from eddy.lang import ast

    assert isinstance(definition, ast.AggregationDefinition)
    assert isinstance(plain, ast.AggregationDefinition)
    with pytest.raises(AggregationDeploymentError, match="shardId"):
        shard_of(definition, NodeSettings())
    assert shard_of(definition, NodeSettings(shard_id="n1")) == "n1"
    with pytest.raises(AggregationDeploymentError, match="siddhi.properties.partitionById"):
        shard_of(plain.__class__(**{**plain.__dict__, "annotations": ()}),
                 NodeSettings(partition_by_id=True))
    assert shard_of(plain, NodeSettings(partition_by_id=True, shard_id="n1")) is None
    assert node_settings({PROPERTIES_ENV: '{"partitionById": "true", "shardId": "x"}'}) == \
        NodeSettings(True, "x")


def test_a_group_without_its_shard_id_is_not_deployed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compile_group`` calls :func:`worker_environment` in the driver before any batch."""
    from eddy.store.aggregation_settings import DATASOURCES_ENV, worker_environment

    app = check("define stream S (k string, v int);\n@PartitionById(enable='true')\n"
                "define aggregation A from S select k, sum(v) as s group by k "
                "aggregate every sec ... min;\n")
    monkeypatch.delenv(PROPERTIES_ENV, raising=False)
    with pytest.raises(AggregationDeploymentError, match="siddhi.properties.shardId"):
        worker_environment(app, {})
    monkeypatch.setenv(PROPERTIES_ENV, '{"shardId": "wso2-sp-1"}')
    monkeypatch.setenv(DATASOURCES_ENV, "{}")
    environment: dict[str, str] = {}
    worker_environment(app, environment)
    assert json.loads(environment[PROPERTIES_ENV])["shardId"] == "wso2-sp-1"


def test_a_store_may_name_a_datasource(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from eddy.store.aggregation_settings import DATASOURCES_ENV

    monkeypatch.setenv(DATASOURCES_ENV, json.dumps(
        {"AGG_DB": {"jdbcUrl": f"jdbc:sqlite:{tmp_path}/named.db"}}))
    app = trades("Named", "unused").replace(
        "@store(type='rdbms', jdbc.url='unused')", "@store(type='rdbms', datasource='AGG_DB')")
    runtime = node(app, None, monkeypatch)
    feed(runtime, [(HOUR, ("A", 2.0, 1, HOUR))])
    engine = connect(jdbc_to_sqlalchemy(f"jdbc:sqlite:{tmp_path}/named.db"))
    with engine.connect() as connection:
        assert connection.execute(text('SELECT "AGG_COUNT" FROM "Named_YEARS"')).scalar() == 1
