"""The write path of an aggregation over a whole column batch, vectorised with numpy.

:meth:`AggregationRuntime.add <eddy.runtime.aggregation.runtime.AggregationRuntime.add>`
costs a few microseconds per event and granularity in Python. :class:`ColumnAggregator`
gives the same rows for a batch of events at once: per granularity it computes every
event's bucket, keys the events by (arrival run, bucket, group) with two hash
factorisations, and reduces each base column with ``bincount``/``ufunc.at`` (which add in
event order, as the per-event path does); only the resulting partial rows — one per bucket
and group in the batch — are merged into the store in Python, with the same
:meth:`BasePlan.merge <eddy.runtime.aggregation.values.BasePlan.merge>` that rolls up
and merges shards.

An *arrival run* is a stretch of events in one arrival bucket of the finest granularity:
the store is told the arrival clock (``open``) between runs, exactly where the per-event
path tells it, so an RDBMS store closes the same rows. An in-memory store never closes
rows, so its batch is one run.

It applies when every aggregate reads an input attribute directly (``sum(price)``, not
``sum(price * 2)``) and the input has no filter; :func:`column_aggregator` says so.
Differences from the per-event path: none in values (sums of doubles are added in the same
order), except that ``group by`` a double does not tell ``0.0`` from ``-0.0``.
"""

from __future__ import annotations

import logging
import time as wall_clock
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.runtime.aggregation.timeutil import (
    DURATION_MILLIS,
    AggregationTimeError,
    to_millis,
)
from eddy.runtime.events import float_key

if TYPE_CHECKING:
    from eddy.runtime.aggregation.runtime import AggregationRuntime

log = logging.getLogger("eddy.runtime")

__all__ = ["ColumnAggregator", "column_aggregator", "columns_apply"]

Array = npt.NDArray[Any]
_NUMERIC = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)


@dataclass(frozen=True)
class _Column:
    kind: str
    position: int | None  # input attribute it reads (None for count)
    type: AttrType
    floating: bool


def column_aggregator(aggregation: AggregationRuntime,
                      attributes: Sequence[ast.Attribute]) -> ColumnAggregator | None:
    """The vectorised write path of ``aggregation``, or None when it does not apply."""
    if not columns_apply(aggregation.definition, attributes):
        return None
    positions = {a.name: i for i, a in enumerate(attributes)}
    columns: list[_Column] = []
    for column in aggregation.plan.columns:
        if column.kind == "COUNT":
            columns.append(_Column("COUNT", None, AttrType.LONG, False))
            continue
        position = positions[column.name.split("_", 2)[2]]
        columns.append(_Column(column.kind, position, attributes[position].type,
                               column.floating))
    return ColumnAggregator(aggregation, attributes, columns)


def columns_apply(definition: ast.AggregationDefinition,
                  attributes: Sequence[ast.Attribute]) -> bool:
    """Whether the vectorised path can run ``definition``: no input filter, every aggregate
    reads an input attribute directly (numeric, except for ``distinctCount``)."""
    if definition.input is None or definition.input.handlers:
        return False
    types = {a.name: a.type for a in attributes}
    for item in definition.selector.attributes or ():
        for call in _aggregate_calls(item.expression):
            if not call.args:
                continue
            arg = call.args[0]
            if not isinstance(arg, ast.Variable) or arg.attribute not in types:
                return False
            if call.name != "distinctCount" and types[arg.attribute] not in _NUMERIC:
                return False
    return all(types.get(v.attribute) is not AttrType.OBJECT
               for v in definition.selector.group_by)


def _aggregate_calls(expr: ast.Expression) -> list[ast.FunctionCall]:
    from eddy.lang.walk import walk_expression

    return [e for e in walk_expression(expr) if isinstance(e, ast.FunctionCall)
            and e.namespace is None
            and e.name in ("sum", "avg", "count", "min", "max", "distinctCount")]


def _bucket_starts(millis: Array, granularity: str) -> Array:
    """``bucket_start`` of every element (UTC calendar)."""
    size = DURATION_MILLIS.get(granularity)
    if size is not None:
        result: Array = millis - millis % size
        return result
    unit = "M" if granularity == "MONTHS" else "Y"
    moments = millis.astype("datetime64[ms]").astype(f"datetime64[{unit}]")
    starts: Array = moments.astype("datetime64[ms]").astype(np.int64)
    return starts


class ColumnAggregator:
    """Adds column batches of input events to one aggregation; see the module docstring."""

    def __init__(self, aggregation: AggregationRuntime, attributes: Sequence[ast.Attribute],
                 columns: list[_Column]) -> None:
        self.aggregation = aggregation
        self.attributes = tuple(attributes)
        self.columns = columns
        definition = aggregation.definition
        positions = {a.name: i for i, a in enumerate(attributes)}
        self.group_positions = [positions[v.attribute] for v in definition.selector.group_by]
        self.time_position = (positions[definition.aggregate_by.attribute]
                              if definition.aggregate_by is not None else None)

    # -- preparing columns -----------------------------------------------------------------------
    def _prepared(self, columns: Sequence[Array]) -> list[Array]:
        """FLOAT values rounded to single precision, as the per-event path rounds them."""
        prepared = list(columns)
        for i, attribute in enumerate(self.attributes):
            if attribute.type is AttrType.FLOAT:
                prepared[i] = np.asarray(prepared[i], dtype=np.float64).astype(
                    np.float32).astype(np.float64)
        return prepared

    def _event_times(self, columns: Sequence[Array], arrival: Array
                     ) -> tuple[Array, Array | None]:
        """Each event's ``aggregate by`` time, and which events have one (None: all). An
        event whose time is null or unreadable is dropped, as the reference logs and drops
        it (:class:`~eddy.runtime.events.DroppedEventError`)."""
        if self.time_position is None:
            return arrival, None
        values = columns[self.time_position]
        if values.dtype.kind in "iu":
            return values.astype(np.int64), None
        if values.dtype.kind == "f":
            missing = np.isnan(values)
            return np.where(missing, 0, values).astype(np.int64), \
                (~missing if missing.any() else None)
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        millis = []
        readable = []
        for value in uniques:
            try:
                if value is None or (isinstance(value, float) and value != value):
                    raise AggregationTimeError(f"aggregation '{self.aggregation.name}': the "
                                               "'aggregate by' timestamp is null")
                millis.append(to_millis(value))
                readable.append(True)
            except AggregationTimeError as error:
                log.error("dropping the events of aggregation '%s' whose time is %r: %s",
                          self.aggregation.name, value, error)
                millis.append(0)
                readable.append(False)
        times: Array = np.asarray(millis, dtype=np.int64)[codes]
        if all(readable):
            return times, None
        return times, np.asarray(readable, dtype=bool)[codes]

    def _group_codes(self, columns: Sequence[Array]) -> Array:
        if not self.group_positions:
            return np.zeros(len(columns[0]) if columns else 0, dtype=np.int64)
        if len(self.group_positions) == 1:
            codes, _ = pd.factorize(columns[self.group_positions[0]], use_na_sentinel=False)
            return np.asarray(codes, dtype=np.int64)
        frame = pd.DataFrame({i: columns[p] for i, p in enumerate(self.group_positions)})
        grouped: Array = frame.groupby(list(frame.columns), sort=False,
                                       dropna=False).ngroup().to_numpy(np.int64)
        return grouped

    # -- adding ------------------------------------------------------------------------------------
    def add(self, ts: Array, columns: Sequence[Array]) -> None:
        """Adds events with arrival times ``ts`` and attribute columns ``columns`` (one per
        input attribute, in input order), as ``add`` would one by one."""
        n = len(ts)
        if n == 0:
            return
        aggregation = self.aggregation
        columns = self._prepared(columns)
        arrival = np.maximum.accumulate(np.maximum(np.asarray(ts, dtype=np.int64),
                                                   aggregation.arrival))
        times, kept = self._event_times(columns, arrival)
        if kept is not None:
            aggregation.arrival = int(arrival[-1])
            if not kept.any():
                return
            columns = [column[kept] for column in columns]
            arrival, times, n = arrival[kept], times[kept], int(kept.sum())
        if aggregation.chain is not None:
            aggregation.chain.add_all(times.tolist())
        granularities = aggregation.granularities
        finest = _bucket_starts(arrival, granularities[0])
        starts = np.concatenate([[0], np.flatnonzero(finest[1:] != finest[:-1]) + 1])
        run_ids = np.repeat(np.arange(len(starts), dtype=np.int64),
                            np.diff(np.concatenate([starts, [n]])))
        codes = self._group_codes(columns)
        firsts = np.full(int(codes.max()) + 1, n, dtype=np.int64)
        np.minimum.at(firsts, codes, np.arange(n, dtype=np.int64))
        keys = [self._group_key(row) for row in self._rows(firsts, columns)]
        order = np.arange(n, dtype=np.int64)
        events = _Items(run_ids, _bucket_starts(times, granularities[0]), codes, times, order,
                        order, [self._event_values(c, columns) for c in self.columns])
        level = events.reduce(events.bucket, self.columns)
        partials = {granularities[0]: self._finish(level, len(starts), columns, keys)}
        for granularity in granularities[1:]:  # coarser buckets roll up the finest partials
            partials[granularity] = self._finish(
                level.reduce(_bucket_starts(level.bucket, granularity), self.columns),
                len(starts), columns, keys)
        plan, store = aggregation.plan, aggregation.store
        for run, start in enumerate(starts.tolist()):
            now = int(arrival[start])
            if now >= aggregation._reopen:  # the store closes rows where add would
                aggregation._reopen = store.open(now)
            for granularity, per_run in partials.items():
                for key, values in per_run[run]:
                    existing = store.get(granularity, key)
                    if existing is None:
                        store.upsert(granularity, [(key, values)])
                    else:
                        plan.merge(existing, values)
        aggregation.arrival = int(arrival[-1])
        if aggregation.next_purge is None and aggregation.purge.enabled:
            aggregation.next_purge = wall_clock.time() * 1000 + aggregation.purge.interval

    def _event_values(self, column: _Column, columns: Sequence[Array]) -> _Values:
        """One base column's input per event: its value and whether it is there."""
        if column.kind == "COUNT":
            ones = np.ones(len(columns[0]) if columns else 0, dtype=np.int64)
            return _Values(ones, np.ones(len(ones), dtype=bool), None)
        assert column.position is not None
        raw = columns[column.position]
        if column.kind == "SET":
            listed = pd.Series(raw).astype(object).tolist()
            return _Values(np.zeros(len(listed)), np.ones(len(listed), dtype=bool),
                           [{None if v is None or (isinstance(v, float) and v != v) else v}
                            for v in listed])
        values = np.asarray(raw, dtype=np.float64) if raw.dtype.kind not in "iu" else raw
        integral = column.type in (AttrType.INT, AttrType.LONG)
        present = ~np.isnan(values) if values.dtype.kind == "f" else \
            np.ones(len(values), dtype=bool)
        if integral:
            values = np.where(present, values, 0).astype(np.int64)
        return _Values(values, present, None)

    def _finish(self, items: _Items, runs: int, columns: Sequence[Array],
                keys: list[tuple[Any, ...]]) -> list[list[tuple[Any, list[Any]]]]:
        """Per arrival run, the ``(key, values)`` of each partial row, in event order."""
        data = self._rows(items.last_row, columns)
        bases = [values.listed(column) for column, values in zip(self.columns, items.values)]
        shard = self.aggregation.shard_id
        runs_of = items.run.tolist()
        groups = items.code.tolist()
        buckets = items.bucket.tolist()
        last_times = items.last_time.tolist()
        per_run: list[list[tuple[Any, list[Any]]]] = [[] for _ in range(runs)]
        for p in np.argsort(items.first, kind="stable").tolist():
            key = (buckets[p], shard, keys[groups[p]])
            per_run[runs_of[p]].append((key, [last_times[p], data[p]] + [b[p] for b in bases]))
        return per_run

    def _group_key(self, data: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(float_key(data[p]) for p in self.group_positions)

    def _rows(self, rows: Array, columns: Sequence[Array]) -> list[tuple[Any, ...]]:
        """The input data of events ``rows`` as Python values of the attributes' types
        (NaN and NA as None), as the per-event path receives them."""
        picked = [_python_values(np.asarray(column)[rows], attribute.type)
                  for column, attribute in zip(columns, self.attributes)]
        return list(zip(*picked)) if picked else [() for _ in range(len(rows))]


_CONVERT: dict[AttrType, type] = {AttrType.INT: int, AttrType.LONG: int, AttrType.FLOAT: float,
                                  AttrType.DOUBLE: float, AttrType.BOOL: bool}
_NATIVE = {AttrType.INT: "iu", AttrType.LONG: "iu", AttrType.FLOAT: "f", AttrType.DOUBLE: "f",
           AttrType.BOOL: "b"}


def _python_values(values: Array, attr_type: AttrType) -> list[Any]:
    """Values of one attribute as Python values of its type, NaN and NA as None. Called per
    granularity and batch on a few hundred values: plain numpy, since a pandas Series costs
    more to build than the values do to convert."""
    kind = values.dtype.kind
    listed: list[Any] = values.tolist()
    if kind in _NATIVE.get(attr_type, ""):
        if kind == "f":
            missing = np.isnan(values)
            if missing.any():
                for i in np.flatnonzero(missing).tolist():
                    listed[i] = None
        return listed  # already Python ints, floats or bools
    missing = pd.isna(values)
    if missing.any():
        for i in np.flatnonzero(missing).tolist():
            listed[i] = None
    convert = _CONVERT.get(attr_type)
    if convert is not None:
        listed = [None if v is None else convert(v) for v in listed]
    return listed


@dataclass
class _Values:
    """One base column over items (events or partial rows): value, presence, sets."""

    values: Array
    present: Array
    sets: list[set[Any]] | None

    def listed(self, column: _Column) -> list[Any]:
        """Python base values: None where no value was present (the per-event path's None)."""
        if self.sets is not None:
            return self.sets
        listed: list[Any] = self.values.tolist()
        if column.kind == "COUNT":
            return listed
        if column.floating or column.type in (AttrType.FLOAT, AttrType.DOUBLE):
            listed = [float(v) for v in listed]
        return [v if s else None for v, s in zip(listed, self.present.tolist())]


@dataclass
class _Items:
    """Events, or partial rows of one granularity, keyed by arrival run, bucket and group."""

    run: Array
    bucket: Array
    code: Array
    last_time: Array
    last_row: Array
    first: Array
    values: list[_Values]

    def reduce(self, buckets: Array, columns: list[_Column]) -> _Items:
        """The partial rows of (run, ``buckets``, group): bases reduced in item order, the
        last event the one with the latest time (ties: the later one)."""
        bucket_codes, bucket_values = pd.factorize(buckets)
        composite = (self.run * (len(bucket_values) + 1) + bucket_codes) * \
            (int(self.code.max()) + 1) + self.code
        inverse_codes, _ = pd.factorize(composite)
        inverse = np.asarray(inverse_codes, dtype=np.int64)
        m = int(inverse.max()) + 1
        first = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inverse, self.first)
        last_time = np.full(m, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(last_time, inverse, self.last_time)
        latest = self.last_time == last_time[inverse]
        last_row = np.full(m, -1, dtype=np.int64)
        np.maximum.at(last_row, inverse[latest], self.last_row[latest])
        representative = np.zeros(m, dtype=np.int64)
        representative[inverse] = np.arange(len(inverse), dtype=np.int64)
        values = [_reduce(column, given, inverse, m) for column, given in
                  zip(columns, self.values)]
        return _Items(self.run[representative], buckets[representative],
                      self.code[representative], last_time, last_row, first, values)


def _reduce(column: _Column, given: _Values, inverse: Array, m: int) -> _Values:
    """One base column reduced per partial row, adding in item order."""
    seen = np.zeros(m, dtype=np.int64)
    np.add.at(seen, inverse, given.present.astype(np.int64))
    present = seen > 0
    if given.sets is not None:
        sets: list[set[Any]] = [set() for _ in range(m)]
        for p, found in zip(inverse.tolist(), given.sets):
            sets[p] |= found
        return _Values(np.zeros(m), present, sets)
    mask = given.present
    values = given.values
    if column.kind in ("SUM", "COUNT"):
        if values.dtype.kind in "iu":
            totals = np.zeros(m, dtype=np.int64)
            np.add.at(totals, inverse[mask], values[mask])
        else:
            totals = np.bincount(inverse[mask], weights=values[mask], minlength=m)
        return _Values(totals, present, None)
    if values.dtype.kind in "iu":
        start: Any = np.iinfo(np.int64).max if column.kind == "MIN" else np.iinfo(np.int64).min
    else:
        start = np.inf if column.kind == "MIN" else -np.inf
    result = np.full(m, start, dtype=values.dtype)
    (np.minimum if column.kind == "MIN" else np.maximum).at(result, inverse[mask], values[mask])
    return _Values(result, present, None)
