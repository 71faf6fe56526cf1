"""An aggregation's buckets in an RDBMS (``@store(type='rdbms', …)``), behind the runtime's
:class:`~eddy.runtime.aggregation.store.AggregationStore` interface.

Rows are keyed as the reference keys them: by the *arrival-time* bucket (``AGG_TIMESTAMP``),
this node's ``SHARD_ID``, the event-time bucket (``AGG_EVENT_TIMESTAMP``) and the group.
Arrival time never goes back, so a row changes only while its arrival bucket is open; those
open rows are the store's memory, and they travel in the runtime's snapshot, which Spark
checkpoints with each micro-batch.

Why writes are idempotent. At the end of every micro-batch (:meth:`get_state`, called just
before Spark commits the state) the store upserts the *absolute* values of every row the
batch changed — open rows, and rows whose arrival bucket closed during the batch — keyed by
their full primary key, and only then forgets the closed ones. If the process dies before
Spark commits, the batch is replayed from the state committed before it: that state still
holds every row the batch touched with its value before the batch, the same events (same
timestamps, same order) produce the same absolute values, and the upserts write them again.
Nothing is ever incremented in the database, so a replay can rewrite a row but never add to
it twice; a row whose arrival bucket has closed is never written again. Rows under another
node's ``SHARD_ID`` are never written at all.

Reads (:meth:`scan`) take the table rows of every shard in range and let this node's memory
replace its own rows: memory is at least as new as the table. The runtime merges the rows
of one event-time bucket and group (shards, arrival buckets) with
:meth:`BasePlan.merge <eddy.runtime.aggregation.values.BasePlan.merge>`.

Each granularity is written through at every batch end, so a coarser table is as fresh as
the finest one; unlike the reference, a sharded read needs no finer "not yet rolled up"
rows, and it lags by at most one micro-batch, not one finest bucket.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from eddy.lang import ast
from eddy.runtime.aggregation.store import BaseValues, BucketKey
from eddy.runtime.aggregation.timeutil import bucket_start, next_bucket_start
from eddy.runtime.aggregation.values import BasePlan
from eddy.runtime.events import float_key
from eddy.store.aggregation_settings import NodeSettings
from eddy.store.aggregation_tables import (
    AggregationLayout,
    AggregationTables,
    Attr,
    Base,
    TableRow,
)
from eddy.store.connect import connect, store_url

__all__ = ["RdbmsAggregationStore", "aggregation_layout", "rdbms_store"]

RowKey = tuple[int, tuple[Any, ...]]
"""``(event-time bucket, group key)`` of a row within an open arrival bucket."""


class RdbmsAggregationStore:
    """Open rows in memory, every row in ``tables``; see the module docstring."""

    def __init__(self, tables: AggregationTables, shard_id: str | None) -> None:
        self.tables = tables
        self.shard_id = shard_id
        self.granularities = tables.layout.granularities
        self.opened: dict[str, int] = {g: -1 for g in self.granularities}
        self.closes: dict[str, int] = {g: -1 for g in self.granularities}
        self.current: dict[str, dict[RowKey, BaseValues]] = {g: {} for g in self.granularities}
        self.dirty: dict[str, set[RowKey]] = {g: set() for g in self.granularities}
        self.closed: list[tuple[str, int, RowKey, BaseValues]] = []

    # -- writing -------------------------------------------------------------------------------
    def open(self, arrival: int) -> int:
        """The arrival clock is at ``arrival``: rows of arrival buckets that closed become
        final (written at the batch end, then forgotten). Returns the next arrival time at
        which a bucket closes."""
        following = 1 << 62
        for g in self.granularities:
            if arrival >= self.closes[g]:
                start = bucket_start(arrival, g)
                if start != self.opened[g]:
                    rows, dirty = self.current[g], self.dirty[g]
                    self.closed += [(g, self.opened[g], key, rows[key]) for key in dirty]
                    self.current[g], self.dirty[g] = {}, set()
                    self.opened[g] = start
                self.closes[g] = next_bucket_start(arrival, g)
            following = min(following, self.closes[g])
        return following

    def get(self, granularity: str, key: BucketKey) -> BaseValues | None:
        """The open row ``key`` (to be added to: it is marked for writing)."""
        row_key = (key[0], key[2])
        found = self.current[granularity].get(row_key)
        if found is not None:
            self.dirty[granularity].add(row_key)
        return found

    def upsert(self, granularity: str, rows: Iterable[tuple[BucketKey, BaseValues]]) -> None:
        current, dirty = self.current[granularity], self.dirty[granularity]
        for (timestamp, _shard, group), values in rows:
            current[(timestamp, group)] = values
            dirty.add((timestamp, group))

    def flush(self) -> None:
        """Writes every changed row (absolute values) and forgets the closed ones."""
        batches: dict[str, list[TableRow]] = {g: [] for g in self.granularities}
        shard = self.shard_id
        for g, opened, (event_bucket, group), values in self.closed:
            batches[g].append((opened, shard, event_bucket, group, values))
        for g in self.granularities:
            rows = self.current[g]
            batches[g] += [(self.opened[g], shard, key[0], key[1], rows[key])
                           for key in self.dirty[g]]
        if any(batches.values()):
            self.tables.upsert_many(batches.items())
        self.closed = []
        self.dirty = {g: set() for g in self.granularities}

    def purge(self, granularity: str, before: int) -> None:
        """Deletes rows (every shard's) whose bucket is before ``before``."""
        self.tables.purge(granularity, before)
        rows = self.current[granularity]
        for key in [k for k in rows if k[0] < before]:
            del rows[key]
            self.dirty[granularity].discard(key)
        self.closed = [c for c in self.closed if c[0] != granularity or c[2][0] >= before]

    # -- reading -------------------------------------------------------------------------------
    def scan(self, granularity: str, start: int, end: int
             ) -> Iterator[tuple[BucketKey, BaseValues]]:
        mine: dict[tuple[int, int, tuple[Any, ...]], BaseValues] = {}
        for g, opened, (event_bucket, group), values in self.closed:
            if g == granularity and start <= event_bucket < end:
                mine[(opened, event_bucket, group)] = values
        opened = self.opened[granularity]
        for (event_bucket, group), values in self.current[granularity].items():
            if start <= event_bucket < end:
                mine[(opened, event_bucket, group)] = values
        found: list[tuple[BucketKey, BaseValues]] = []
        for arrival, shard, event_bucket, values_of_group, values in \
                self.tables.read(granularity, start, end):
            group = tuple(float_key(v) for v in values_of_group)
            if shard == self.shard_id and (arrival, event_bucket, group) in mine:
                continue  # this node's memory is at least as new as its table row
            found.append(((event_bucket, shard, group), values))
        found += [((event_bucket, self.shard_id, group), values)
                  for (_, event_bucket, group), values in mine.items()]
        found.sort(key=lambda item: item[0][0])
        yield from found

    # -- state ---------------------------------------------------------------------------------
    def get_state(self) -> Any:
        """Flushes (this is the micro-batch's end), then the open rows."""
        self.flush()
        return {"opened": dict(self.opened), "closes": dict(self.closes),
                "current": self.current}

    def set_state(self, state: Any) -> None:
        self.opened = dict(state["opened"])
        self.closes = dict(state["closes"])
        self.current = {g: dict(state["current"].get(g, {})) for g in self.granularities}
        self.dirty = {g: set() for g in self.granularities}
        self.closed = []


# -- building ----------------------------------------------------------------------------------

_AGGREGATES = frozenset({"sum", "avg", "count", "min", "max", "distinctCount"})


def _plain_variables(expr: ast.Expression) -> Iterator[ast.Variable]:
    """Variables read outside the aggregate functions: the "last value" attributes."""
    match expr:
        case ast.FunctionCall() if expr.namespace is None and expr.name in _AGGREGATES:
            return
        case ast.Variable():
            yield expr
        case ast.BinaryOperation():
            yield from _plain_variables(expr.left)
            yield from _plain_variables(expr.right)
        case ast.Not() | ast.Negate() | ast.IsNull() | ast.In():
            yield from _plain_variables(expr.expression)
        case ast.FunctionCall():
            for arg in expr.args:
                yield from _plain_variables(arg)


def aggregation_layout(definition: ast.AggregationDefinition, plan: BasePlan,
                       attributes: Sequence[ast.Attribute], granularities: tuple[str, ...],
                       sharded: bool) -> AggregationLayout:
    """What the aggregation's tables hold (column names and types, positions in the input)."""
    positions = {a.name: i for i, a in enumerate(attributes)}
    group = [Attr(v.attribute, attributes[positions[v.attribute]].type, positions[v.attribute])
             for v in definition.selector.group_by]
    grouped = {a.name for a in group}
    items = definition.selector.attributes
    if items is None:
        read = [a.name for a in attributes]
    else:
        read = [v.attribute for item in items for v in _plain_variables(item.expression)]
    plain: list[Attr] = []
    for name in read:
        if name in positions and name not in grouped and all(p.name != name for p in plain):
            plain.append(Attr(name, attributes[positions[name]].type, positions[name]))
    bases = tuple(Base(c.name, c.kind, c.type) for c in plan.columns)
    return AggregationLayout(definition.name, granularities, len(attributes),
                             definition.aggregate_by is not None, sharded, tuple(group),
                             tuple(plain), bases)


def rdbms_store(store: ast.Annotation, layout: AggregationLayout, settings: NodeSettings,
                shard_id: str | None) -> RdbmsAggregationStore:
    """The store of ``@store(type='rdbms', jdbc.url=… | datasource=…)``, tables created."""
    options = {e.key.lower(): e.value for e in store.elements if e.key is not None}
    tables = AggregationTables(connect(store_url(options, settings.datasources)), layout)
    tables.create()
    return RdbmsAggregationStore(tables, shard_id)
