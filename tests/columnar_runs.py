"""Running a columnar operator and the per-event runtime over the same events, for the
tests that hold one against the other: both give ``(seq, ts, position, values)`` rows."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from eddy.engine.operators.columnar_expressions import (
    EXPIRED,
    POSITION,
    column_values,
    compile_columnar,
    evaluate,
    truthy,
)
from eddy.engine.operators.followed_by.matching import FIRST_EVENT, PARTITION, SIDE_FLAGS
from eddy.engine.operators.followed_by.spark import PatternStates
from eddy.engine.operators.runtime_operator import run_batch
from eddy.engine.spark.row_layout import SEQ, TS
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.scope import Scope
from eddy.lang.semantic import AnalyzedApp
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, sort_outputs

Output = tuple[int, int, int, tuple[Any, ...]]


def by_operator(process: Callable[[Any, Any, pd.DataFrame], tuple[pd.DataFrame, Any]],
                spec: Any, state: Any, frame: pd.DataFrame, cuts: Sequence[int],
                width: int, *, expired: bool = False) -> list[Output]:
    """``frame`` through ``process`` in micro-batches of the ``cuts`` sizes (then the rest),
    the state carried from batch to batch; with ``expired`` each output's values end with
    whether it is an expired event."""
    outputs, start, sizes = [], 0, list(cuts)
    seq = frame[SEQ].to_numpy() if len(frame) else []
    while start < len(frame):
        stop = start + (sizes.pop(0) if sizes else len(frame))
        while 0 < stop < len(frame) and seq[stop] == seq[stop - 1]:
            stop += 1  # an event's rows (a self join's two) are in one micro-batch
        out, state = process(spec, state, frame.iloc[start:stop].reset_index(drop=True))
        for row in out.to_dict("records"):
            data = tuple(plain(row[f"o{i}"]) for i in range(width))
            if expired:
                data += (bool(row[EXPIRED]),)
            outputs.append((row[SEQ], row[TS], row[POSITION], data))
        start = stop
    return outputs


def by_runtime(analyzed: AnalyzedApp, events: Sequence[InputEvent],
               target: str = "O", *, expired: bool = False) -> list[Output]:
    """The current events the per-event runtime inserts into ``target`` (heartbeats among
    ``events`` move its clock, as in a running group); with ``expired`` the expired ones
    too, each output's values ending with whether it is one."""
    outputs = sort_outputs(run_batch(build_runtime(analyzed), list(events)))
    result, position, last = [], 0, None
    for o in outputs:
        if (o.expired and not expired) or o.target != target:
            continue
        position = position + 1 if o.seq == last else 0
        last = o.seq
        data = tuple(plain(v) for v in o.data)
        result.append((o.seq, o.ts, position, data + ((o.expired,) if expired else ())))
    return result


def plain(value: Any) -> Any:
    """A value as the runtime gives it (None for every kind of null, Python scalars)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


Holds = Callable[[int, Sequence[ast.Expression]], bool]
"""Whether an event passes ``filters`` as the pattern's state ``state`` (its first
argument) sees them."""


def state_rows(analyzed: AnalyzedApp, scope: Scope, events: Sequence[InputEvent],
               streams: Sequence[str], partition: Mapping[str, str],
               attributes: Mapping[str, tuple[str, str]],
               flags: Callable[[InputEvent, Holds], dict[str, bool]],
               partition_column: str) -> pd.DataFrame:
    """The rows Spark hands a pattern or sequence operator (what its Spark side computes in
    the JVM): the events of ``streams`` (the streams share attribute names), with their
    ``flags`` (the filters evaluated with the same columnar evaluator), the partition key
    (rows without one go nowhere) and the operator's ``attributes`` columns, typed as Arrow
    hands them to pandas."""
    kinds = {a.name: a.type for name in sorted(set(streams))
             for a in analyzed.streams[name].attributes}
    names = [a.name for a in analyzed.streams[streams[0]].attributes]
    rows: dict[str, list[Any]] = {SEQ: [], TS: [], partition_column: []}
    for event in events:
        if event.stream not in streams:
            continue
        values = dict(zip(names, event.data))
        key = None
        if partition:
            raw = values[partition[event.stream]]
            if raw is None:
                continue  # a null partition value goes nowhere
            key = raw if isinstance(raw, int) and not isinstance(raw, bool) else str(raw)
        columns = {n: column_values(pd.Series([values[n]], dtype=object), kinds[n])
                   for n in names}

        def holds(state: int, filters: Sequence[ast.Expression]) -> bool:
            current = scope.with_current(scope.sources[state])
            return all(bool(truthy(evaluate(compile_columnar(
                f, analyzed.type_of, lambda v: current.resolve(v).attribute.name),
                columns, 1))[0]) for f in filters)

        rows[SEQ].append(event.seq)
        rows[TS].append(event.ts)
        rows[partition_column].append(key)
        for name, flag in flags(event, holds).items():
            rows.setdefault(name, []).append(flag)
        for column, (stream, name) in attributes.items():
            rows.setdefault(column, []).append(values[name] if stream == event.stream else None)
    frame = pd.DataFrame(rows)
    for column, (_, name) in attributes.items():
        if column not in frame:
            frame[column] = pd.Series(dtype=object)
        if kinds[name] is AttrType.DOUBLE:
            frame[column] = frame[column].astype(np.float64)
        elif kinds[name] in (AttrType.INT, AttrType.LONG):
            frame[column] = frame[column].astype(np.float64 if frame[column].isna().any()
                                                 else np.int64)
    return frame


def pattern_state_rows(analyzed: AnalyzedApp, plan: PatternStates,
                       events: Sequence[InputEvent]) -> pd.DataFrame:
    """The rows Spark hands a followed-by or counting operator
    (:func:`~eddy.engine.operators.followed_by.spark.pattern_rows`)."""
    sides = [(plan.second, plan.second_filters)]
    if plan.right is not None:
        sides.append((plan.right, plan.right_filters))

    def flags(event: InputEvent, holds: Holds) -> dict[str, bool]:
        found = {FIRST_EVENT: event.stream == plan.first and holds(0, plan.first_filters)}
        for side, ((stream, filters), (of_stream, passes)) in enumerate(
                zip(sides, SIDE_FLAGS)):
            found[of_stream] = event.stream == stream
            found[passes] = event.stream == stream and holds(1 + side, filters)
        return found

    return state_rows(analyzed, plan.info.scope, events,
                      [plan.first, *(s for s, _ in sides)], plan.partition_attributes,
                      plan.attributes, flags, PARTITION)


@st.composite
def pattern_events(draw: st.DrawFn, streams: str = "AAB"
                   ) -> tuple[list[InputEvent], list[int]]:
    """Up to 60 events of ``streams`` (as often as each is named there: ``A`` twice as
    often as ``B`` by default; each ``(k, v, s)``, nulls among them), their times going
    back in half the draws, and micro-batch sizes: the input of the tests holding a
    pattern operator against the runtime."""
    ts, events = 10_000, []
    back = draw(st.booleans())
    for seq in range(draw(st.integers(0, 60))):
        ts += draw(st.integers(-900 if back else 0, 1200))
        stream = draw(st.sampled_from(streams))
        k = draw(st.sampled_from([None, 0, 1, 2, 2]))
        v = draw(st.sampled_from([None, -1.0, 0.0, 3.5, 9.0, 20.0]))
        s = draw(st.sampled_from([None, "x", "x", "y"]))
        events.append(InputEvent(seq, ts, stream, (k, v, s)))
    return events, draw(st.lists(st.integers(1, 12), max_size=6))


def random_events(seed: int, count: int, streams: str, keys: int) -> list[InputEvent]:
    """``count`` events of ``streams`` (each ``(k, v, s)``), timestamps going back now and
    then, some keys null: the input of the tests that run a plan on Spark."""
    rng = np.random.default_rng(seed)
    events, ts = [], 10_000
    for seq in range(count):
        ts += int(rng.integers(-300 if seq % 50 > 40 else 0, 700))
        k = None if seq % 37 == 0 else int(rng.integers(0, keys))
        events.append(InputEvent(seq, ts, streams[int(rng.integers(0, len(streams)))],
                                 (k, float(rng.normal(10, 8)), "xy"[seq % 2])))
    return events


def replay_equals_runtime(analyzed: AnalyzedApp, events: Sequence[InputEvent]) -> None:
    """``eddy.replay`` of ``events`` on Spark, in micro-batches of 25 events, inserts into
    ``O`` what the per-event runtime inserts (and something)."""
    from eddy.engine.run.replay import replay

    inputs = [{"stream": e.stream, "data": list(e.data), "timestamp": e.ts} for e in events]
    result = replay(analyzed.source, inputs, batch_size=25)
    expected = [(o[1], o[3]) for o in by_runtime(analyzed, events)]
    assert [(e["timestamp"], tuple(e["data"])) for e in result.streams["O"]] == expected
    assert expected
