"""Running a columnar operator and the per-event runtime over the same events, for the
tests that hold one against the other: both give ``(seq, ts, position, values)`` rows."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from eddy.engine.operators.columnar_expressions import EXPIRED, POSITION
from eddy.engine.operators.runtime_operator import run_batch
from eddy.engine.spark.row_layout import SEQ, TS
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
