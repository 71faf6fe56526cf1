"""``#window.time`` queries with ``avg``/``sum``/``count`` per group, vectorised.

The per-event runtime pays ~5 µs of Python per event for
``from S#window.time(1 min) select k, avg(v) as a group by k insert into O``. Each output
of such a query is a function of a few running sums, so a micro-batch can be computed with
numpy (DESIGN.md §4) — if, and only if, the sums are computed in exactly the order the
runtime computes them. That order is:

- The clock is the largest timestamp seen so far (from 0), over every row the group's
  operator receives: at row ``s`` it is ``c_s = max(c_{s-1}, ts_s)``.
- A row that passes the query's filters enters the window after the window expired, at
  ``now = c_s``, every event at the head of its FIFO queue with ``ts <= c_s - span``. The
  queue is in arrival order and expiry stops at the first head that is still live, so
  element ``j`` leaves at the first step ``x_j`` after its arrival with ``c - span >= ts_j``
  *and* all elements before it gone: ``x = maximum.accumulate(f)`` with
  ``f_j = max(a_j + 1, searchsorted(c - span, ts_j))``. Timers expire the same elements
  earlier, at rows where nothing is added; the sums seen at an add do not change by that.
- Every aggregate state belongs to one group; per group the runtime applies, step by step,
  the removals due at that step (in queue order) and then the add. ``avg``/``sum`` keep
  ``[sum, count]`` with ``sum += v`` / ``sum -= v`` in doubles, so the outputs are exactly
  an in-order, left-to-right cumulative sum of ``+v`` and ``-v`` per group, which
  ``numpy.cumsum`` computes bit for bit (it accumulates sequentially) when each group's
  segment starts from that group's carried-over sum.
- A null (or, as the runtime's input conversion has it, NaN) argument changes nothing but
  still yields an output; ``count()`` counts every event in the window.
- Dropping a group whose states are back to fresh (the runtime's ``can_destroy``) is the
  same as keeping zeros; a group left with a rounding residue keeps it, here as there.

The outputs are exactly the runtime's (``tests/engine/test_time_window_aggregate.py``
compares them on random inputs with out-of-order timestamps, nulls, NaN and infinities)
and carry the same ``(_seq, _order)``: one emission per input, ``(1, query index, 0, 0, 0)``.
The state in Spark's state store is a few arrays: the clock, the window's contents and the
running sums per group.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from eddy.engine.layout import SEQ, STORE_STREAM, STREAM, TS, InputLayout, spark_type
from eddy.engine.runtime.query_builder import UnsupportedQuery
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.typecheck import constant_value

_PLAIN_TYPES = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE, AttrType.STRING, AttrType.BOOL)
_NUMERIC = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE)
_FILTER_NODES = (ast.Variable, ast.Constant, ast.BinaryOperation, ast.Not, ast.Negate,
                 ast.IsNull)
EVENT = "_event"  # the row is an event of the query's stream (not an on-demand query)
PASS = "_pass"    # ... and passes the filters in front of the window


@dataclass(frozen=True)
class Output:
    """One selected attribute: ``kind`` is ``var`` (the event's own value of ``column``),
    ``avg``/``sum`` (over argument ``argument``) or ``count``."""

    name: str
    type: AttrType
    kind: str
    column: str | None = None
    argument: int = -1


@dataclass(frozen=True)
class TimeWindowSpec:
    """Everything the operator needs, as plain data (it is pickled to Spark's workers)."""

    span: int
    group_columns: tuple[str, ...]
    argument_columns: tuple[str, ...]
    outputs: tuple[Output, ...]


@dataclass(frozen=True)
class TimeWindowPlan:
    """A query this module runs, and how it reads the group's input."""

    info: QueryInfo
    stream: str
    filters: tuple[ast.Expression, ...]
    spec: TimeWindowSpec


# -- which queries ------------------------------------------------------------------------------
def plan_time_window(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                     layout: InputLayout) -> TimeWindowPlan | None:
    """The plan when ``rest`` (the group's queries that are not native) is one query of the
    supported shape, else None: ``from S[f]#window.time(t) select … [group by …] insert
    into O`` with plain attributes, ``avg``/``sum`` of doubles (``avg`` also of ints),
    ``count()``; no ``having``/``order by``/``limit``/rate limiting; only current events;
    no tables, named windows or aggregations anywhere in the app."""
    if len(rest) != 1 or analyzed.partitions:
        return None
    if any(s.kind in ("table", "window", "aggregation") for s in analyzed.streams.values()):
        return None
    info = rest[0]
    query, selector = info.query, info.query.selector
    source = query.input
    if not (info.partition is None and isinstance(source, ast.SingleInputStream)
            and not source.inner and not source.fault
            and isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind == "stream" and query.output.event_type == "current"
            and query.output_rate is None and selector.having is None
            and not selector.order_by and selector.limit is None and selector.offset is None
            and selector.attributes is not None):
        return None
    stream = source.stream
    if stream not in dict(layout.streams) or not source.handlers:
        return None
    *filters, window = source.handlers
    if not (isinstance(window, ast.Window) and window.namespace is None
            and window.name == "time" and len(window.args) == 1
            and all(isinstance(f, ast.Filter) and _plain_filter(f.expression) for f in filters)):
        return None
    span = constant_value(window.args[0])
    if not isinstance(span, int) or isinstance(span, bool):
        return None
    columns = dict(zip((a.name for a in layout.attributes(stream)), layout.columns(stream)))
    types = {a.name: a.type for a in layout.attributes(stream)}

    def column_of(var: ast.Expression) -> str | None:
        if not isinstance(var, ast.Variable) or var.stream_index is not None:
            return None
        try:
            name = info.scope.resolve(var).attribute.name
        except Exception:  # noqa: BLE001 - anything unusual: leave it to the runtime
            return None
        return columns[name] if name in columns and types[name] in _PLAIN_TYPES else None

    group_columns = tuple(column_of(v) for v in selector.group_by)
    if None in group_columns or any(_type_of(layout, stream, c) is AttrType.DOUBLE
                                    for c in group_columns):  # type: ignore[arg-type]
        return None  # double keys group by Double.equals; not worth it here
    arguments: list[str] = []
    outputs: list[Output] = []
    for item, attribute in zip(selector.attributes, info.outputs):
        expr = item.expression
        if isinstance(expr, ast.Variable):
            column = column_of(expr)
            if column is None:
                return None
            outputs.append(Output(attribute.name, attribute.type, "var", column))
            continue
        if not (isinstance(expr, ast.FunctionCall) and expr.namespace is None):
            return None
        if expr.name == "count" and len(expr.args) <= 1:
            if expr.args and column_of(expr.args[0]) is None:
                return None
            outputs.append(Output(attribute.name, AttrType.LONG, "count"))
            continue
        if expr.name not in ("avg", "sum") or len(expr.args) != 1:
            return None
        column = column_of(expr.args[0])
        if column is None:
            return None
        allowed = _NUMERIC if expr.name == "avg" else (AttrType.DOUBLE,)
        if _type_of(layout, stream, column) not in allowed:
            return None  # sum of ints is a wrapping long with a double removal: runtime
        if column not in arguments:
            arguments.append(column)
        outputs.append(Output(attribute.name, AttrType.DOUBLE, expr.name, column,
                              arguments.index(column)))
    if [o.type for o in outputs] != [a.type for a in info.outputs]:
        return None
    spec = TimeWindowSpec(span, tuple(c for c in group_columns if c is not None),
                          tuple(arguments), tuple(outputs))
    return TimeWindowPlan(info, stream, tuple(f.expression for f in filters
                                              if isinstance(f, ast.Filter)), spec)


def _type_of(layout: InputLayout, stream: str, column: str) -> AttrType:
    return dict(zip(layout.columns(stream), (a.type for a in layout.attributes(stream))))[column]


def _plain_filter(expr: ast.Expression) -> bool:
    """Only attributes, literals and operators: Spark SQL evaluates those as the runtime
    does (the native path relies on the same); no functions, no clock."""
    if not isinstance(expr, _FILTER_NODES):
        return False
    if isinstance(expr, ast.Variable):
        return expr.stream_index is None and not expr.inner and not expr.fault
    children = [getattr(expr, name) for name in ("left", "right", "expression")
                if isinstance(getattr(expr, name, None), ast.Expression)]
    return all(_plain_filter(c) for c in children)


# -- the Spark plan -----------------------------------------------------------------------------
def compile_time_window(analyzed: AnalyzedApp, plan: TimeWindowPlan, source: DataFrame,
                        layout: InputLayout) -> DataFrame:
    """The query's outputs in the writer's schema; one state key, like the runtime's."""
    from eddy.engine.layout import OUTPUT_SCHEMA
    from eddy.engine.native import _compiler

    spec, info = plan.spec, plan.info
    is_event = F.col(STREAM) == plan.stream
    passes: Column = is_event
    compiler = _compiler(analyzed, lambda var: F.col(_column_for(layout, plan.stream, var,
                                                                  info)))
    for condition in plan.filters:
        passes = passes & F.coalesce(compiler.compile_condition(condition), F.lit(False))
    needed = sorted({*spec.group_columns, *spec.argument_columns,
                     *(o.column for o in spec.outputs if o.kind == "var" and o.column)})
    rows = (source.where(F.col(STREAM).isin(plan.stream, STORE_STREAM))
            .select(SEQ, TS, is_event.alias(EVENT), F.coalesce(passes, F.lit(False)).alias(PASS),
                    *needed))
    schema = [f"{SEQ} long", f"{TS} long"]
    for i, out in enumerate(spec.outputs):
        schema.append(f"o{i} {spark_type(out.type).simpleString()}")
        if out.kind in ("avg", "sum"):
            schema.append(f"o{i}_nan boolean")
    computed = (rows.withColumn("_key", F.lit(0)).groupBy("_key")
                .applyInPandasWithState(make_time_window_step(spec), ", ".join(schema),
                                        "state binary", "append", GroupStateTimeout.NoTimeout))
    values = []
    for i, out in enumerate(spec.outputs):
        value = F.col(f"o{i}")
        if out.kind in ("avg", "sum"):  # pandas cannot tell NaN from null on the way out
            value = F.when(F.col(f"o{i}_nan"), F.lit(float("nan"))).otherwise(value)
        values.append(value.alias(out.name))
    order = F.array(*(F.lit(i) for i in (1, info.index, 0, 0, 0)))
    result = computed.select(
        SEQ, order.alias("_order"), TS, F.lit(info.id).alias("_query"),
        F.lit(info.target).alias("_target"), F.lit(False).alias("_expired"),
        F.to_json(F.struct(*values), {"ignoreNullFields": "false"}).alias("_data"))
    return result.select(*(F.col(f.name).cast(f.dataType) for f in OUTPUT_SCHEMA.fields))


def _column_for(layout: InputLayout, stream: str, var: ast.Variable, info: QueryInfo) -> str:
    name = info.scope.resolve(var).attribute.name
    names = [a.name for a in layout.attributes(stream)]
    return layout.columns(stream)[names.index(name)]


# -- the operator -------------------------------------------------------------------------------
@dataclass
class WindowState:
    """The clock, the window's events (arrival order) and the running sums per group."""

    clock: int = 0
    ts: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    group: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    values: np.ndarray | None = None  # [events, arguments], NaN = null
    keys: list[np.ndarray] = field(default_factory=list)  # group keys, one array per column
    sums: np.ndarray | None = None     # [groups, arguments]
    counts: np.ndarray | None = None   # [groups, arguments]: non-null values in the window
    sizes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # events


@dataclass
class Outputs:
    """Per passing row, in ``_seq`` order: its position in the batch and the aggregates."""

    rows: np.ndarray
    sums: np.ndarray     # [rows, arguments] after the row's add
    counts: np.ndarray   # [rows, arguments]
    sizes: np.ndarray    # [rows]


def process(state: WindowState, spec: TimeWindowSpec, ts: np.ndarray, passing: np.ndarray,
            keys: Sequence[np.ndarray], values: np.ndarray) -> Outputs:
    """One micro-batch, rows in ``_seq`` order: updates ``state`` and returns the outputs.

    ``keys`` are the group columns of all rows, ``values`` the arguments ([rows, args],
    NaN for null)."""
    n = len(ts)
    width = len(spec.argument_columns)
    if state.values is None:
        state.values = np.empty((0, width))
        state.sums = np.empty((0, width))
        state.counts = np.empty((0, width), np.int64)
    assert state.sums is not None and state.counts is not None
    clock = np.maximum.accumulate(np.maximum(ts, state.clock)) if n else np.empty(0, np.int64)
    if n:
        state.clock = int(clock[-1])
    threshold = clock - spec.span
    rows = np.flatnonzero(passing)
    codes = _group_codes(state, [k[rows] for k in keys], len(rows))
    groups = len(state.keys[0]) if keys else 1
    _grow(state, groups, width)
    old = len(state.ts)
    new_ts = ts[rows]
    due = np.concatenate([np.searchsorted(threshold, state.ts, "left"),
                          np.maximum(rows + 1, np.searchsorted(threshold, new_ts, "left"))])
    leave = np.maximum.accumulate(due) if len(due) else due
    gone = int(np.searchsorted(leave, n, "left"))  # leave is sorted: the expired are a prefix
    all_group = np.concatenate([state.group, codes])
    all_values = np.concatenate([state.values, values[rows]]) if width else \
        np.empty((old + len(rows), 0))

    # Operations: removals (phase 0) of the first `gone` elements at their step, then adds.
    adds = len(rows)
    op_group = np.concatenate([all_group[:gone], codes])
    op_step = np.concatenate([leave[:gone], rows])
    op_phase = np.concatenate([np.zeros(gone, np.int8), np.ones(adds, np.int8)])
    op_index = np.arange(gone + adds)
    order = np.lexsort((op_index, op_phase, op_step, op_group))
    sign = np.concatenate([-np.ones(gone), np.ones(adds)])[order]
    group_sorted = op_group[order]
    starts = np.flatnonzero(np.r_[True, group_sorted[1:] != group_sorted[:-1]]) \
        if len(order) else np.empty(0, np.int64)
    segment_groups = group_sorted[starts]
    is_add = op_phase[order] == 1
    add_rows = op_index[order][is_add] - gone  # which passing row each add belongs to

    out_sums = np.empty((adds, width))
    out_counts = np.empty((adds, width), np.int64)
    ends = np.r_[starts[1:], len(order)] - 1 if len(starts) else starts
    op_values = np.concatenate([all_values[:gone], all_values[old:]])[order] \
        if width else np.empty((len(order), 0))
    for a in range(width):
        column = op_values[:, a]
        present = ~np.isnan(column)
        with np.errstate(invalid="ignore"):
            signed = np.where(present, column * sign, 0.0)
        totals = _segmented_cumsum(signed, starts, state.sums[segment_groups, a])
        counts = _segmented_intsum((present * sign).astype(np.int64), starts,
                                   state.counts[segment_groups, a])
        out_sums[add_rows, a] = totals[is_add]
        out_counts[add_rows, a] = counts[is_add]
        state.sums[segment_groups, a] = totals[ends]
        state.counts[segment_groups, a] = counts[ends]
    sizes = _segmented_intsum(sign.astype(np.int64), starts, state.sizes[segment_groups])
    out_sizes = np.empty(adds, np.int64)
    out_sizes[add_rows] = sizes[is_add]
    state.sizes[segment_groups] = sizes[ends]

    keep = slice(gone, None)
    state.ts = np.concatenate([state.ts, new_ts])[keep]
    state.group = all_group[keep]
    state.values = all_values[keep]
    _drop_fresh_groups(state)
    return Outputs(rows, out_sums, out_counts, out_sizes)


def _segmented_cumsum(values: np.ndarray, starts: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Per segment, ``initial + v0``, ``(initial + v0) + v1``, …: the sequential sums a
    Python loop makes (``cumsum`` accumulates left to right), never a sum of differences."""
    if not len(values):
        return values.copy()
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, as in Java
        return _sequential_sums(values, starts, initial)


def _sequential_sums(values: np.ndarray, starts: np.ndarray, initial: np.ndarray) -> np.ndarray:
    ends = np.r_[starts[1:], len(values)]
    lengths = ends - starts
    if len(starts) <= int(lengths.max()):  # few, long segments: one cumsum each
        out = np.empty_like(values)
        for start, end, first in zip(starts.tolist(), ends.tolist(), initial.tolist()):
            segment = values[start:end].copy()
            segment[0] = first + segment[0]
            out[start:end] = np.cumsum(segment)
        return out
    # many short segments: step through the positions, all segments at once
    out = np.empty_like(values)
    running = initial.astype(np.float64).copy()
    rank = np.arange(len(values)) - np.repeat(starts, lengths)
    segment_of = np.repeat(np.arange(len(starts)), lengths)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(int(lengths.max()) + 1), "left")
    for r in range(int(lengths.max())):
        at = by_rank[bounds[r]:bounds[r + 1]]
        segments = segment_of[at]
        running[segments] = running[segments] + values[at]
        out[at] = running[segments]
    return out


def _segmented_intsum(values: np.ndarray, starts: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Running integer sums per segment (exact in any order)."""
    if not len(values):
        return values.copy()
    total = np.cumsum(values)
    before = np.r_[0, total[starts[1:] - 1]]
    lengths = np.diff(np.r_[starts, len(values)])
    return total - np.repeat(before, lengths) + np.repeat(initial, lengths)


def _group_codes(state: WindowState, keys: list[np.ndarray], rows: int) -> np.ndarray:
    """Each row's group number; groups keep their numbers across batches, new groups are
    numbered in order of first appearance. Without ``group by`` every row is group 0."""
    if not keys:
        return np.zeros(rows, np.int64)
    known = len(state.keys[0]) if state.keys else 0
    combined = [np.concatenate([state.keys[i], k]) if state.keys else k
                for i, k in enumerate(keys)]
    codes = _factorize(combined)
    new = codes[known:]
    fresh = np.flatnonzero(new >= known)
    if len(fresh):
        first = np.unique(new[fresh], return_index=True)[1]  # sorted by code
        added = fresh[first]
        state.keys = [np.concatenate([c[:known], k[added]]) for c, k in zip(combined, keys)]
    elif not state.keys:
        state.keys = [k[:0] for k in keys]
    return new.astype(np.int64)


def _factorize(columns: list[np.ndarray]) -> np.ndarray:
    """Codes by first appearance over one or more key columns; a null is a key too."""
    codes = pd.factorize(pd.Series(columns[0]), use_na_sentinel=False)[0].astype(np.int64)
    for column in columns[1:]:
        more, uniques = pd.factorize(pd.Series(column), use_na_sentinel=False)
        codes = pd.factorize(codes * (len(uniques) + 1) + more, use_na_sentinel=False)[0]
    return codes


def _grow(state: WindowState, groups: int, width: int) -> None:
    assert state.sums is not None and state.counts is not None
    extra = groups - len(state.sizes)
    if extra > 0:
        state.sums = np.concatenate([state.sums, np.zeros((extra, width))])
        state.counts = np.concatenate([state.counts, np.zeros((extra, width), np.int64)])
        state.sizes = np.concatenate([state.sizes, np.zeros(extra, np.int64)])


def _drop_fresh_groups(state: WindowState) -> None:
    """Forget groups whose every state is as new (the runtime drops those states too), so
    a stream of ever-new keys does not grow the state; renumbers the rest."""
    assert state.sums is not None and state.counts is not None
    if not state.keys or len(state.sizes) < 1024:
        return
    live = (state.sizes != 0) | (state.counts != 0).any(axis=1) | (state.sums != 0.0).any(axis=1)
    if live.all():
        return
    renumber = np.cumsum(live) - 1
    state.group = renumber[state.group]
    state.keys = [k[live] for k in state.keys]
    state.sums, state.counts, state.sizes = state.sums[live], state.counts[live], \
        state.sizes[live]


def output_columns(spec: TimeWindowSpec, outputs: Outputs,
                   var_values: Callable[[str], np.ndarray]) -> dict[str, Any]:
    """The operator's output columns (``o<i>``, ``o<i>_nan``) for the passing rows."""
    columns: dict[str, Any] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, out in enumerate(spec.outputs):
            if out.kind == "var":
                assert out.column is not None
                columns[f"o{i}"] = var_values(out.column)
                continue
            if out.kind == "count":
                columns[f"o{i}"] = outputs.sizes
                continue
            total = outputs.sums[:, out.argument]
            count = outputs.counts[:, out.argument]
            value = total / count if out.kind == "avg" else total
            columns[f"o{i}_nan"] = np.isnan(value) & (count > 0)
            columns[f"o{i}"] = np.where(count > 0, value, np.nan)
    return columns


StepFunction = Callable[[Any, Iterator[pd.DataFrame], Any], Iterator[pd.DataFrame]]


def make_time_window_step(spec: TimeWindowSpec) -> StepFunction:
    """The ``applyInPandasWithState`` function: one call per micro-batch (one state key)."""

    def step(key: Any, frames: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        pdf = pd.concat(list(frames), ignore_index=True)
        seq = pdf[SEQ].to_numpy()
        if not (np.diff(seq) > 0).all():
            pdf = pdf.iloc[np.argsort(seq, kind="stable")].reset_index(drop=True)
        if not pdf[EVENT].all():
            raise UnsupportedQuery("<store query>", "on-demand queries need tables, which "
                                   "this runtime does not run yet")
        window: WindowState = pickle.loads(state.get[0]) if state.exists else WindowState()
        keys = [_key_values(pdf[c]) for c in spec.group_columns]
        values = np.stack([pdf[c].to_numpy(np.float64, na_value=np.nan)
                           for c in spec.argument_columns], axis=1) \
            if spec.argument_columns else np.empty((len(pdf), 0))
        outputs = process(window, spec, pdf[TS].to_numpy(np.int64),
                          pdf[PASS].to_numpy(bool), keys, values)
        state.update((pickle.dumps(window, protocol=pickle.HIGHEST_PROTOCOL),))
        chosen = pdf.iloc[outputs.rows]

        def var_values(column: str) -> Any:
            series = chosen[column].reset_index(drop=True)
            wanted = _int_type(spec, column)
            if series.dtype.kind == "f" and wanted is not None:
                return series.astype(wanted)  # nulls made it float; Spark wants the int
            return series

        frame = pd.DataFrame({SEQ: chosen[SEQ].to_numpy(), TS: chosen[TS].to_numpy(),
                              **output_columns(spec, outputs, var_values)})
        yield frame

    return step


def _int_type(spec: TimeWindowSpec, column: str) -> str | None:
    for out in spec.outputs:
        if out.column == column and out.kind == "var" and out.type is AttrType.INT:
            return "Int32"
        if out.column == column and out.kind == "var" and out.type is AttrType.LONG:
            return "Int64"
    return None


def _key_values(series: pd.Series) -> np.ndarray:
    """A group column as an array whose equal values are the runtime's equal keys: ints
    stay ints (a float column only when nulls made it one), nulls are one key."""
    return series.to_numpy()
