"""The vectorised window operators give exactly the per-event runtime's outputs.

Random inputs (timestamps that jump back, tie and leap over many batch ends, null and NaN
values, infinities, -0.0, groups that empty and come back), cut into random micro-batches
with the state pickled in between, against the runtime fed the same events: the same
outputs with the same ``(_seq, _order)``, floats equal bit for bit.
"""

from __future__ import annotations

import math
import pickle
import random
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy.engine.operators.window_aggregates import (
    expiring,
    plan_window_aggregate,
    sliding_time,
    time_batch,
)
from eddy.engine.operators.window_aggregates.spark import output_columns
from eddy.engine.spark.row_layout import input_layout
from eddy.lang import check
from eddy.runtime.driver import run_in_batches
from eddy.runtime.model import InputEvent

HEADER = "@app:playback\ndefine stream S (k string, r int, v double, n long);\n"
QUERIES = [
    "from S#window.time(20) select r, avg(v) as a group by r insert into O;",
    "from S#window.time(7) select k, sum(v) as s, count() as c, avg(v) as a group by k "
    "insert into O;",
    "from S#window.time(30) select k, r, avg(n) as a, count(v) as c group by k, r "
    "insert into O;",
    "from S[v > 0]#window.time(15) select avg(v) as a, sum(v) as s, n insert into O;",
    "from S[r >= 2 and not (k == 'b')]#window.time(1 sec) select k, avg(r) as a "
    "group by k insert into O;",
    "from S#window.time(3) select n, count() as c group by n insert into O;",
    "from S#window.timeBatch(20) select r, count() as c group by r insert into O;",
    "from S#window.timeBatch(9) select k, sum(v) as s, avg(v) as a, n, count() as c "
    "group by k insert into O;",
    "from S[v > 0]#window.timeBatch(30) select avg(v) as a, count() as c, k insert into O;",
    "from S#window.timeBatch(4) select k, r, avg(r) as a group by r, k insert into O;",
    "from S#window.timeBatch(50) select k, r group by k insert into O;",
    "from S#window.time(20) select avg(v) as a, r, n insert all events into O;",
    "from S#window.time(7) select k, sum(v) as s, count() as c, avg(v) as a group by k "
    "insert all events into O;",
    "from S[v > 0]#window.time(15) select avg(v) as a, sum(v) as s, n insert expired events "
    "into O;",
    "from S#window.time(30) select k, r, avg(n) as a, count(v) as c group by k, r "
    "insert expired events into O;",
    "from S[r >= 2 and not (k == 'b')]#window.time(5) select k, avg(r) as a, n "
    "group by k insert all events into O;",
    "from S#window.time(0) select r, count() as c, avg(v) as a insert all events into O;",
    "from S#window.length(5) select r, avg(v) as a group by r insert into O;",
    "from S#window.length(1) select avg(v) as a, sum(v) as s, k insert all events into O;",
    "from S[v > 0]#window.length(30) select k, count() as c, avg(v) as a group by k "
    "insert all events into O;",
    "from S#window.length(3) select r, sum(v) as s, n group by r insert expired events "
    "into O;",
]
VALUES = [None, 0.0, -0.0, 1.5, -2.25, 0.1, 0.2, 0.3, 1e16, -1e16, 3.0, math.inf, -math.inf,
          math.nan, 7.0]


def _events(rng: random.Random, count: int) -> list[InputEvent]:
    events, ts = [], 0
    for seq in range(count):
        step = rng.choice([0, 0, 1, 1, 2, 3, 5, 8, 40, -3, -25])
        ts = max(0, ts + step) if rng.random() > 0.02 else rng.randint(0, 50)
        value = rng.choice(VALUES)
        # NaN arrives as null (as to_events has it); longs stay exact as doubles, since Spark
        # hands a long column with nulls to pandas as doubles, on both paths
        data = (rng.choice(["a", "b", "c", None]), rng.choice([1, 2, 3, None]),
                None if value is None or value != value else value,
                rng.choice([10, 11, 2**52 + 1, None]))
        events.append(InputEvent(seq, ts, "S", data))
    return events


def _passes(query: str, data: tuple[Any, ...]) -> bool:
    k, r, v, _ = data
    if "[v > 0]" in query:
        return v is not None and v > 0
    if "[r >= 2" in query:
        return r is not None and r >= 2 and k != "b"
    return True


def _column(batch: list[InputEvent], position: int, type_name: str) -> np.ndarray:
    """A column as Spark hands it to pandas: ints with nulls as floats, null doubles NaN."""
    raw = [e.data[position] for e in batch]
    if type_name in ("INT", "LONG"):
        return np.array([np.nan if x is None else float(x) for x in raw]) if None in raw \
            else np.array(raw, np.int64)
    if type_name == "DOUBLE":
        return np.array([np.nan if x is None else x for x in raw], np.float64)
    return np.array(raw, object)


def _vectorised(query: str, events: list[InputEvent], cuts: list[int],
                buckets: int = 0, passes: Any = None) -> list[tuple[Any, ...]]:
    """The operator's outputs; with ``buckets``, run once per hash bucket of the group key
    on that bucket's rows only, each row carrying the stream's running clock (as the split
    Spark operator does)."""
    if buckets:
        clock = np.maximum.accumulate(np.array([e.ts for e in events], np.int64))
        analyzed = check(HEADER + query)
        spec = plan_window_aggregate(analyzed, analyzed.queries, input_layout(analyzed)).spec
        position = [int(c.split("_")[1]) for c in spec.group_columns]
        bucket_of = [hash(tuple(e.data[p] for p in position)) % buckets for e in events]
        results = []
        for b in range(buckets):
            mine = [i for i, x in enumerate(bucket_of) if x == b]
            mine_cuts = sorted({int(np.searchsorted(mine, c)) for c in cuts} - {0, len(mine)})
            results += _vectorised_one(query, [events[i] for i in mine], mine_cuts,
                                   clocks=[int(clock[i]) for i in mine])
        return sorted(results)
    return _vectorised_one(query, events, cuts, passes=passes)


def _vectorised_one(query: str, events: list[InputEvent], cuts: list[int],
                    clocks: list[int] | None = None,
                    passes: Any = None) -> list[tuple[Any, ...]]:
    analyzed = check(HEADER + query)
    layout = input_layout(analyzed)
    plan = plan_window_aggregate(analyzed, analyzed.queries, layout)
    assert plan is not None, query
    spec = plan.spec
    module: Any = expiring if spec.expiring else \
        sliding_time if spec.window == "time" else time_batch
    state: Any = expiring.ExpiringState() if spec.expiring else \
        sliding_time.SlidingState() if spec.window == "time" else time_batch.BatchState()
    position = dict(zip(layout.columns("S"), range(4)))
    types = {c: a.type.value for c, a in zip(layout.columns("S"), layout.attributes("S"))}
    results = []
    for lo, hi in zip([0, *cuts], [*cuts, len(events)]):
        batch = events[lo:hi]
        state = pickle.loads(pickle.dumps(state))

        def column(name: str, batch: list[InputEvent] = batch) -> np.ndarray:
            return _column(batch, position[name], types[name])

        values = np.stack([column(c).astype(np.float64) for c in spec.argument_columns],
                          axis=1) if spec.argument_columns else np.empty((len(batch), 0))
        selected = {o.column: column(o.column) for o in spec.outputs
                    if o.kind == "var" and o.column}
        args = (state, spec, np.array([e.ts for e in batch], np.int64),
                np.array([(passes or (lambda d: _passes(query, d)))(e.data) for e in batch],
                         bool),
                [column(c) for c in spec.group_columns], values, selected)
        emitted = module.process(*args) if clocks is None else \
            sliding_time.process(*args, clock=np.array(clocks[lo:hi], np.int64))
        columns = output_columns(spec.outputs, emitted)
        for j, row in enumerate(emitted.rows):
            data = []
            for i, out in enumerate(spec.outputs):
                value = columns[f"o{i}"][j]
                if out.kind in ("avg", "sum"):
                    value = None if value is pd.NA else float(value)
                elif out.kind == "count":
                    value = int(value)
                elif value is None or (not isinstance(value, str) and pd.isna(value)):
                    value = None
                elif hasattr(value, "item"):
                    value = value.item()
                if out.type.value in ("INT", "LONG") and isinstance(value, float):
                    value = int(value)
                data.append(value)
            expired = emitted.expired is not None and bool(emitted.expired[j])
            if emitted.timer is not None and emitted.timer[j]:  # the window's timer
                order = (0, spec.scheduler, 0, 0, 0, int(emitted.positions[j]))
            elif spec.expiring:  # an input's chunk
                order = (1, 0, 0, 0, int(emitted.positions[j]))
            else:
                order = (1, 0, 0, 0, 0) if spec.window == "time" else \
                    (0, spec.scheduler, 0, 0, 0, int(emitted.positions[j]))
            results.append((batch[row].seq, order, int(emitted.ts[j]), _exact(data), expired))
    return sorted(results)


def _exact(data: list[Any] | tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(repr(x) for x in data)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", range(6))
def test_same_outputs_as_the_runtime(query: str, seed: int) -> None:
    rng = random.Random(seed * 1000 + QUERIES.index(query))
    events = _events(rng, rng.choice([40, 300, 1500]))
    cuts = sorted(rng.sample(range(1, len(events)), rng.randint(0, min(12, len(events) - 1))))
    analyzed = check(HEADER + query)
    expected = sorted((o.seq, o.order, o.ts, _exact(o.data), o.expired)
                      for o in run_in_batches(analyzed, events))
    assert _vectorised(query, events, cuts) == expected


SPLIT = [q for q in QUERIES if "time(" in q and "[" not in q.split("#")[0] and "group by" in q
         and " events into" not in q]


@pytest.mark.parametrize("query", SPLIT)
@pytest.mark.parametrize("seed", range(6))
def test_split_by_key_with_the_streams_clock(query: str, seed: int) -> None:
    """Each hash bucket alone, given the stream's running clock, emits exactly the
    runtime's outputs for its groups, however late the timestamps."""
    rng = random.Random(seed * 7919 + SPLIT.index(query))
    events = _events(rng, rng.choice([40, 300, 1500]))
    cuts = sorted(rng.sample(range(1, len(events)), rng.randint(0, min(12, len(events) - 1))))
    analyzed = check(HEADER + query)
    expected = sorted((o.seq, o.order, o.ts, _exact(o.data), o.expired)
                      for o in run_in_batches(analyzed, events))
    assert _vectorised(query, events, cuts, buckets=rng.choice([2, 3, 5])) == expected


@pytest.mark.parametrize("query", [
    "from S#window.time(20) select r, max(v) as m group by r insert into O;",
    "from S#window.length(20) select r, max(v) as a group by r insert into O;",
    "from S#window.length(0) select r, avg(v) as a group by r insert into O;",
    "from S#window.timeBatch(20) select r, avg(v) as a group by r insert all events into O;",
    "from S#window.time(20) select r, sum(r) as s group by r insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by v insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by r having a > 1 insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by r output last every 3 events "
    "insert into O;",
    "from S[currentTimeMillis() > 0]#window.time(20) select r, avg(v) as a group by r "
    "insert into O;",
    "from S#window.time(20)[v > 0] select r, avg(v) as a group by r insert into O;",
    "from S#window.time(20) select r, avg(v) + 1 as a group by r insert into O;",
    "from S#window.timeBatch(20, 0) select r, count() as c group by r insert into O;",
    "from S#window.timeBatch(20) select r, v insert into O;",
    "from S#window.timeBatch(20) select r, count() as c group by r insert expired events "
    "into O;",
])
def test_other_shapes_stay_in_the_runtime(query: str) -> None:
    analyzed = check(HEADER + query)
    assert plan_window_aggregate(analyzed, analyzed.queries, input_layout(analyzed)) is None


def test_a_second_stateful_query_keeps_the_group_in_the_runtime() -> None:
    analyzed = check(HEADER + QUERIES[0] + "\nfrom S#window.length(2) select r insert into P;")
    assert plan_window_aggregate(analyzed, analyzed.queries, input_layout(analyzed)) is None


@pytest.mark.parametrize("query", [QUERIES[1], QUERIES[7], QUERIES[12], QUERIES[17]])
@pytest.mark.parametrize("batch_size", [0, 60])
def test_through_spark_as_the_runtime(query: str, batch_size: int, spark: object) -> None:
    from eddy.engine.run.replay import replay
    from eddy.runtime.driver import collect

    events = _events(random.Random(99), 300)
    inputs = [{"stream": "S", "timestamp": e.ts, "data": list(e.data)} for e in events]
    analyzed = check(HEADER + query)
    assert plan_window_aggregate(analyzed, analyzed.queries, input_layout(analyzed)) is not None
    expected, _ = collect(analyzed, run_in_batches(analyzed, events))
    result = replay(HEADER + query, inputs, batch_size=batch_size)
    assert [(e["timestamp"], _exact(e["data"])) for e in result.streams["O"]] == \
        [(e["timestamp"], _exact(e["data"])) for e in expected["O"]]


@pytest.mark.parametrize("seed", range(3))
def test_the_spool_supplies_each_streams_running_clock(seed: int, tmp_path: Any) -> None:
    """Whatever range a task reads — across chunks, record batches and micro-batches — each
    row's ``_clock`` is the largest ``_ts`` of its stream's rows up to it."""
    import pyarrow as pa

    from eddy.engine.spark.row_layout import CLOCK, InputLayout
    from eddy.engine.spark.spool_source import SpoolStreamReader, _Range, append_chunk

    rng = np.random.default_rng(seed)
    layout = InputLayout.of({"A": (), "B": ()})
    total, seq = 0, 0
    streams: list[str] = []
    stamps: list[int] = []
    for _ in range(4):  # chunks of several record batches
        batches = []
        for _ in range(int(rng.integers(1, 4))):
            n = int(rng.integers(1, 40))
            names = rng.choice(["A", "B"], n).tolist()
            ts = rng.integers(0, 1000, n).tolist()
            table = layout.to_arrow([(seq + i, t, s, []) for i, (t, s) in
                                     enumerate(zip(ts, names))])
            batches += table.to_batches()
            streams += names
            stamps += ts
            seq += n
        append_chunk(tmp_path, pa.Table.from_batches(batches))
    total = seq
    expected = np.empty(total, np.int64)
    for name in ("A", "B"):
        rows = np.flatnonzero(np.array(streams) == name)
        expected[rows] = np.maximum.accumulate(np.array(stamps)[rows])
    reader = SpoolStreamReader(str(tmp_path), 0, 2, clock=True)
    for _ in range(10):
        lo, hi = sorted(int(x) for x in rng.integers(0, total + 1, 2))
        got = [b.column(CLOCK).to_pylist() for b in reader.read(_Range(lo, hi))]
        assert sum(got, []) == expected[lo:hi].tolist()


# -- expired events as outputs, on inputs and cuts hypothesis draws -------------------------

_FILTERS = {"": lambda data: True, "[v > 0]": lambda data: data[2] is not None and data[2] > 0}


@st.composite
def _expiring_cases(draw: st.DrawFn) -> tuple[str, list[InputEvent], list[int]]:
    """A sliding-window query that emits expired events (or a length window), events whose
    timestamps tie, jump and go back (a timer asked for late, expiry by an arrival), and
    micro-batch cuts."""
    window = draw(st.sampled_from(["time", "length"]))
    span = draw(st.integers(0, 12) if window == "time" else st.integers(1, 6))
    events = draw(st.sampled_from(["all", "expired", "current"] if window == "length"
                                  else ["all", "expired"]))
    condition = draw(st.sampled_from(sorted(_FILTERS)))
    grouped = draw(st.booleans())
    selection = draw(st.sampled_from(["avg(v) as a, sum(v) as s, count() as c", "v",
                                      "count() as c, r"]))
    query = (f"from S{condition}#window.{window}({span}) select "
             + ("k, " if grouped else "n, ") + selection
             + (" group by k" if grouped else "") + f" insert {events} events into O;")
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 9, 20, -2, -7, -30]),
                          min_size=1, max_size=60))
    rows, ts = [], 0
    for seq, step in enumerate(steps):
        ts = max(0, ts + step)
        value = draw(st.sampled_from([None, 0.0, 1.5, -2.25, 0.1, 1e16, -1e16, math.inf]))
        rows.append(InputEvent(seq, ts, "S", (draw(st.sampled_from(["a", "b", None])), 1,
                                               value, draw(st.sampled_from([10, None])))))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(rows) - 1)), max_size=6))
                  - {len(rows)})
    return query, rows, cuts


@given(_expiring_cases())
@settings(max_examples=150, deadline=None)
def test_expired_events_as_the_runtime_emits_them(
        case: tuple[str, list[InputEvent], list[int]]) -> None:
    """Which events expire on a timer and which on an arrival, the ``_order`` of each, what
    an expired event's output row reads: the runtime's, whatever the batch cuts."""
    query, events, cuts = case
    condition = next(c for c in _FILTERS if c and c in query) if "[" in query else ""
    analyzed = check(HEADER + query)
    expected = sorted((o.seq, o.order, o.ts, _exact(o.data), o.expired)
                      for o in run_in_batches(analyzed, events))
    assert _vectorised(query, events, cuts, passes=_FILTERS[condition]) == expected
