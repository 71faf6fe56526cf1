"""Joins, tables, on-demand queries and partitions in the per-event runtime.

Each scenario states the reference's behaviour (siddhi-core 5.1: ``JoinProcessor``,
``InMemoryTable`` and its holders and operators, ``OnDemandQueryParser``,
``PartitionRuntime``) and runs the app in micro-batches of one event, of two, and all at
once, restoring a fresh runtime from the snapshot between batches; all three must agree.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.lang import SiddhiAppError, check
from eddy.lang.ast import Attribute, AttrType
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, OutputEvent, sort_outputs
from eddy.runtime.partition_buckets import partition_attributes
from eddy.runtime.query_builder import UnsupportedQuery
from eddy.runtime.table import InMemoryTable

Input = tuple[str, int, tuple[Any, ...]] | str  # an event, or an on-demand query
Row = tuple[Any, ...]


def run_cut(app: str, inputs: Sequence[Input], cuts: Sequence[int]
            ) -> tuple[list[OutputEvent], list[list[Row]]]:
    """Runs ``inputs`` in micro-batches of the given sizes (the rest in one), restoring a
    freshly built runtime from the snapshot before each."""
    analyzed = check("@app:playback\n" + app)
    state = build_runtime(analyzed).snapshot()
    outputs: list[OutputEvent] = []
    store: list[list[Row]] = []
    bounds, start = [], 0
    for size in list(cuts) + [len(inputs)]:
        if start >= len(inputs):
            break
        bounds.append((start, min(len(inputs), start + max(size, 1))))
        start = bounds[-1][1]
    for first, last in bounds:
        runtime = build_runtime(analyzed)
        runtime.restore(state)
        pending: list[InputEvent] = []
        for seq in range(first, last):
            item = inputs[seq]
            if isinstance(item, str):
                outputs += runtime.process(pending)
                pending = []
                store.append(runtime.store_query(item))
                continue
            stream, ts, data = item
            pending.append(InputEvent(seq, ts, stream, data))
        outputs += runtime.process(pending)
        state = runtime.snapshot()
    return sort_outputs(outputs), store


def run(app: str, inputs: Sequence[Input]) -> tuple[list[OutputEvent], list[list[Row]]]:
    """Runs in batches of 1, 2 and all; asserts they agree; returns the result."""
    results = [run_cut(app, inputs, [size] * len(inputs)) for size in (1, 2)]
    results.append(run_cut(app, inputs, []))
    plain = [([(o.query, o.target, o.ts, o.data, o.expired) for o in r[0]], r[1])
             for r in results]
    assert plain[0] == plain[1] == plain[2]
    return results[2]


def stream(outputs: list[OutputEvent], name: str) -> list[tuple[int, Row]]:
    return [(o.ts, o.data) for o in outputs if o.target == name]


def query(outputs: list[OutputEvent], name: str) -> list[tuple[int, Row, bool]]:
    return [(o.ts, o.data, o.expired) for o in outputs if o.query == name]


AB = "define stream A (id int, x int); define stream B (id int, y int);\n"


# -- joins ------------------------------------------------------------------------------------

def test_inner_join_joins_expired_events_too() -> None:
    outputs, _ = run(AB + "@info(name='q') from A#window.length(1) as a join "
                     "B#window.length(2) as b on a.id == b.id "
                     "select a.x, b.y insert all events into O;",
                     [("B", 1, (1, 10)), ("A", 2, (1, 5)), ("B", 3, (1, 11)), ("A", 4, (2, 6))])
    assert query(outputs, "q") == [(2, (5, 10), False), (3, (5, 11), False),
                                   (4, (5, 10), True), (4, (5, 11), True)]


def test_left_right_and_full_outer_joins_pad_the_other_side_with_nulls() -> None:
    body = ("@info(name='q') from A#window.length(2) as a {} join B#window.length(1) as b "
            "on a.id == b.id select a.id as aid, b.id as bid insert into O;")
    inputs: list[Input] = [("A", 1, (1, 0)), ("B", 2, (2, 0)), ("B", 3, (1, 0))]
    expected = {
        "left outer": [(1, (1, None)), (3, (1, 1))],
        "right outer": [(2, (None, 2)), (3, (1, 1))],
        "full outer": [(1, (1, None)), (2, (None, 2)), (3, (1, 1))],
        "inner": [(3, (1, 1))],
    }
    for kind, rows in expected.items():
        outputs, _ = run(AB + body.format("" if kind == "inner" else kind), inputs)
        assert stream(outputs, "O") == rows, kind


def test_an_expired_event_without_a_match_is_padded_in_an_outer_join() -> None:
    outputs, _ = run(AB + "@info(name='q') from A as a right outer join B#window.length(1) "
                     "as b on a.id == b.id select b.y insert all events into O;",
                     [("B", 1, (1, 10)), ("B", 2, (2, 20))])
    assert query(outputs, "q") == [(1, (10,), False), (2, (10,), True), (2, (20,), False)]


@pytest.mark.parametrize(("where", "expected"), [
    ("A as a unidirectional join B#window.length(5) as b", [(3, (1, 10))]),
    ("A#window.length(5) as a join B as b unidirectional", [(4, (1, 11))]),
])
def test_only_the_unidirectional_side_triggers(where: str, expected: list[Any]) -> None:
    outputs, _ = run(AB + f"from {where} on a.id == b.id select a.id, b.y insert into O;",
                     [("B", 1, (1, 10)), ("A", 2, (9, 9)), ("A", 3, (1, 0)), ("B", 4, (1, 11))])
    assert stream(outputs, "O") == expected


def test_a_side_without_a_window_holds_nothing() -> None:
    outputs, _ = run(AB + "from A as a join B#window.length(5) as b on a.id == b.id "
                     "select a.x, b.y insert into O;",
                     [("A", 1, (1, 1)), ("B", 2, (1, 20)), ("A", 3, (1, 3))])
    assert stream(outputs, "O") == [(3, (3, 20))]


def test_a_windowless_trigger_resets_aggregates_and_joins_its_expired_copy() -> None:
    outputs, _ = run(AB + "@info(name='n') from A as a join B#window.length(5) as b "
                     "on a.id == b.id select count() as n insert into N;"
                     "@info(name='all') from A as a join B#window.length(5) as b "
                     "on a.id == b.id select b.y insert all events into E;",
                     [("B", 1, (1, 1)), ("B", 2, (1, 2)), ("A", 3, (1, 0)), ("A", 4, (1, 0))])
    assert stream(outputs, "N") == [(3, (2,)), (4, (2,))]
    assert query(outputs, "all") == [(3, (1,), False), (3, (2,), False), (3, (1,), True),
                                     (3, (2,), True), (4, (1,), False), (4, (2,), False),
                                     (4, (1,), True), (4, (2,), True)]


def test_matches_of_one_event_are_one_chunk_and_one_emission() -> None:
    outputs, _ = run(AB + "from A#window.length(5) as a join B#window.length(5) as b "
                     "on a.id == b.id select b.y, sum(b.y) as s insert into O;"
                     "from O select count() as n insert into N;",
                     [("B", 1, (1, 1)), ("B", 2, (1, 2)), ("A", 3, (1, 0)),
                      ("B", 4, (1, 4))])
    assert stream(outputs, "O") == [(3, (2, 3)), (4, (4, 7))]
    assert stream(outputs, "N") == [(3, (1,)), (4, (2,))]


def test_group_by_over_a_join_keeps_each_groups_last_row() -> None:
    outputs, _ = run(AB + "from A#window.length(5) as a join B#window.length(5) as b "
                     "on a.id == b.id select b.y, count() as n group by b.y insert into O;",
                     [("B", 1, (1, 7)), ("B", 2, (1, 8)), ("B", 3, (1, 7)), ("A", 4, (1, 0))])
    assert stream(outputs, "O") == [(4, (7, 2)), (4, (8, 1))]


def test_a_self_join_runs_the_left_side_first() -> None:
    outputs, _ = run("define stream T (p double);\n"
                     "from T#window.length(1) as cur join T#window.length(2) as prev "
                     "on cur.p > prev.p select prev.p as before, cur.p as after insert into R;",
                     [("T", 1, (10.0,)), ("T", 2, (12.0,)), ("T", 3, (11.0,))])
    assert stream(outputs, "R") == [(2, (10.0, 12.0)), (3, (10.0, 11.0))]


def test_time_windows_expire_on_their_timers_and_the_expired_events_join() -> None:
    outputs, _ = run(AB + "@info(name='q') from A#window.time(1 sec) as a join "
                     "B#window.length(3) as b on a.id == b.id select a.x, b.y "
                     "insert expired events into O;",
                     [("B", 1000, (1, 10)), ("A", 1500, (1, 5)), ("B", 2000, (1, 11)),
                      ("B", 2600, (2, 0))])
    assert query(outputs, "q") == [(2600, (5, 10), True), (2600, (5, 11), True)]


def test_a_join_with_a_named_window_is_triggered_by_what_the_window_emits() -> None:
    outputs, _ = run(AB + "define window W (id int, y int) length(1);\n"
                     "from B insert into W;\n"
                     "@info(name='q') from A#window.length(2) as a join W as w on a.id == w.id "
                     "select a.x, w.y insert all events into O;",
                     [("A", 1, (1, 5)), ("B", 2, (1, 10)), ("B", 3, (2, 20)), ("A", 4, (2, 6))])
    assert query(outputs, "q") == [(2, (5, 10), False), (3, (5, 10), True),
                                   (4, (6, 20), False)]


def test_filters_on_a_named_window_side_are_dropped_as_in_the_reference() -> None:
    outputs, _ = run(AB + "define window W (id int, y int) length(2);\n"
                     "from B insert into W;\n"
                     "from A as a join W[y > 100] as w on a.id == w.id "
                     "select a.x, w.y insert into O;",
                     [("B", 1, (1, 10)), ("A", 2, (1, 5))])
    assert stream(outputs, "O") == [(2, (5, 10))]


def test_a_join_with_a_table_is_triggered_by_the_stream_only() -> None:
    outputs, _ = run(AB + "define table T (id int, y int); from B insert into T;\n"
                     "from T as t right outer join A#window.length(2) as a on a.id == t.id "
                     "select a.x, t.y insert into O;",
                     [("B", 1, (1, 10)), ("A", 2, (1, 5)), ("A", 3, (2, 6)),
                      ("B", 4, (2, 20)), ("B", 5, (1, 11)), ("A", 6, (1, 7))])
    assert stream(outputs, "O") == [(2, (5, 10)), (3, (6, None)), (6, (7, 10)), (6, (7, 11))]


def test_unsupported_joins_are_reported() -> None:
    with pytest.raises(UnsupportedQuery, match="both inputs"):
        build_runtime(check("define table T (a int); define table U (a int);\n"
                            "from T join U on T.a == U.a select T.a insert into O;"))
    with pytest.raises(UnsupportedQuery, match="aggregation joins with a stream only"):
        build_runtime(check(AB + "define aggregation G from B select id, sum(y) as t "
                            "group by id aggregate every sec ... min;\n"
                            "define table T (id int);\n"
                            "from T join G on T.id == G.id within 0L, 1000L per 'seconds' "
                            "select T.id, G.t insert into O;"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 2), st.integers(0, 9)),
                max_size=25),
       st.integers(1, 3), st.integers(1, 3),
       st.lists(st.integers(1, 6), max_size=10))
def test_length_window_join_matches_a_naive_model(events: list[tuple[str, int, int]],
                                                  left: int, right: int,
                                                  cuts: list[int]) -> None:
    app = (AB + f"@info(name='q') from A#window.length({left}) as a join "
           f"B#window.length({right}) as b on a.id == b.id "
           "select a.id, a.x, b.y insert all events into O;")
    inputs: list[Input] = [(s, 10 * (i + 1), (k, v)) for i, (s, k, v) in enumerate(events)]
    outputs, _ = run_cut(app, inputs, cuts)
    assert query(outputs, "q") == naive_join(inputs, left, right)


def test_a_long_length_window_join_matches_the_naive_model() -> None:
    """Long enough for the join's key index (``ProbeIndex``) to drop stale entries and to
    rebuild itself, with the windows many times smaller than the number of keys seen."""
    rng = random.Random(7)
    inputs: list[Input] = [(rng.choice("AB"), 10 * (i + 1), (rng.randrange(40), i))
                           for i in range(1500)]
    app = (AB + "@info(name='q') from A#window.length(5) as a join "
           "B#window.length(20) as b on a.id == b.id "
           "select a.id, a.x, b.y insert all events into O;")
    expected = naive_join(inputs, 5, 20)
    assert len(expected) > 500
    for cuts in ([], [700] * 3, [1] * 40):
        outputs, _ = run_cut(app, inputs, cuts)
        assert query(outputs, "q") == expected


def naive_join(inputs: Sequence[Input], left: int, right: int) -> list[tuple[int, Row, bool]]:
    """The reference's trigger semantics, written out: an arrival first pushes the oldest
    event of its own full window out (joined as expired), then joins as current."""
    windows: dict[str, list[tuple[int, int]]] = {"A": [], "B": []}
    sizes = {"A": left, "B": right}
    out: list[tuple[int, Row, bool]] = []
    for item in inputs:
        assert not isinstance(item, str)
        name, ts, (key, value) = item
        other = windows["B" if name == "A" else "A"]
        mine = windows[name]

        def joined(k: int, v: int, expired: bool, other: list[tuple[int, int]] = other,
                   name: str = name, ts: int = ts) -> None:
            for ok, ov in other:
                if ok == k:
                    row = (k, v, ov) if name == "A" else (ok, ov, v)
                    out.append((ts, row, expired))

        if len(mine) == sizes[name]:
            joined(*mine.pop(0), expired=True)
        mine.append((key, value))
        joined(key, value, expired=False)
    return out


# -- tables -----------------------------------------------------------------------------------

S = "define stream S (k string, v long); define stream Q (k string);\n"
QUERY_T = "from Q join T on Q.k == T.k select T.k, T.v insert into R;\n"


def test_rows_keep_insertion_order_and_duplicates_without_a_primary_key() -> None:
    outputs, store = run(S + "define table T (k string, v long); from S insert into T;\n"
                         + QUERY_T,
                         [("S", 1, ("a", 1)), ("S", 2, ("b", 2)), ("S", 3, ("a", 3)),
                          ("Q", 4, ("a",)), "from T select k, v"])
    assert stream(outputs, "R") == [(4, ("a", 1)), (4, ("a", 3))]
    assert store == [[("a", 1), ("b", 2), ("a", 3)]]


def test_delete_update_and_sequential_set() -> None:
    _, store = run(S + "define table T (k string, v long, w long);\n"
                   "from S select k, v, 0L as w insert into T;\n"
                   "from Q[k == 'del'] delete T on T.v < 2;\n"
                   "from Q[k != 'del'] update T set T.w = T.v, T.v = T.w + 100 on T.k == k;\n",
                   [("S", 1, ("a", 1)), ("S", 2, ("b", 2)), ("Q", 3, ("b",)),
                    ("Q", 4, ("del",)), "from T select k, v, w"])
    # 'set' runs in column order (v, then w), each value seeing the columns set before it.
    assert store == [[("b", 100, 100)]]


def test_update_or_insert_inserts_the_misses_of_a_chunk_once() -> None:
    _, store = run(S + "define table T (k string, v long);\n"
                   "from S#window.lengthBatch(3) select k, v update or insert into T "
                   "set T.v = T.v + v on T.k == k;\n",
                   [("S", 1, ("a", 1)), ("S", 2, ("a", 2)), ("S", 3, ("b", 5)),
                    ("S", 4, ("a", 10)), ("S", 5, ("c", 1)), ("S", 6, ("c", 1)),
                    "from T select k, v"])
    # Misses of one chunk are inserted after it; a later miss updates a pending insert.
    assert store == [[("a", 13), ("b", 5), ("c", 2)]]


def test_a_primary_key_drops_a_second_insert_of_a_key() -> None:
    _, store = run(S + "@PrimaryKey('k') define table T (k string, v long);\n"
                   "from S insert into T;\n",
                   [("S", 1, ("a", 1)), ("S", 2, ("a", 2)), "from T select k, v"])
    assert store == [[("a", 1)]]


def test_primary_key_update_or_insert_on_the_key_overwrites_ignoring_set() -> None:
    _, store = run(S + "@PrimaryKey('k') define table T (k string, v long);\n"
                   "from S update or insert into T set T.v = T.v + v on T.k == k;\n",
                   [("S", 1, ("a", 1)), ("S", 2, ("a", 2)), "from T select k, v"])
    assert store == [[("a", 2)]]


@pytest.mark.parametrize("keys", ["@PrimaryKey('k')", "@Index('v')"])
def test_an_indexed_tables_update_reads_no_row(keys: str) -> None:
    _, store = run(S + f"{keys} define table T (k string, v long, n long);\n"
                   "from S select k, v, 1L as n insert into T;\n"
                   "from Q update T set T.n = T.n + 1 on T.k == k;\n",
                   [("S", 1, ("a", 1)), ("Q", 2, ("a",)), "from T select k, n"])
    assert store == [[("a", None)]]


def test_primary_key_rows_iterate_in_hash_map_or_tree_map_order() -> None:
    strings = ["zz", "b", "Aa", "a"]
    _, store = run(S + "@PrimaryKey('k') define table T (k string, v long);\n"
                   "from S insert into T;\n",
                   [("S", i, (k, i)) for i, k in enumerate(strings)] + ["from T select k"])
    # HashMap buckets of the string hashes: zz (3904) and Aa (2112) in 0, a in 1, b in 2.
    assert store == [[("zz",), ("Aa",), ("a",), ("b",)]]
    table = InMemoryTable("N", [Attribute("id", AttrType.LONG)], primary_key=[0])
    table.insert([(30,), (-5,), (7,)])
    assert table.rows() == [(-5,), (7,), (30,)]


def test_in_table_filters_by_any_matching_row() -> None:
    outputs, _ = run(S + "define table T (k string, v long); from S[v > 0] insert into T;\n"
                     "from Q[k == T.k in T] select k insert into R;\n",
                     [("S", 1, ("a", 1)), ("Q", 2, ("a",)), ("Q", 3, ("b",))])
    assert stream(outputs, "R") == [(2, ("a",))]


def test_table_state_is_plain_data_in_the_snapshot() -> None:
    analyzed = check(S + "@PrimaryKey('k') define table T (k string, v long);"
                     "from S insert into T;")
    runtime = build_runtime(analyzed)
    runtime.process([InputEvent(0, 1, "S", ("a", 1))])
    state = pickle.loads(runtime.snapshot())
    assert state["tables"]["T"]["keyed"] == [("a", 0, ("a", 1))]


# -- on-demand queries ------------------------------------------------------------------------

STAFF = ("define stream E (name string, dept string, salary double);\n"
         "define table T (name string, dept string, salary double); from E insert into T;\n"
         "define window W (name string, dept string, salary double) length(2);"
         "from E insert into W;\n")
STAFF_ROWS: list[Input] = [("E", 1, ("ann", "eng", 100.0)), ("E", 2, ("bob", "ops", 80.0)),
                           ("E", 3, ("cat", "eng", 120.0))]


@pytest.mark.parametrize(("text", "rows"), [
    ("from T on salary > 90.0 select name", [("ann",), ("cat",)]),
    ("from T select dept, sum(salary) as s, count() as n group by dept",
     [("eng", 220.0, 2), ("ops", 80.0, 1)]),
    ("from T select count() as n", [(3,)]),
    ("from T on salary > 1000.0 select count() as n", []),
    ("from T select name order by salary desc limit 2", [("cat",), ("ann",)]),
    ("from T select name order by salary offset 1", [("ann",), ("cat",)]),
    ("from T select dept, max(salary) as m group by dept having m > 90.0", [("eng", 120.0)]),
    ("from T as t on t.dept == 'ops'", [("bob", "ops", 80.0)]),
    ("from W select name", [("bob",), ("cat",)]),
])
def test_finds(text: str, rows: list[Row]) -> None:
    _, store = run(STAFF, STAFF_ROWS + [text])
    assert store == [rows]


def test_mutations_return_no_rows_and_change_the_table() -> None:
    _, store = run(STAFF, STAFF_ROWS + [
        "delete T on T.dept == 'ops'",
        "update T set T.salary = 1.0 on T.name == 'ann'",
        "select 'dan' as name, 'ops' as dept, 5.0 as salary insert into T",
        "select 'cat' as name, 'eng' as dept, 7.0 as salary "
        "update or insert into T set T.salary = salary on T.name == name",
        "from T select name, salary"])
    assert store == [[], [], [], [], [("ann", 1.0), ("cat", 7.0), ("dan", 5.0)]]


def test_invalid_on_demand_queries_raise() -> None:
    runtime = build_runtime(check(STAFF))
    with pytest.raises(SiddhiAppError):
        runtime.store_query("from Nope select x")


# -- partitions -------------------------------------------------------------------------------

P = "define stream S (k string, v int); define stream C (x int);\n"


def test_each_value_key_has_its_own_window_and_aggregates() -> None:
    outputs, _ = run(P + "partition with (k of S) begin "
                     "from S#window.length(2) select k, sum(v) as s insert into O; end;",
                     [("S", 1, ("a", 1)), ("S", 2, ("b", 10)), ("S", 3, ("a", 2)),
                      ("S", 4, ("a", 3)), ("S", 5, (None, 7))])
    assert stream(outputs, "O") == [(1, ("a", 1)), (2, ("b", 10)), (3, ("a", 3)),
                                    (4, ("a", 5))]


def test_an_event_goes_to_every_range_it_falls_in() -> None:
    outputs, _ = run(P + "partition with (v < 5 as 'lo' or v < 10 as 'mid' of S) begin "
                     "from S select v, count() as c insert into O; end;",
                     [("S", 1, ("a", 1)), ("S", 2, ("a", 7)), ("S", 3, ("a", 20))])
    assert stream(outputs, "O") == [(1, (1, 1)), (1, (1, 1)), (2, (7, 2))]


def test_inner_streams_stay_within_their_key() -> None:
    outputs, _ = run(P + "partition with (k of S) begin "
                     "from S select k, v insert into #I; "
                     "from #I#window.lengthBatch(2) select k, sum(v) as s insert into O; end;",
                     [("S", 1, ("a", 1)), ("S", 2, ("b", 2)), ("S", 3, ("a", 3)),
                      ("S", 4, ("b", 4))])
    assert stream(outputs, "O") == [(3, ("a", 4)), (4, ("b", 6))]


def test_an_unpartitioned_stream_reaches_every_existing_key_only() -> None:
    outputs, _ = run(P + "partition with (k of S) begin "
                     "from S select k insert into Seen; "
                     "from C select x, count() as n insert into O; end;",
                     [("C", 1, (0,)), ("S", 2, ("b", 0)), ("S", 3, ("a", 0)), ("C", 4, (1,)),
                      ("C", 5, (2,))])
    # keys in HashSet order: 'a' (bucket 1) before 'b' (bucket 2)
    assert stream(outputs, "O") == [(4, (1, 1)), (4, (1, 1)), (5, (2, 2)), (5, (2, 2))]


def test_keys_have_their_own_timers_and_equal_due_times_fire_one_key_per_move() -> None:
    outputs, _ = run(P + "partition with (k of S) begin @info(name='q') "
                     "from S#window.time(1 sec) select k, count() as c "
                     "insert all events into O; end;",
                     [("S", 1000, ("b", 0)), ("S", 1000, ("a", 0)), ("S", 2500, ("c", 0)),
                      ("S", 2600, ("c", 0))])
    # Both keys expire at 2000; the reference's TreeMultimap keeps one state per due time.
    assert stream(outputs, "O") == [(1000, ("b", 1)), (1000, ("a", 1)), (2500, ("a", 0)),
                                    (2500, ("c", 1)), (2600, ("b", 0)), (2600, ("c", 2))]


def test_a_join_inside_a_partition_joins_within_the_key() -> None:
    outputs, _ = run(AB + "partition with (id of A, id of B) begin "
                     "from A#window.length(3) as a join B#window.length(3) as b "
                     "on a.x == b.y select a.id, a.x insert into O; end;",
                     [("A", 1, (1, 5)), ("B", 2, (2, 5)), ("B", 3, (1, 5))])
    assert stream(outputs, "O") == [(3, (1, 5))]


def test_a_partition_reading_its_own_output_switches_keys_and_back() -> None:
    outputs, _ = run(P + "define stream X (k string, v int);\n"
                     "partition with (k of S, k of X) begin "
                     "from S select 'other' as k, v insert into X; "
                     "from X select k, count() as n insert into O; "
                     "from S select k, count() as n insert into N; end;",
                     [("S", 1, ("a", 1)), ("S", 2, ("a", 2))])
    assert stream(outputs, "O") == [(1, ("other", 1)), (2, ("other", 2))]
    assert stream(outputs, "N") == [(1, ("a", 1)), (2, ("a", 2))]


def test_keys_are_created_on_their_first_event() -> None:
    analyzed = check(P + "partition with (k of S) begin from S#window.length(2) "
                     "select k insert into O; end;")
    runtime = build_runtime(analyzed)
    runtime.process([InputEvent(0, 1, "S", ("a", 1)), InputEvent(1, 2, "S", ("b", 1))])
    state = pickle.loads(runtime.snapshot())
    assert sorted(state["partitions"][0]["instances"]) == ["a", "b"]


def test_a_named_window_filled_and_read_inside_a_partition_is_the_apps_one_window() -> None:
    """``TimeBatchWindowTestCase.timeWindowBatchTest9``: queries of every key insert into
    the app's one ``timeBatch`` window, whose batches reach the partition routed by
    ``symbol of cacheWindow`` (6 events out of 6 in, each batch when the next event moves
    the clock past its end)."""
    app = ("define stream S (symbol string, price float, volume int);\n"
           "define window W (symbol string, price float, volume int) timeBatch(3 sec);\n"
           "partition with (symbol of S, symbol of W) begin "
           "from S select * insert into W; "
           "@info(name='q') from W select symbol, count() as n insert into O; end;")
    inputs: list[Input] = [("S", 0, ("IBM", 700.0, 0)), ("S", 1, ("WSO2", 60.5, 1)),
                           ("S", 4500, ("WSO2", 60.5, 1)), ("S", 4501, ("II", 60.5, 1)),
                           ("S", 7500, ("TT", 60.5, 1)), ("S", 7501, ("YY", 60.5, 1)),
                           ("S", 12000, ("ZZ", 60.5, 1))]
    outputs, _ = run(app, inputs)
    # Each key counts its own events; the window's output carries its expired events too,
    # so WSO2's first event leaves its count before its second arrives.
    assert stream(outputs, "O") == [(0, ("IBM", 1)), (1, ("WSO2", 1)), (4500, ("WSO2", 1)),
                                    (4501, ("II", 1)), (7500, ("TT", 1)), (7501, ("YY", 1))]


def test_a_named_window_inside_a_partition_reaches_every_key_and_only_probes_a_join() -> None:
    """A window the partition does not partition goes to every existing key, like any such
    stream; a join inside the partition finds the window's contents but is not triggered by
    them (the reference's partition only routes a join's ``DEFAULT`` inputs)."""
    app = ("define stream A (k string, v int); define stream B (k string, v int);\n"
           "define window W (k string, v int) length(3);\n"
           "from A insert into W;\n"
           "partition with (k of B) begin "
           "@info(name='j') from B#window.length(1) join W on B.k == W.k "
           "select B.k, B.v as bv, W.v as wv insert into J; "
           "@info(name='r') from W select k, v insert into R; end;")
    outputs, _ = run(app, [("A", 1, ("x", 1)), ("B", 2, ("x", 10)), ("A", 3, ("x", 2)),
                           ("B", 4, ("y", 20)), ("A", 5, ("y", 3)), ("B", 6, ("y", 30))])
    assert stream(outputs, "J") == [(2, ("x", 10, 1)), (6, ("y", 30, 3))]
    assert stream(outputs, "R") == [(3, ("x", 2)), (5, ("y", 3)), (5, ("y", 3))]


def test_a_join_probing_by_its_equality_keeps_nulls_and_the_rest_of_the_condition() -> None:
    """The ``==`` conjunct narrows the candidates (``JoinSide.probe``); a null key matches
    nothing (Siddhi's compare with null is false), so an outer join pads it, and the other
    conjuncts still decide among the candidates, in window order."""
    outputs, _ = run(AB + "from A#window.length(3) left outer join B#window.length(4) "
                     "on A.id == B.id and A.x < B.y select A.id, A.x, B.y insert into O;",
                     [("B", 1, (1, 10)), ("B", 2, (None, 10)), ("B", 3, (1, 3)),
                      ("B", 4, (1, 20)), ("A", 5, (1, 5)), ("A", 6, (None, 1))])
    assert stream(outputs, "O") == [(5, (1, 5, 10)), (5, (1, 5, 20)), (6, (None, 1, None))]


def test_a_value_partition_may_be_split_over_spark_state_keys_only_when_nothing_crosses_keys(
        ) -> None:
    """``partition_attributes``: the partition value can be the Spark key when every runtime
    query is in one value partition over input streams, with no global state or timers."""
    pattern = ("partition with (k of S) begin from every e1=S -> e2=S[k == e1.k and v > e1.v] "
               "within 1 sec select e1.v as a, e2.v as b insert into O; end;")
    cases = {
        pattern: {"S": "k"},
        "partition with (k of S) begin from S#window.length(2) select k, sum(v) as s "
        "insert into #I; from #I select k, s insert into O; end;": {"S": "k"},
        # Not split: a timer, a range, a stream read unpartitioned, a table, a query outside.
        "partition with (k of S) begin from S#window.time(1 sec) select k insert into O; end;":
            None,
        "partition with (v < 5 as 'lo' of S) begin from S select v insert into O; end;": None,
        "partition with (k of S) begin from C select x insert into O; end;": None,
        "define table T (k string);\n" + pattern: None,
        pattern + "\nfrom S#window.length(2) select count() as n insert into N;": None,
    }
    for app, expected in cases.items():
        analyzed = check("@app:playback\n" + P + app)
        runtime_queries = [q.id for q in analyzed.queries]
        assert partition_attributes(analyzed, runtime_queries, ["S", "C"]) == expected, app


def test_a_partition_after_queries_is_found_by_its_element_index() -> None:
    """A query's ``partition`` is the partition's place among the app's elements, not in
    ``analyzed.partitions``: with queries before it, an absent pattern over the partition's
    inner stream, its runtime split by partition value and the planner's pattern keys all
    find the right partition (an IndexError before), and the partition's outputs are those
    of the same partition written first."""
    partition = """partition with (k of S) begin
    @info(name='inner') from S select k, v insert into #Inner;
    @info(name='absent') from e1=#Inner[v > 1] -> not #Inner[v > e1.v] for 1 sec
    select e1.k, e1.v insert into Calm;
    @info(name='rise') from every e1=S -> e2=S[v > e1.v] within 2 sec
    select e1.k, e2.v insert into Rise;
end;
partition with (k of S) begin
    @info(name='top') from S#window.length(2) select k, max(v) as m insert into Top;
end;
"""
    before = "@info(name='first') from S[v > 100] select k insert into Big;\n"
    streams = "define stream S (k int, v double);\ndefine stream C (k int);\n"
    inputs: list[Input] = [("S", ts, (k, v)) for ts, k, v in
                           [(1_000, 1, 2.0), (1_500, 2, 5.0), (1_700, 1, 3.0),
                            (4_000, 2, 1.0), (6_000, 1, 0.5), (9_000, 2, 200.0)]]
    later = run(streams + before + partition, inputs)[0]
    first = run(streams + partition + before, inputs)[0]
    for name in ("Calm", "Rise", "Top"):
        assert stream(later, name) == stream(first, name) != []
    analyzed = check("@app:playback\n" + streams + before + partition)
    assert partition_attributes(analyzed, ["top"], ["S"]) == {"S": "k"}
    from eddy.engine.compile.operator_facts import physical_plan
    from eddy.engine.spark.row_layout import input_layout

    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    assert plan.choice("first").operator == "spark-sql"
