"""Incremental aggregations in the per-event runtime: buckets, late events, date strings,
retrieval across granularities, joins."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from eddy.lang import check
from eddy.runtime.aggregation.store import InMemoryAggregationStore
from eddy.runtime.aggregation.timeutil import (
    AggregationTimeError,
    bucket_start,
    next_bucket_start,
    normalize_duration,
    parse_timestamp,
    to_millis,
    within_range,
)
from eddy.runtime.group import Runtime, build_runtime
from eddy.runtime.model import InputEvent


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
       tz: timezone = timezone.utc) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=tz).timestamp() * 1000)


# -- time arithmetic ------------------------------------------------------------------------------

def test_fixed_buckets_divide_epoch_millis() -> None:
    t = ms(2017, 6, 1, 4, 5, 50) + 123
    assert bucket_start(t, "SECONDS") == ms(2017, 6, 1, 4, 5, 50)
    assert bucket_start(t, "MINUTES") == ms(2017, 6, 1, 4, 5)
    assert bucket_start(t, "HOURS") == ms(2017, 6, 1, 4)
    assert bucket_start(t, "DAYS") == ms(2017, 6, 1)
    assert next_bucket_start(t, "HOURS") == ms(2017, 6, 1, 5)


def test_month_and_year_buckets_follow_the_utc_calendar() -> None:
    last_of_january = ms(2016, 1, 31, 23, 59, 59) + 999
    assert bucket_start(last_of_january, "MONTHS") == ms(2016, 1, 1)
    assert bucket_start(last_of_january + 1, "MONTHS") == ms(2016, 2, 1)
    leap_day = ms(2016, 2, 29, 12)
    assert bucket_start(leap_day, "MONTHS") == ms(2016, 2, 1)
    assert next_bucket_start(leap_day, "MONTHS") == ms(2016, 3, 1)
    assert next_bucket_start(ms(2016, 12, 15), "MONTHS") == ms(2017, 1, 1)
    assert bucket_start(ms(2016, 12, 31, 23, 59, 59), "YEARS") == ms(2016, 1, 1)
    assert bucket_start(ms(2017, 1, 1), "YEARS") == ms(2017, 1, 1)
    assert next_bucket_start(ms(2016, 7, 1), "YEARS") == ms(2017, 1, 1)
    # UTC, not the local zone: 2017-01-01 01:00 +05:30 is still 2016 in UTC.
    india = timezone(timedelta(hours=5, minutes=30))
    assert bucket_start(ms(2017, 1, 1, 1, tz=india), "YEARS") == ms(2016, 1, 1)


def test_date_strings_parse_as_utc_or_with_an_offset() -> None:
    assert parse_timestamp("2017-06-01 04:05:50") == 1496289950000
    assert parse_timestamp("2017-06-01 09:35:50 +05:30") == 1496289950000
    assert parse_timestamp("2017-06-01 00:05:50 -04:00") == 1496289950000
    assert to_millis(1496289950000) == 1496289950000
    assert to_millis("2017-06-01 04:05:50") == 1496289950000
    for bad in ("2017-06-01T04:05:50", "2017-13-01 00:00:00", "yesterday"):
        with pytest.raises(AggregationTimeError):
            parse_timestamp(bad)


def test_within_ranges_include_the_start_and_exclude_the_end() -> None:
    assert within_range((0, 120000)) == (0, 120000)
    assert within_range(("2017-06-01 04:05:50", "2017-06-01 04:06:50")) == \
        (1496289950000, 1496290010000)
    assert within_range(("2017-06-** **:**:**",)) == (ms(2017, 6, 1), ms(2017, 7, 1))
    assert within_range(("2017-12-** **:**:**",)) == (ms(2017, 12, 1), ms(2018, 1, 1))
    assert within_range(("2017-**-** **:**:**",)) == (ms(2017, 1, 1), ms(2018, 1, 1))
    assert within_range(("2017-06-02 **:**:**",)) == (ms(2017, 6, 2), ms(2017, 6, 3))
    assert within_range(("2017-06-02 04:**:**",)) == (ms(2017, 6, 2, 4), ms(2017, 6, 2, 5))
    assert within_range(("2017-06-02 04:05:**",)) == (ms(2017, 6, 2, 4, 5),
                                                      ms(2017, 6, 2, 4, 6))
    assert within_range(("2017-06-02 04:05:06",)) == (ms(2017, 6, 2, 4, 5, 6),
                                                      ms(2017, 6, 2, 4, 5, 7))
    with pytest.raises(AggregationTimeError):
        within_range((5, 5))
    with pytest.raises(AggregationTimeError):
        within_range(("2017-**-02 **:**:**",))


def test_per_values_name_granularities() -> None:
    assert normalize_duration("seconds") == "SECONDS"
    assert normalize_duration("sec") == "SECONDS"
    assert normalize_duration("Minutes") == "MINUTES"
    assert normalize_duration("years") == "YEARS"
    with pytest.raises(AggregationTimeError):
        normalize_duration("weeks")


def test_the_in_memory_store_scans_a_half_open_range_and_pickles() -> None:
    store = InMemoryAggregationStore(["SECONDS"])
    store.upsert("SECONDS", [((1000, None, ("a",)), [1]), ((2000, None, ("a",)), [2]),
                             ((3000, None, ("a",)), [3])])
    assert [k[0] for k, _ in store.scan("SECONDS", 1000, 3000)] == [1000, 2000]
    copy = InMemoryAggregationStore(["SECONDS"])
    copy.set_state(pickle.loads(pickle.dumps(store.get_state())))
    assert copy.get("SECONDS", (3000, None, ("a",))) == [3]


# -- the runtime ---------------------------------------------------------------------------------

TRADES = ("define stream T (sym string, price double, qty long, ts long);\n"
          "define aggregation A from T[qty > 0]\n"
          "select sym, avg(price) as ap, sum(qty) as total, count() as n, min(price) as lo, "
          "max(price) as hi, distinctCount(qty) as dq\n"
          "group by sym aggregate by ts every sec ... year;\n")


def feed(app: str, events: list[tuple[str, int, tuple[Any, ...]]]) -> Runtime:
    """Runs ``events`` one micro-batch each, snapshotting in between."""
    analyzed = check(app)
    state = build_runtime(analyzed).snapshot()
    for seq, (stream, ts, data) in enumerate(events):
        runtime = build_runtime(analyzed)
        runtime.restore(state)
        runtime.process([InputEvent(seq, ts, stream, data)])
        state = runtime.snapshot()
    runtime = build_runtime(analyzed)
    runtime.restore(state)
    return runtime


def rows(runtime: Runtime, query: str) -> list[tuple[Any, ...]]:
    return sorted(runtime.store_query(query), key=repr)


def test_late_events_merge_into_their_own_event_time_bucket() -> None:
    t0 = ms(2017, 6, 1, 4, 5, 50)
    runtime = feed(TRADES, [("T", 1, ("a", 10.0, 1, t0)),
                            ("T", 2, ("a", 20.0, 2, t0 + 61_000)),
                            ("T", 3, ("a", 30.0, 3, t0 + 500)),       # late: back to t0
                            ("T", 4, ("a", 99.0, 0, t0 + 600)),       # filtered out
                            ("T", 5, ("b", 5.0, 4, t0 - 3_600_000))])  # an hour late
    seconds = rows(runtime, f"from A within {t0 - 7_200_000}L, {t0 + 120_000}L per 'seconds' "
                            "select AGG_TIMESTAMP, sym, ap, total, n, lo, hi, dq")
    assert seconds == sorted([
        (t0, "a", 20.0, 4, 2, 10.0, 30.0, 2),
        (t0 + 61_000, "a", 20.0, 2, 1, 20.0, 20.0, 1),
        (t0 - 3_600_000, "b", 5.0, 4, 1, 5.0, 5.0, 1)], key=repr)
    hours = rows(runtime, "from A within '2017-06-01 **:**:**' per 'hours' "
                          "select AGG_TIMESTAMP, sym, total, n")
    assert hours == sorted([(ms(2017, 6, 1, 4), "a", 6, 3),
                            (ms(2017, 6, 1, 3), "b", 4, 1)], key=repr)


def test_retrieval_across_granularities_and_calendar_boundaries() -> None:
    events = [("T", i, ("a", float(p), 1, t)) for i, (p, t) in enumerate([
        (1, ms(2016, 12, 31, 23, 59, 59)), (2, ms(2017, 1, 1)), (3, ms(2017, 1, 31, 12)),
        (4, ms(2017, 2, 1)), (5, ms(2017, 2, 28, 23, 59, 59))])]
    runtime = feed(TRADES, events)
    months = rows(runtime, "from A within '2017-**-** **:**:**' per 'months' "
                           "select AGG_TIMESTAMP, total, lo, hi")
    assert months == [(ms(2017, 1, 1), 2, 2.0, 3.0), (ms(2017, 2, 1), 2, 4.0, 5.0)]
    years = rows(runtime, "from A within 0L, 2000000000000L per 'years' "
                          "select AGG_TIMESTAMP, total, ap")
    assert years == [(ms(2016, 1, 1), 1, 1.0), (ms(2017, 1, 1), 4, 3.5)]
    days = rows(runtime, "from A within '2017-01-** **:**:**' per 'days' "
                         "select AGG_TIMESTAMP, total")
    assert days == [(ms(2017, 1, 1), 1), (ms(2017, 1, 31), 1)]
    # group by, having, order by and limit run on top of the buckets
    top = runtime.store_query("from A within 0L, 2000000000000L per 'months' "
                              "select sym, sum(total) as t, max(hi) as m group by sym "
                              "having t > 1 order by m desc limit 1")
    assert top == [("a", 5, 5.0)]


def test_event_time_from_date_strings_and_an_undefined_granularity() -> None:
    app = ("define stream S (k string, v int, at string);\n"
           "define aggregation B from S select k, sum(v) as s group by k "
           "aggregate by at every min, day;\n")
    runtime = feed(app, [("S", 1, ("x", 1, "2017-06-01 04:05:50")),
                         ("S", 2, ("x", 2, "2017-06-01 09:36:10 +05:30")),
                         ("S", 3, ("x", 4, "2017-06-01 04:07:00"))])
    assert rows(runtime, "from B within '2017-06-01 04:**:**' per 'minutes' "
                         "select AGG_TIMESTAMP, s") == [(ms(2017, 6, 1, 4, 5), 1),
                                                        (ms(2017, 6, 1, 4, 6), 2),
                                                        (ms(2017, 6, 1, 4, 7), 4)]
    assert rows(runtime, "from B within '2017-06-** **:**:**' per 'days' "
                         "select k, s") == [("x", 7)]
    with pytest.raises(AggregationTimeError, match="HOURS"):
        runtime.store_query("from B within 0L, 1L per 'hours' select k, s")


def test_arrival_time_never_goes_back() -> None:
    app = ("define stream S (k string, v int);\n"
           "define aggregation C from S select k, sum(v) as s group by k "
           "aggregate every sec ... min;\n")
    runtime = feed(app, [("S", 1500, ("x", 1)), ("S", 2500, ("x", 2)),
                         ("S", 1200, ("x", 4))])  # arrives 'late': joins the open bucket
    assert rows(runtime, "from C within 0L, 10000L per 'seconds' select AGG_TIMESTAMP, s") == \
        [(1000, 1), (2000, 6)]


def test_a_join_reads_per_from_the_stream() -> None:
    app = TRADES + ("define stream Q (sym string, g string);\n"
                    "@info(name='q') from Q join A on Q.sym == A.sym "
                    "within 0L, 2000000000000L per Q.g "
                    "select A.AGG_TIMESTAMP as t, A.total insert into R;\n")
    analyzed = check(app)
    runtime = build_runtime(analyzed)
    t0 = ms(2017, 6, 1, 4, 5, 50)
    outputs = runtime.process([
        InputEvent(0, 1, "T", ("a", 1.0, 1, t0)), InputEvent(1, 2, "T", ("a", 1.0, 2, t0 + 1000)),
        InputEvent(2, 3, "T", ("b", 1.0, 3, t0)),
        InputEvent(3, 4, "Q", ("a", "days")), InputEvent(4, 5, "Q", ("a", "seconds"))])
    found = sorted((o.seq, o.data) for o in outputs if o.target == "R")
    assert found == [(3, (ms(2017, 6, 1), 3)), (4, (t0, 1)), (4, (t0 + 1000, 2))]


# -- the vectorised write path ---------------------------------------------------------------------

VECTOR_APP = (
    "define stream T (sym string, venue int, price float, qty long, at string);\n"
    "define aggregation V from T\n"
    "select sym, venue, avg(price) as ap, sum(qty) as total, min(price) as lo, "
    "max(qty) as hi, count() as n, distinctCount(venue) as venues\n"
    "group by sym, venue aggregate by at every sec ... year;\n")


def test_column_batches_give_the_rows_of_event_by_event() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    n = 3000
    arrival = ms(2016, 12, 31, 23, 59) + np.sort(rng.integers(0, 200_000, n))
    late = rng.random(n) < 0.05  # some events carry an older event time
    event = arrival - np.where(late, rng.integers(1000, 90_000, n), 0)
    stamps = np.array([datetime.fromtimestamp(t / 1000, timezone.utc)
                       .strftime("%Y-%m-%d %H:%M:%S") for t in event], dtype=object)
    stamps[rng.random(n) < 0.01] = "June 1, 2017 4:05:50 AM"  # unreadable: the event is dropped
    syms = np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)]
    venues = rng.integers(0, 2, n)
    prices = rng.random(n) * 100
    prices[rng.random(n) < 0.02] = np.nan  # nulls are skipped by avg and min
    qty = rng.integers(1, 50, n)
    one_by_one = build_runtime(check(VECTOR_APP))
    one_by_one.process([
        InputEvent(i, int(arrival[i]), "T",
                   (syms[i], int(venues[i]), None if prices[i] != prices[i] else
                    float(prices[i]), int(qty[i]), stamps[i])) for i in range(n)])
    batched = build_runtime(check(VECTOR_APP))
    aggregation = batched.aggregations["V"]
    assert aggregation.columns is not None
    for start in range(0, n, 700):
        part = slice(start, start + 700)
        aggregation.add_columns(arrival[part], [syms[part], venues[part], prices[part],
                                                qty[part], stamps[part]])
        batched.restore(batched.snapshot())
    for per in ("seconds", "minutes", "hours", "days", "months", "years"):
        query = (f"from V within 0L, 2000000000000L per '{per}' "
                 "select AGG_TIMESTAMP, sym, venue, ap, total, lo, hi, n, venues")
        expected, found = rows(one_by_one, query), rows(batched, query)
        assert len(found) == len(expected) > 1
        for e, f in zip(expected, found):
            assert e[:3] == f[:3] and e[4:] == f[4:], per
            assert f[3] == (None if e[3] is None else pytest.approx(e[3], rel=1e-12)), per


def test_filters_and_computed_arguments_keep_the_per_event_path() -> None:
    app = ("define stream S (k string, v double);\n"
           "define aggregation F from S[v > 0] select k, sum(v) as s group by k "
           "aggregate every sec ... min;\n"
           "define aggregation G from S select k, sum(v * 2) as s group by k "
           "aggregate every sec ... min;\n")
    runtime = build_runtime(check(app))
    assert runtime.aggregations["F"].columns is None
    assert runtime.aggregations["G"].columns is None
