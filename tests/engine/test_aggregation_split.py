"""An aggregation-only group split by hash bucket of its ``group by`` values writes exactly
the table rows of the same group on one state key (engine/operators/aggregation_step.py).

Both runs go through real Spark from a spool (which supplies each row's stream clock) in
small micro-batches, into separate SQLite files; every row of every granularity table is
compared, values bit for bit. The input has late events (timestamps going back by up to a
minute, so a bucket's own clock would lag the stream's and put rows in other arrival
buckets), an arrival-time aggregation next to an event-time one, and an on-demand query in
the middle, which the one-key plan answers at its place.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from eddy.engine.compile.group_query import compile_group
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.operators.runtime_operator import STORE_ANSWERED
from eddy.engine.spark.row_layout import STORE_STREAM, InputLayout, decode_data, input_layout
from eddy.engine.spark.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang import check

START = 1_496_275_200_000  # 2017-06-01 00:00:00 UTC
QUERY = (f"from ByEventTime within {START}L, {START + 3_600_000}L per 'minutes' "
         "select AGG_TIMESTAMP, symbol, total, n")


def app(db: Path, group_type: str = "string") -> str:
    store = f"@store(type='rdbms', jdbc.url='jdbc:sqlite:{db}')\n"
    return (
        "@app:name('SplitAggregation')\n@app:playback\n"
        f"define stream Trades (symbol {group_type}, price double, volume long, ts long);\n"
        f"{store}define aggregation ByEventTime\nfrom Trades\n"
        "select symbol, avg(price) as avgPrice, sum(volume) as total, max(price) as high, "
        "count() as n\ngroup by symbol\naggregate by ts every sec ... hour;\n"
        f"{store}define aggregation ByArrival\nfrom Trades\n"
        "select symbol, sum(price) as total, min(price) as low\ngroup by symbol\n"
        "aggregate every sec ... min;\n")


def events(n: int) -> list[tuple[int, int, str, list[Any]]]:
    """Trades 50-250 ms apart over 40 symbols, one in six late by up to a minute; the
    on-demand query halfway."""
    rng = random.Random(11)
    clock = START
    rows: list[tuple[int, int, str, list[Any]]] = []
    for seq in range(n):
        if seq == n // 2:
            rows.append((seq, clock, STORE_STREAM, [QUERY]))
            continue
        clock += rng.randint(50, 250)
        ts = clock - rng.randint(1_000, 60_000) if rng.random() < 1 / 6 else clock
        rows.append((seq, ts, "Trades", [f"S{rng.randrange(40)}",
                                         round(rng.uniform(1, 100), 3), rng.randint(1, 9), ts]))
    return rows


def run(spark: SparkSession, text: str, layout: InputLayout, spool: Path, work: Path,
        on_demand: bool) -> list[Any]:
    source = (spark.readStream.format(FORMAT).schema(layout.spark_schema(clock=True))
              .option("path", str(spool)).option("maxRowsPerBatch", "100").load())
    rows: list[Any] = []

    def collect(frame: DataFrame, batch_id: int) -> None:
        rows.extend(frame.collect())

    query = (compile_group(text, source, layout, on_demand=on_demand).writeStream
             .foreachBatch(collect).option("checkpointLocation", str(work))
             .queryName(f"split-{on_demand}-{id(rows)}").start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return rows


def tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(db) as connection:
        names = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        found = {}
        for name in names:
            width = len(connection.execute(f'SELECT * FROM "{name}" LIMIT 0').description)
            order = ", ".join(str(i) for i in range(1, width + 1))
            found[name] = connection.execute(f'SELECT * FROM "{name}" ORDER BY {order}').fetchall()
    return found


def test_split_by_group_writes_the_rows_of_one_key(spark: SparkSession, tmp_path: Path) -> None:
    register_sources(spark)
    layout = input_layout(check(app(tmp_path / "x.db")))
    spool = tmp_path / "spool"
    spool.mkdir()
    append_chunk(spool, layout.to_arrow(events(400)))
    split_db, one_db = tmp_path / "split.db", tmp_path / "one.db"

    assert _splits(check(app(split_db)), layout, clock=True, on_demand=False)

    run(spark, app(split_db), layout, spool, tmp_path / "ck-split", on_demand=False)
    outputs = run(spark, app(one_db), layout, spool, tmp_path / "ck-one", on_demand=True)

    answered = [r for r in outputs if r["_query"] == STORE_STREAM]
    assert answered[-1]["_target"] == STORE_ANSWERED and len(answered) > 1
    assert all(decode_data(r["_data"])[3] > 0 for r in answered[:-1])  # counts, at its place

    split, one = tables(split_db), tables(one_db)
    assert sorted(split) == sorted(one)
    assert {"ByEventTime_SECONDS", "ByEventTime_HOURS", "ByArrival_MINUTES"} <= set(one)
    for name, rows in one.items():
        assert rows, name
        assert split[name] == rows, name
    late = one["ByEventTime_SECONDS"]  # late events: event buckets before their arrival
    assert any(row[1] < row[0] for row in late)


def _splits(analyzed: Any, layout: InputLayout, *, clock: bool, on_demand: bool) -> bool:
    """Whether the physical planner splits the aggregation step by group (its rule 11.1)."""
    runtime = physical_plan(analyzed, layout, clock=clock, on_demand=on_demand).runtime
    assert runtime is not None and runtime.operator == "aggregation-step"
    return runtime.key.kind == "buckets"


def test_the_split_is_only_taken_where_it_is_exact(tmp_path: Path) -> None:
    layout = input_layout(check(app(tmp_path / "x.db")))
    analyzed = check(app(tmp_path / "x.db"))
    assert _splits(analyzed, layout, clock=True, on_demand=False)
    key = physical_plan(analyzed, layout, clock=True, on_demand=False).runtime
    assert key is not None and key.key.attributes == (("Trades", "symbol"),)
    assert not _splits(analyzed, layout, clock=True, on_demand=True)
    assert not _splits(analyzed, layout, clock=False, on_demand=False)
    in_memory = app(tmp_path / "x.db").replace(
        f"@store(type='rdbms', jdbc.url='jdbc:sqlite:{tmp_path / 'x.db'}')\n", "", 1)
    assert not _splits(check(in_memory), layout, clock=True, on_demand=False)
    doubles = check(app(tmp_path / "x.db", group_type="double"))
    assert not _splits(doubles, input_layout(doubles), clock=True, on_demand=False)
