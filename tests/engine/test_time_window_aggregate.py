"""The vectorised ``#window.time`` aggregation gives exactly the per-event runtime's outputs.

Random inputs (timestamps that jump back and tie, null and NaN values, infinities, -0.0,
groups that empty and come back), cut into random micro-batches with the state pickled in
between, against the runtime fed the same events; floats compare bit for bit.
"""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pytest

from eddy.engine.layout import input_layout
from eddy.engine.runtime.driver import run_in_batches
from eddy.engine.runtime.model import InputEvent
from eddy.engine.time_window_aggregate import (
    WindowState,
    output_columns,
    plan_time_window,
    process,
)
from eddy.lang import check

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
]
VALUES = [None, 0.0, -0.0, 1.5, -2.25, 0.1, 0.2, 0.3, 1e16, -1e16, 3.0, math.inf, -math.inf,
          math.nan, 7.0]


def _events(rng: random.Random, count: int) -> list[InputEvent]:
    events, ts = [], 0
    for seq in range(count):
        step = rng.choice([0, 0, 1, 1, 2, 3, 5, 8, 40, -3, -25])
        ts = max(0, ts + step) if rng.random() > 0.02 else rng.randint(0, 50)
        value = rng.choice(VALUES)
        data = (rng.choice(["a", "b", "c", None]), rng.choice([1, 2, 3, None]),
                None if value is None or value != value else value,  # as to_events has it
                rng.choice([10, 11, 2**60 + 1, None]))
        events.append(InputEvent(seq, ts, "S", data))
    return events


def _passes(query: str, data: tuple[object, ...]) -> bool:
    k, r, v, _ = data
    if "[v > 0]" in query:
        return v is not None and v > 0  # type: ignore[operator]
    if "[r >= 2" in query:
        return r is not None and r >= 2 and k != "b"  # type: ignore[operator]
    return True


def _vectorised(query: str, events: list[InputEvent], cuts: list[int]) -> list[tuple]:
    analyzed = check(HEADER + query)
    layout = input_layout(analyzed)
    plan = plan_time_window(analyzed, analyzed.queries, layout)
    assert plan is not None, query
    spec = plan.spec
    column = dict(zip(layout.columns("S"), range(4)))
    types = {c: a.type.value for c, a in zip(layout.columns("S"), layout.attributes("S"))}
    state = WindowState()
    results = []
    for lo, hi in zip([0, *cuts], [*cuts, len(events)]):
        batch = events[lo:hi]
        state = pickle.loads(pickle.dumps(state))
        ts = np.array([e.ts for e in batch], np.int64)
        passing = np.array([_passes(query, e.data) for e in batch], bool)

        def col(name: str) -> np.ndarray:
            raw = [e.data[column[name]] for e in batch]
            if types[name] in ("INT", "LONG") and None in raw:
                return np.array([np.nan if x is None else float(x) for x in raw])
            if types[name] in ("INT", "LONG"):
                return np.array(raw, np.int64)
            if types[name] == "DOUBLE":
                return np.array([np.nan if x is None else x for x in raw], np.float64)
            return np.array(raw, object)

        keys = [col(c) for c in spec.group_columns]
        values = np.stack([col(c).astype(np.float64) for c in spec.argument_columns], axis=1) \
            if spec.argument_columns else np.empty((len(batch), 0))
        outputs = process(state, spec, ts, passing, keys, values)
        chosen = [batch[i] for i in outputs.rows]
        columns = output_columns(spec, outputs,
                                 lambda name: [e.data[column[name]] for e in chosen])
        for j, event in enumerate(chosen):
            data = []
            for i, out in enumerate(spec.outputs):
                value = columns[f"o{i}"][j]
                if out.kind in ("avg", "sum"):
                    value = math.nan if columns[f"o{i}_nan"][j] else \
                        (None if math.isnan(value) else float(value))
                elif out.kind == "count":
                    value = int(value)
                data.append(value)
            results.append((event.seq, event.ts, _exact(data)))
    return results


def _exact(data: list[object] | tuple[object, ...]) -> tuple[str, ...]:
    return tuple(repr(x) for x in data)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", range(6))
def test_same_outputs_as_the_runtime(query: str, seed: int) -> None:
    rng = random.Random(seed * 1000 + QUERIES.index(query))
    events = _events(rng, rng.choice([40, 300, 1500]))
    cuts = sorted(rng.sample(range(1, len(events)), rng.randint(0, min(12, len(events) - 1))))
    analyzed = check(HEADER + query)
    expected = [(o.seq, o.ts, _exact(o.data)) for o in run_in_batches(analyzed, events)]
    orders = {o.order for o in run_in_batches(analyzed, events)}
    assert orders <= {(1, 0, 0, 0, 0)}
    assert _vectorised(query, events, cuts) == expected


@pytest.mark.parametrize("query", [
    "from S#window.time(20) select r, max(v) as m group by r insert into O;",
    "from S#window.length(20) select r, avg(v) as a group by r insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by r insert all events into O;",
    "from S#window.time(20) select r, sum(r) as s group by r insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by v insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by r having a > 1 insert into O;",
    "from S#window.time(20) select r, avg(v) as a group by r output last every 3 events "
    "insert into O;",
    "from S[currentTimeMillis() > 0]#window.time(20) select r, avg(v) as a group by r "
    "insert into O;",
    "from S#window.time(20)[v > 0] select r, avg(v) as a group by r insert into O;",
    "from S#window.time(20) select r, avg(v) + 1 as a group by r insert into O;",
])
def test_other_shapes_stay_in_the_runtime(query: str) -> None:
    analyzed = check(HEADER + query)
    assert plan_time_window(analyzed, analyzed.queries, input_layout(analyzed)) is None


def test_a_second_query_keeps_the_group_in_the_runtime() -> None:
    analyzed = check(HEADER + QUERIES[0] + "\nfrom S#window.length(2) select r insert into P;")
    assert plan_time_window(analyzed, analyzed.queries, input_layout(analyzed)) is None


@pytest.mark.parametrize("batch_size", [0, 60])
def test_through_spark_as_the_runtime(batch_size: int, spark: object) -> None:
    from eddy.engine.layout import decode_data, encode_data
    from eddy.engine.replay import replay
    from eddy.engine.runtime.driver import collect

    query = QUERIES[1]
    rng = random.Random(99)
    events = _events(rng, 300)
    inputs = [{"stream": "S", "timestamp": e.ts, "data": list(e.data)} for e in events]
    analyzed = check(HEADER + query)
    expected, _ = collect(analyzed, run_in_batches(analyzed, events))
    result = replay(HEADER + query, inputs, batch_size=batch_size)
    assert plan_time_window(analyzed, analyzed.queries, input_layout(analyzed)) is not None
    # what the runtime's outputs look like after the writer: non-finite doubles as text
    assert [(e["timestamp"], _exact(e["data"])) for e in result.streams["O"]] == \
        [(e["timestamp"], _exact(decode_data(encode_data(e["data"])))) for e in expected["O"]]
