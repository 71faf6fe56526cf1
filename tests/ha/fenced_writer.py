"""A stand-in for an active node's Spark tasks, run as its own process by
``test_fenced_tables.py``: it takes the lease of a group, exports its epoch as an active node
does, and writes one ``@store`` table row (through the micro-batch transaction, with its
batch marker) and one aggregation row per round until the fence refuses it.

Usage: ``python fenced_writer.py <sqlalchemy url> <group> <table> <aggregation> <ttl ms>``.
Prints ``epoch <n>``, then ``wrote <i>`` per round, then ``fenced: <message>`` and exits 0.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from eddy.lang.ast import Attribute, AttrType
from eddy.runtime.model import InputEvent, OutputEvent
from eddy.runtime.rdbms_table import RdbmsTable
from eddy.runtime.stored_batch import run_stored_batch
from eddy.store.aggregation_tables import AggregationLayout, AggregationTables, Attr, Base
from eddy.store.connect import connect
from eddy.store.fence import Epoch, Fenced, export_epoch, raise_fence
from eddy.store.lease import Lease
from eddy.store.table_schema import TableOptions

ROUND_S = 0.02


class TableRuntime:
    """The part of a group runtime :func:`run_stored_batch` uses: its tables and state."""

    def __init__(self, table: RdbmsTable) -> None:
        self.tables = {"T": table}

    def snapshot(self) -> bytes:
        return b""

    def restore(self, state: bytes) -> None:
        pass


def writer_table(url: str, name: str) -> RdbmsTable:
    """The ``@store`` table both the test and this writer use: (writer, n)."""
    return RdbmsTable("T", (Attribute("writer", AttrType.STRING), Attribute("n", AttrType.LONG)),
                      url, TableOptions(name, {}), primary_key=(0, 1))


def writer_aggregation(engine: Engine, name: str) -> AggregationTables:
    """An aggregation's tables (one granularity, grouped by writer, a count)."""
    layout = AggregationLayout(name, ("SECONDS",), 1, False, False,
                               (Attr("writer", AttrType.STRING, 0),), (),
                               (Base("AGG_COUNT", "COUNT", AttrType.LONG),))
    tables = AggregationTables(engine, layout)
    tables.create()
    return tables


def write_round(runtime: TableRuntime, aggregation: AggregationTables, writer: str,
                n: int) -> None:
    """One micro-batch's table row, then its aggregation row."""
    def run(rt: Any, _events: list[InputEvent]) -> list[OutputEvent]:
        rt.tables["T"].insert([(writer, n)])
        return []
    query = f"{runtime.tables['T'].options.table_name}-{writer}"  # a Spark query id's role
    run_stored_batch(runtime, [], "key", run, "writer", (query, n))
    values = [None, (writer,), 1]  # last-event time, last event's data, AGG_COUNT
    aggregation.upsert_many([("SECONDS", [(n * 1000, None, n * 1000, (writer,), values)])])


def main(url: str, group: str, table: str, aggregation_name: str, ttl_ms: int) -> None:
    engine = connect(url)
    lease = Lease(engine, group, "old", ttl_ms)
    while not (view := lease.tick()).mine:
        time.sleep(0.05)
    export_epoch(Epoch(group, view.epoch))
    raise_fence(engine, group, view.epoch)
    print(f"epoch {view.epoch}", flush=True)

    def renew() -> None:  # an active renews its lease until it is paused
        while True:
            try:
                lease.tick()
            except SQLAlchemyError:  # as a node: a missed renewal (its paused transaction
                pass  # was aborted by the database), not a crash
            time.sleep(ttl_ms / 4000)
    threading.Thread(target=renew, daemon=True).start()
    runtime = TableRuntime(writer_table(url, table))
    aggregation = writer_aggregation(engine, aggregation_name)
    n = 0
    while True:
        try:
            write_round(runtime, aggregation, "old", n)
        except Fenced as error:
            print(f"fenced: {error}", flush=True)
            return
        print(f"wrote {n}", flush=True)
        n += 1
        time.sleep(ROUND_S)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
