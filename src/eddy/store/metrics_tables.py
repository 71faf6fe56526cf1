"""WSO2's ``METRIC_*`` tables (Carbon Metrics' JDBC reporter, digest §5.4), written by eddy.

A WSO2 SP status dashboard reads a worker's history from these tables, so eddy writes them
with the same names, columns and units: ``TIMESTAMP`` in epoch milliseconds, rates per
second (``RATE_UNIT`` ``second``), durations in milliseconds (``DURATION_UNIT``
``milliseconds``), one ``SOURCE`` per node (``wso2.carbon.id``). The tables are created
when missing; rows older than ``days_to_keep`` days are deleted as Carbon Metrics'
scheduled cleanup does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    insert,
)

RATE_UNIT = "second"
DURATION_UNIT = "milliseconds"
DAY_MS = 86_400_000

_metadata = MetaData()
# SQLite makes only an INTEGER PRIMARY KEY auto-increment; elsewhere the ID is a BIGINT.
_Id = BigInteger().with_variant(Integer(), "sqlite")


def _table(name: str, *columns: Column[object]) -> Table:
    table = Table(name, _metadata,
                  Column("ID", _Id, primary_key=True, autoincrement=True),
                  Column("SOURCE", String(255), nullable=False),
                  Column("TIMESTAMP", BigInteger, nullable=False),
                  Column("NAME", String(255), nullable=False), *columns)
    Index(f"{name}_TIMESTAMP_IDX", table.c.TIMESTAMP)
    return table


def _doubles(*names: str) -> list[Column[object]]:
    return [Column(name, Float(53), nullable=False) for name in names]


_RATES = ("MEAN_RATE", "M1_RATE", "M5_RATE", "M15_RATE")
_SNAPSHOT = ("MAX", "MEAN", "MIN", "STDDEV", "P50", "P75", "P95", "P98", "P99", "P999")

GAUGE = _table("METRIC_GAUGE", Column("VALUE", String(100), nullable=False))
COUNTER = _table("METRIC_COUNTER", Column("COUNT", BigInteger, nullable=False))
METER = _table("METRIC_METER", Column("COUNT", BigInteger, nullable=False), *_doubles(*_RATES),
               Column("RATE_UNIT", String(50), nullable=False))
HISTOGRAM = _table("METRIC_HISTOGRAM", Column("COUNT", BigInteger, nullable=False),
                   *_doubles(*_SNAPSHOT))
TIMER = _table("METRIC_TIMER", Column("COUNT", BigInteger, nullable=False),
               *_doubles(*_SNAPSHOT), *_doubles(*_RATES),
               Column("RATE_UNIT", String(50), nullable=False),
               Column("DURATION_UNIT", String(50), nullable=False))
TABLES = (GAUGE, COUNTER, METER, HISTOGRAM, TIMER)


@dataclass(frozen=True)
class Rates:
    """A meter's rates per second: since it started, and the 1, 5 and 15-minute averages."""

    mean: float
    m1: float
    m5: float
    m15: float


@dataclass(frozen=True)
class Snapshot:
    """A distribution in milliseconds: its extremes, mean, deviation and quantiles."""

    max: float
    mean: float
    min: float
    stddev: float
    p50: float
    p75: float
    p95: float
    p98: float
    p99: float
    p999: float


@dataclass
class Report:
    """One round of figures of a node, by kind."""

    gauges: list[tuple[str, str]]
    counters: list[tuple[str, int]]
    meters: list[tuple[str, int, Rates]]
    timers: list[tuple[str, int, Snapshot, Rates]]


class MetricTables:
    """The ``METRIC_*`` tables of one database."""

    def __init__(self, engine: Engine, days_to_keep: int = 3) -> None:
        self.engine = engine
        self.days_to_keep = days_to_keep
        _metadata.create_all(engine, checkfirst=True)

    def write(self, source: str, timestamp_ms: int, report: Report) -> None:
        """Inserts one report in one transaction, after deleting rows past their time."""
        base = {"SOURCE": source, "TIMESTAMP": timestamp_ms}
        rows: Sequence[tuple[Table, list[dict[str, object]]]] = (
            (GAUGE, [{**base, "NAME": n, "VALUE": v[:100]} for n, v in report.gauges]),
            (COUNTER, [{**base, "NAME": n, "COUNT": c} for n, c in report.counters]),
            (METER, [{**base, "NAME": n, "COUNT": c, **_rates(r), "RATE_UNIT": RATE_UNIT}
                     for n, c, r in report.meters]),
            (TIMER, [{**base, "NAME": n, "COUNT": c, **_snapshot(s), **_rates(r),
                      "RATE_UNIT": RATE_UNIT, "DURATION_UNIT": DURATION_UNIT}
                     for n, c, s, r in report.timers]),
        )
        expired = timestamp_ms - self.days_to_keep * DAY_MS
        with self.engine.begin() as connection:
            for table in TABLES:
                connection.execute(delete(table).where(table.c.TIMESTAMP < expired))
            for table, values in rows:
                if values:
                    connection.execute(insert(table), values)


def _rates(rates: Rates) -> dict[str, object]:
    return {"MEAN_RATE": rates.mean, "M1_RATE": rates.m1, "M5_RATE": rates.m5,
            "M15_RATE": rates.m15}


def _snapshot(s: Snapshot) -> dict[str, object]:
    return {"MAX": s.max, "MEAN": s.mean, "MIN": s.min, "STDDEV": s.stddev, "P50": s.p50,
            "P75": s.p75, "P95": s.p95, "P98": s.p98, "P99": s.p99, "P999": s.p999}
