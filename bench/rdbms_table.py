"""Throughput of ``@store(type='rdbms')`` tables in the per-event runtime, per database.

The app keeps the last price per symbol (``update or insert`` on the primary key), appends
every trade to a log table (plain inserts) and joins a query stream against the last
prices. Events run in micro-batches of ``--batch`` events, each batch as Spark's operator
runs it (one database transaction, :func:`eddy.runtime.stored_batch.run_stored_batch`, with a
batch marker), against the in-memory table and then SQLite, MariaDB and PostgreSQL on this
machine. Prints events/s per store; the tables are dropped afterwards.

Run: .venv/bin/python bench/rdbms_table.py [--events 20000] [--symbols 1000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import MetaData, Table, delete, inspect

from eddy.engine.operators.runtime_operator import run_batch
from eddy.lang import check
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent
from eddy.runtime.stored_batch import markers, run_stored_batch
from eddy.store.connect import connect, jdbc_to_sqlalchemy

APP = """
define stream Trades (symbol string, price double);
define stream Q (symbol string);
{store_last}@PrimaryKey('symbol')
define table Last (symbol string, price double);
{store_log}define table Log (symbol string, price double);
from Trades select symbol, price update or insert into Last on Last.symbol == symbol;
from Trades insert into Log;
from Q join Last on Q.symbol == Last.symbol select Last.symbol, Last.price insert into R;
"""
SERVERS = {"mariadb": "jdbc:mysql://127.0.0.1:3306/test",
           "postgresql": "jdbc:postgresql://127.0.0.1:5432/test"}


def events(count: int, symbols: int) -> list[InputEvent]:
    rng = random.Random(7)
    made = []
    for seq in range(count):
        symbol = f"S{rng.randrange(symbols)}"
        if seq % 10 == 9:
            made.append(InputEvent(seq, seq, "Q", (symbol,)))
        else:
            made.append(InputEvent(seq, seq, "Trades", (symbol, rng.random() * 1000)))
    return made


def run(label: str, jdbc: str | None, inputs: list[InputEvent], batch: int) -> None:
    run_id = uuid.uuid4().hex[:8]
    names = [f"bench_{run_id}_last", f"bench_{run_id}_log"]
    store = ("" if jdbc is None else
             "@store(type='rdbms', jdbc.url='{jdbc}', username='root', table.name='{name}')\n")
    app = APP.format(store_last=store.format(jdbc=jdbc, name=names[0]),
                     store_log=store.format(jdbc=jdbc, name=names[1]))
    runtime = build_runtime(check(app))
    query = f"bench-{run_id}"
    started = time.perf_counter()
    outputs = 0
    for batch_id, start in enumerate(range(0, len(inputs), batch)):
        chunk = inputs[start:start + batch]
        produced = run_stored_batch(runtime, chunk, 0, run_batch, "bench", (query, batch_id))
        outputs += sum(1 for o in produced if o.target == "R")
        runtime.restore(runtime.snapshot())
    elapsed = time.perf_counter() - started
    print(f"{label:>10}: {len(inputs) / elapsed:>9,.0f} events/s "
          f"({len(inputs):,} events, {outputs:,} join outputs, {elapsed:.1f} s)")
    if jdbc is not None:
        engine = connect(jdbc_to_sqlalchemy(jdbc, "root"))
        existing = set(inspect(engine).get_table_names())
        for name in names:
            if name in existing:
                Table(name, MetaData()).drop(engine)
        with engine.begin() as connection:
            connection.execute(delete(markers).where(markers.c.owner.like(f"{query}/%")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--symbols", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=1_000)
    args = parser.parse_args()
    inputs = events(args.events, args.symbols)
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as work:
        run("in-memory", None, inputs, args.batch)
        run("sqlite", f"jdbc:sqlite:{Path(work) / 'tables.db'}", inputs, args.batch)
        for label, jdbc in SERVERS.items():
            run(label, jdbc, inputs, args.batch)


if __name__ == "__main__":
    main()
