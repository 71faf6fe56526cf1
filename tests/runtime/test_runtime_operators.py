"""Unit tests of the runtime's parts: aggregators, selector paths, rate limiters, the Java
hash orders, ordering of outputs, named windows, state round trips and unsupported queries.

Where a test pins a surprising value, the reference engine produces it too; the docstring
of the module under test explains why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from eddy.bus.routing import java_string_hash as string_hash
from eddy.lang import check
from eddy.lang.ast import AttrType
from eddy.runtime.aggregators import make_aggregator
from eddy.runtime.driver import run_in_batches
from eddy.runtime.group import UnsupportedQuery, build_runtime
from eddy.runtime.javahash import (
    ConcurrentHashOrder,
    hash_map_capacity,
    hash_map_order,
    java_str,
)
from eddy.runtime.model import InputEvent, OutputEvent
from eddy.runtime.windows.cron import CronSchedule

Row = tuple[int, list[Any], bool]


def app(body: str, streams: str = "define stream S (k string, v int);") -> str:
    return f"@app:playback\n{streams}\n{body}"


def feed(text: str, events: Sequence[tuple[int, tuple[Any, ...]]], stream: str = "S",
         batch_size: int | None = 1) -> list[OutputEvent]:
    inputs = [InputEvent(i, ts, stream, data) for i, (ts, data) in enumerate(events)]
    return run_in_batches(check(text), inputs, batch_size)


def rows(outputs: Sequence[OutputEvent], query: str = "q") -> list[Row]:
    return [(o.ts, list(o.data), o.expired) for o in outputs if o.query == query]


# -- aggregators ----------------------------------------------------------------------------

def test_sum_of_longs_removes_in_double_arithmetic() -> None:
    agg = make_aggregator("sum", AttrType.LONG, True)
    state = agg.new()
    big = 2 ** 60 + 1
    agg.add(state, big)
    agg.add(state, 1)
    assert agg.remove(state, 1) == 2 ** 60  # (long)((double) sum - 1): the +1 is lost


def test_sum_wraps_like_a_java_long() -> None:
    agg = make_aggregator("sum", AttrType.LONG, False)
    state = agg.new()
    agg.add(state, 2 ** 63 - 1)
    assert agg.add(state, 1) == -(2 ** 63)


def test_min_without_tracking_forgets_the_removed_minimum() -> None:
    agg = make_aggregator("min", AttrType.INT, False)
    state = agg.new()
    for v in (3, 1, 2):
        agg.add(state, v)
    assert agg.remove(state, 1) is None  # no deque: the next smallest is not known


def test_min_with_tracking_falls_back_in_fifo_order() -> None:
    agg = make_aggregator("min", AttrType.INT, True)
    state = agg.new()
    for v in (3, 1, 2):
        agg.add(state, v)
    assert agg.remove(state, 3) == 1
    assert agg.remove(state, 1) == 2
    # Out-of-order removal (a sort window): 5 was dropped from the deque when 4 arrived.
    state = agg.new()
    agg.add(state, 5)
    agg.add(state, 4)
    assert agg.remove(state, 4) is None


def test_forever_extremes_ignore_expiry() -> None:
    agg = make_aggregator("maxForever", AttrType.INT, True)
    state = agg.new()
    agg.add(state, 4)
    assert agg.remove(state, 9) == 9  # removal is one more value to compare


def test_count_distinct_count_and_nulls() -> None:
    count = make_aggregator("count", None, True)
    state = count.new()
    assert count.add(state, None) == 1
    distinct = make_aggregator("distinctCount", AttrType.STRING, True)
    state = distinct.new()
    for v in ("a", None, "a", None):
        distinct.add(state, v)
    assert distinct.remove(state, "a") == 2
    assert distinct.remove(state, "a") == 1


def test_empty_sum_avg_are_null_and_count_is_zero() -> None:
    for name, empty in (("sum", None), ("avg", None), ("stdDev", None)):
        agg = make_aggregator(name, AttrType.DOUBLE, True)
        state = agg.new()
        agg.add(state, 2.0)
        assert agg.remove(state, 2.0) is empty
    count = make_aggregator("count", None, True)
    state = count.new()
    count.add(state, None)
    assert count.remove(state, None) == 0


def test_std_dev_of_cancelling_values_can_be_nan_as_in_java() -> None:
    agg = make_aggregator("stdDev", AttrType.INT, True)
    state = agg.new()
    for v in (1, 0, 0):
        agg.add(state, v)
    result = agg.remove(state, 1)
    assert result == 0.0 or math.isnan(result)


def test_and_or_union_set() -> None:
    conj = make_aggregator("and", AttrType.BOOL, True)
    disj = make_aggregator("or", AttrType.BOOL, True)
    a, o = conj.new(), disj.new()
    for v in (True, False):
        conj.add(a, v)
        disj.add(o, v)
    assert conj.remove(a, False) is True
    assert disj.remove(o, True) is False
    union = make_aggregator("unionSet", AttrType.OBJECT, True)
    state = union.new()
    union.add(state, frozenset({1, 2}))
    union.add(state, frozenset({2}))
    assert union.remove(state, frozenset({2})) == {1, 2}


# -- selector -------------------------------------------------------------------------------

def test_aggregate_without_group_by_emits_the_last_event_of_a_chunk() -> None:
    text = app("@info(name='q') from S#window.lengthBatch(2) select k, sum(v) as s "
               "insert all events into O;")
    got = rows(feed(text, [(1, ("a", 1)), (2, ("b", 2)), (3, ("c", 3)), (4, ("d", 4))]))
    assert got == [(2, ["b", 3], False), (4, ["d", 7], False)]


def test_group_by_without_aggregates_still_keeps_the_last_per_group() -> None:
    text = app("@info(name='q') from S#window.lengthBatch(3) select k, v group by k "
               "insert into O;")
    got = rows(feed(text, [(1, ("a", 1)), (2, ("b", 2)), (3, ("a", 3))]))
    assert got == [(3, ["a", 3], False), (2, ["b", 2], False)]


def test_order_by_puts_nulls_last_and_limit_counts() -> None:
    streams = "define stream S (k string, v int);"
    text = app("@info(name='q') from S#window.lengthBatch(4) select k, v order by v desc "
               "limit 3 insert into O;", streams)
    got = rows(feed(text, [(1, ("a", 2)), (2, ("b", None)), (3, ("c", 5)), (4, ("d", 1))]))
    assert [r[1][0] for r in got] == ["c", "a", "d"]


def test_limit_keeps_every_selected_expired_event() -> None:
    text = app("@info(name='q') from S#window.lengthBatch(2) select k, v limit 1 "
               "insert all events into O;")
    got = rows(feed(text, [(1, ("a", 1)), (2, ("b", 2)), (3, ("c", 3)), (4, ("d", 4))]))
    # limit 1 on [expired a, expired b, current c, current d]: both expired events stay
    # (and count), so no current event fits.
    assert got == [(1, ["a", 1], False), (4, ["a", 1], True), (4, ["b", 2], True)]


def test_having_aggregates_are_never_reset() -> None:
    text = app("@info(name='q') from S#window.lengthBatch(2) select k, sum(v) as s "
               "having count() > 2 insert into O;")
    got = rows(feed(text, [(1, ("a", 1)), (2, ("b", 1)), (3, ("c", 1)), (4, ("d", 1))]))
    assert got == [(4, ["d", 2], False)]  # having's count() went on to 4; sum was reset


# -- rate limiting --------------------------------------------------------------------------

def test_first_every_one_event_emits_only_the_first_ever() -> None:
    text = app("@info(name='q') from S select k output first every 1 events insert into O;")
    got = rows(feed(text, [(1, ("a", 1)), (2, ("b", 1)), (3, ("c", 1))]))
    assert got == [(1, ["a"], False)]


def test_last_every_time_flushes_from_the_first_event() -> None:
    text = app("@info(name='q') from S select k, v output last every 1 sec insert into O;")
    got = rows(feed(text, [(1000, ("a", 1)), (1500, ("b", 2)), (2100, ("c", 3)),
                           (2500, ("d", 4)), (3200, ("e", 5))]))
    assert got == [(1500, ["b", 2], False), (2500, ["d", 4], False)]


def test_all_every_time_by_group() -> None:
    text = app("@info(name='q') from S select k, sum(v) as s group by k "
               "output last every 1 sec insert into O;")
    got = rows(feed(text, [(1000, ("a", 1)), (1200, ("b", 2)), (1400, ("a", 3)),
                           (2000, ("z", 0))]))
    assert got == [(1400, ["a", 4], False), (1200, ["b", 2], False)]


def test_snapshot_of_a_window_re_emits_its_content() -> None:
    text = app("@info(name='q') from S#window.length(2) select k, v "
               "output snapshot every 1 sec insert all events into O;")
    got = rows(feed(text, [(1000, ("a", 1)), (1500, ("b", 2)), (1700, ("c", 3)),
                           (2000, ("d", 4))]))
    assert got == [(1500, ["b", 2], False), (1700, ["c", 3], False)]


# -- order, chains, timers, named windows ---------------------------------------------------

def test_chains_are_depth_first_in_subscriber_order() -> None:
    text = app("@info(name='a') from S select k, v insert into T;\n"
               "@info(name='b') from T select k insert into U;\n"
               "@info(name='c') from S select v insert into V;")
    outputs = feed(text, [(1, ("x", 1))])
    assert [o.query for o in outputs] == ["a", "b", "c"]
    assert outputs[0].order < outputs[1].order < outputs[2].order


def test_timer_outputs_sort_before_the_input_that_fires_them() -> None:
    text = app("@info(name='q') from S#window.time(1 sec) select k "
               "insert all events into O;")
    outputs = feed(text, [(1000, ("a", 1)), (5000, ("b", 2))], batch_size=None)
    assert [(o.seq, o.data, o.expired) for o in outputs] == \
        [(0, ("a",), False), (1, ("a",), True), (1, ("b",), False)]
    assert outputs[1].order[0] == 0 and outputs[2].order[0] == 1


def test_schedulers_fire_in_creation_order_not_due_order() -> None:
    text = app("@info(name='late') from S#window.time(2 sec) select k insert expired events "
               "into O1;\n@info(name='early') from S#window.time(1 sec) select k "
               "insert expired events into O2;")
    outputs = feed(text, [(1000, ("a", 1)), (9000, ("b", 1))])
    # 'early' was due at 2000, 'late' at 3000, but 'late''s scheduler was created first.
    assert [o.query for o in outputs] == ["late", "early"]


def test_named_window_feeds_its_readers_with_event_kinds_kept() -> None:
    text = app("define window W (k string, v int) length(2) output expired events;\n"
               "from S insert into W;\n"
               "@info(name='q') from W select k, v insert expired events into O;\n"
               "@info(name='c') from W select k, v insert into P;")
    outputs = feed(text, [(1, ("a", 1)), (2, ("b", 2)), (3, ("c", 3))])
    assert rows(outputs) == [(3, ["a", 1], True)]
    assert rows(outputs, "c") == []  # W emits only expired events; 'insert into' wants current


def test_events_older_than_the_clock_do_not_move_it() -> None:
    text = app("@info(name='q') from S#window.time(1 sec) select k, currentTimeMillis() as t "
               "insert into O;")
    got = rows(feed(text, [(5000, ("a", 1)), (3000, ("b", 1))]))
    assert got == [(5000, ["a", 5000], False), (3000, ["b", 5000], False)]


# -- state ------------------------------------------------------------------------------------

def test_restore_replaces_all_state() -> None:
    analysed = check(app("@info(name='q') from S#window.length(2) select sum(v) as s "
                         "insert into O;"))
    runtime = build_runtime(analysed)
    pristine = runtime.snapshot()
    runtime.process([InputEvent(0, 1, "S", ("a", 5))])
    runtime.restore(pristine)
    out = runtime.process([InputEvent(1, 2, "S", ("b", 1))])
    assert [o.data for o in out] == [(1,)]


def test_a_restored_partition_fires_its_own_timers_not_a_plan_left_by_other_state() -> None:
    """A process keeps one runtime per app and restores each state key's and each run's
    state into it. Another run that just fired its partitioned timers at the same
    ``(seq, now)`` must not leave its (consumed) firing plan behind: once that happened,
    ``c1``'s batch was never flushed (a flaky conformance case)."""
    text = app("partition with (k of S) begin @info(name='q') from S#window.timeBatch(5 sec) "
               "select k, count() as n, sum(v) as total insert into O; end;")
    events = [InputEvent(i, ts, "S", data) for i, (ts, data) in enumerate(
        [(1000, ("c1", 10)), (2000, ("c2", 5)), (3000, ("c1", 1)), (6500, ("c1", 2)),
         (8000, ("c2", 3)), (20000, ("c3", 0))])]
    runtime = build_runtime(check(text))
    for event in events[:-1]:
        runtime.process([event])
    before_last = runtime.snapshot()
    expected = [(o.ts, o.data) for o in runtime.process(events[-1:])]
    assert expected == [(6500, ("c1", 1, 2))]

    other = build_runtime(check(text))
    other.process(events)  # every event at once: its timers fire at (5, 20000) too
    other.restore(before_last)
    assert [(o.ts, o.data) for o in other.process(events[-1:])] == expected


# -- unsupported ------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    "from S#window.cron('*/5 * * * * ?') as a join S#window.length(2) as b on a.v == b.v "
    "select a.k insert into O;",
])
def test_joins_patterns_and_partitions_are_reported(body: str) -> None:
    with pytest.raises(UnsupportedQuery) as raised:
        build_runtime(check(app(body)))
    assert raised.value.query_id and raised.value.reason


# -- Java hash orders (expected values produced by OpenJDK 17) --------------------------------

def test_string_hash_matches_java() -> None:
    assert string_hash("abc") == 96354
    assert string_hash("default-key") == -438116141
    assert string_hash("\u00e9\U0001F600z") == 61901294
    assert java_str(1.0) == "1.0" and java_str(None) == "null" and java_str(True) == "true"


def test_concurrent_hash_map_order_matches_java() -> None:
    keys = [f"u{i * 37 % 211}" for i in range(40)]
    order = ConcurrentHashOrder()
    for k in keys:
        order.add(k)
    assert sorted(order) == sorted(keys) and len(order) == 40
    # Recorded from java.util.concurrent.ConcurrentHashMap on OpenJDK 17 (two resizes,
    # a removal and a re-insertion):
    java = ConcurrentHashOrder()
    for key in ["k1", "k2", "k3"] + [f"k{i}{j}" for i in range(1, 8) for j in range(3)] + \
            ["k80"]:
        java.add(key)
    java.remove("k21")
    java.add("k99")
    assert list(java) == JAVA_CHM


JAVA_CHM = ["k71", "k70", "k51", "k50", "k72", "k31", "k30", "k52", "k11", "k99", "k10", "k32",
            "k12", "k80", "k60", "k40", "k1", "k62", "k61", "k2", "k20", "k3", "k42", "k41",
            "k22"]


def test_hash_map_order_and_capacity() -> None:
    assert hash_map_capacity(12) == 16 and hash_map_capacity(13) == 32
    keys = ["k1", "k2", "k3"]
    assert sorted(hash_map_order(keys, 16)) == sorted(keys)


# -- cron ---------------------------------------------------------------------------------------

def test_cron_schedule_next_instants() -> None:
    every_five = CronSchedule("*/5 * * * * ?")
    assert every_five.next_after(1000) == 5000
    assert every_five.next_after(5000) == 10000
    hourly = CronSchedule("0 0 * * * ?")
    assert hourly.next_after(0) == 3600_000


# -- frequent windows (expected values: siddhi-core's own tests and a JVM run) --------------------

PURCHASE = "define stream purchase (cardNo string, price float);"
CARDS = [("3234-3244-2432-4124", 73.36), ("1234-3244-2432-123", 46.36),
         ("5768-3244-2432-5646", 48.36), ("9853-3244-2432-4125", 78.36)]


def purchases(query: str, events: list[tuple[str, float]]) -> list[OutputEvent]:
    text = app("@info(name='q') from purchase[price >= 30]" + query, PURCHASE)
    return feed(text, [(i, e) for i, e in enumerate(events)], "purchase", batch_size=3)


def test_frequent_expires_in_concurrent_hash_map_order() -> None:
    outputs = purchases("#window.frequent(2) select cardNo, price insert all events into O;",
                        CARDS * 2)
    assert sum(not o.expired for o in outputs) == 8
    expired = [o.data[0][:4] for o in outputs if o.expired]
    assert expired == ["1234", "3234", "9853", "5768", "1234", "3234"]  # as the JVM orders


def test_frequent_by_key_and_lossy_frequent_counts() -> None:
    keyed = [CARDS[0], CARDS[1], (CARDS[0][0], 78.36), (CARDS[1][0], 86.36), CARDS[2]] * 2
    outputs = purchases("#window.frequent(2, cardNo) select cardNo insert all events into O;",
                        keyed)
    assert (sum(not o.expired for o in outputs), sum(o.expired for o in outputs)) == (8, 0)
    lossy = CARDS * 25 + [("1124-3244-2432-4126", 78.36)] * 2
    outputs = purchases("#window.lossyFrequent(0.1, 0.01) select cardNo insert all events "
                        "into O;", lossy)
    assert (sum(not o.expired for o in outputs), sum(o.expired for o in outputs)) == (100, 0)
    first = [("3224-3244-2432-4124", 73.36)]
    by_card = first + [CARDS[0], (CARDS[0][0], 78.36), (CARDS[1][0], 86.36),
                       (CARDS[0][0], 48.36)] * 25
    outputs = purchases("#window.lossyFrequent(0.3, 0.05, cardNo) select cardNo insert all "
                        "events into O;", by_card)
    assert (sum(not o.expired for o in outputs), sum(o.expired for o in outputs)) == (101, 1)


# -- cron and session latency ------------------------------------------------------------------

def test_cron_window_flushes_on_event_time_instants() -> None:
    text = app("@info(name='q') from S#window.cron('*/5 * * * * ?') select k "
               "insert all events into O;")
    got = rows(feed(text, [(1000, ("a", 1)), (2000, ("b", 1)), (6000, ("c", 1)),
                           (11000, ("d", 1))]))
    assert got == [(1000, ["a"], False), (2000, ["b"], False), (11000, ["a"], True),
                   (11000, ["b"], True), (6000, ["c"], False)]


def test_session_with_allowed_latency_keeps_a_closed_session_for_late_events() -> None:
    text = app("@info(name='q') from S#window.session(1 sec, k, 500) select k, v "
               "insert all events into O;")
    got = rows(feed(text, [(1000, ("a", 1)), (2100, ("a", 2)), (1900, ("a", 3)),
                           (5000, ("a", 4))]))
    # The late event (1900) joins the closed session, which merges with the next one; both
    # expire together once their latency has passed.
    assert got[:3] == [(1000, ["a", 1], False), (2100, ["a", 2], False),
                       (1900, ["a", 3], False)]
    assert sorted(r[1][1] for r in got if r[2]) == [1, 2, 3]
