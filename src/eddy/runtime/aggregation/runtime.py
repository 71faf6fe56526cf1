"""``define aggregation``: the write path (events into buckets) and the read path
(``within … per …``) of one incremental aggregation.

Write path. Each input event that passes the definition's filters is added, for every
granularity the aggregation keeps, to the row of its bucket and group: the bucket is the
UTC-calendar bucket of the event's time, which is the ``aggregate by`` attribute (long millis
or a ``yyyy-MM-dd HH:mm:ss[ Z]`` string) or else its arrival time. Arrival time never goes
back: an event arriving with an older timestamp joins the bucket that is open, as in the
reference, whose root executor adds it to its current partials. With event time a late
event merges into its own event-time bucket and is never dropped (the reference keys its
partials by the event-time bucket, ``AGG_EVENT_TIMESTAMP``, and regroups on read).

The reference keeps partials in a chain of executors and writes each bucket to its
granularity's table when it closes; a read merges the table rows inside ``within`` with the
not-yet-flushed partials of the finer executors. Keeping every granularity's rows up to
date per event gives exactly what that merge gives (one row per bucket and group, over all
events so far) without the chain. A batch of events given as columns takes the vectorised
twin of this path (:meth:`AggregationRuntime.add_columns`, :mod:`.vectorised`).

Storage: in memory (:mod:`.store`), or ``@store(type='rdbms', …)`` in WSO2's tables
(:mod:`.rdbms`: idempotent writes at each micro-batch's end, ``SHARD_ID`` per node when
sharded, :mod:`eddy.store.aggregation_settings`). ``@purge`` (:mod:`eddy.lang.aggregation_purge`)
deletes old buckets every interval, by the wall clock as in the reference.

Read path. :meth:`AggregationRuntime.find` returns the rows of the ``per`` granularity whose
bucket start lies in ``[start, end)`` — with ``aggregate by``, the open bucket cut into the
parts the reference filters one by one (:mod:`.chain`) — rows of several shards merged, each as
``(AGG_TIMESTAMP, *selected attributes)``, the schema on-demand queries and joins see.
"""

from __future__ import annotations

import time as wall_clock
from collections.abc import Callable
from typing import Any

from eddy.lang import ast
from eddy.lang.aggregation_purge import purge_policy
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp, StreamInfo
from eddy.runtime.aggregation.chain import ExecutorChain
from eddy.runtime.aggregation.rdbms import aggregation_layout, rdbms_store
from eddy.runtime.aggregation.store import (
    AggregationStore,
    BaseValues,
    BucketKey,
    InMemoryAggregationStore,
)
from eddy.runtime.aggregation.timeutil import (
    GRANULARITIES,
    AggregationTimeError,
    bucket_start,
    to_millis,
)
from eddy.runtime.aggregation.values import BasePlan
from eddy.runtime.aggregation.vectorised import column_aggregator
from eddy.runtime.context import Context, Path
from eddy.runtime.events import CURRENT, Event, float_key
from eddy.runtime.expressions import ExpressionCompiler
from eddy.store.aggregation_settings import NodeSettings, node_settings, shard_of
from eddy.store.connect import StoreError

__all__ = ["AggregationRuntime", "build_aggregations"]

Getter = Callable[[Any], Any]
CompilerFactory = Callable[..., ExpressionCompiler]


class AggregationRuntime:
    """One ``define aggregation``: fed by its input stream's junction, read by ``find``."""

    def __init__(self, info: StreamInfo, analyzed: AnalyzedApp, context: Context,
                 compiler: CompilerFactory, store: AggregationStore | None = None,
                 shard_id: str | None = None, settings: NodeSettings | None = None) -> None:
        definition = info.definition
        assert isinstance(definition, ast.AggregationDefinition)
        assert definition.input is not None
        self.name = info.name
        self.definition = definition
        self.input = definition.input.stream
        self.context = context
        settings = settings if settings is not None else node_settings()
        self.shard_id = shard_id if shard_id is not None else shard_of(definition, settings)
        self.granularities = tuple(g for g in GRANULARITIES if g in definition.granularities)
        self.purge = purge_policy(definition)
        source = analyzed.streams[self.input]
        positions = {a.name: i for i, a in enumerate(source.attributes)}

        def position_of(var: ast.Variable) -> int:
            return positions[var.attribute]

        flat = compiler(analyzed.type_of, position_of, context)
        self.filters: list[Getter] = [flat.compile(h.expression, condition=True)
                                      for h in definition.input.handlers
                                      if isinstance(h, ast.Filter)]
        self.plan = BasePlan(definition.selector, source.attributes, analyzed.type_of,
                             position_of, context)
        self.group_key = _group_key(definition.selector.group_by, analyzed, position_of)
        self.event_time: Getter | None = None
        if definition.aggregate_by is not None:
            self.event_time = flat.compile(definition.aggregate_by)
        self.store: AggregationStore = store or self._store(settings, source.attributes)
        self.chain: ExecutorChain | None = None
        """The reference's executor timing, which ``within`` reads with external time."""
        if self.event_time is not None and self.shard_id is None:
            self.chain = ExecutorChain(self.granularities)
        self.columns = column_aggregator(self, source.attributes)
        """The vectorised write path (:meth:`add_columns`), if it applies."""
        self.arrival = -1  # latest arrival time seen (state)
        self.next_purge: float | None = None  # wall-clock millis of the next purge (state)
        self._reopen = -1  # the arrival time at which the store must be told again
        self._buckets: tuple[int, tuple[int, ...]] = (-1, ())

    def _store(self, settings: NodeSettings, attributes: tuple[ast.Attribute, ...]
               ) -> AggregationStore:
        annotation = ast.find_annotation(self.definition.annotations, "store")
        kind = (annotation.get("type") or "") if annotation is not None else "inMemory"
        if annotation is None or kind.lower() in ("inmemory", "in-memory", ""):
            return InMemoryAggregationStore(self.granularities)
        if kind.lower() != "rdbms":
            raise StoreError(f"aggregation '{self.name}': store type '{kind}' is not supported "
                             "(use type='rdbms' or no @store for memory)")
        layout = aggregation_layout(self.definition, self.plan, attributes,
                                    self.granularities, self.shard_id is not None)
        return rdbms_store(annotation, layout, settings, self.shard_id)

    # -- write path -------------------------------------------------------------------------
    def receive(self, chunk: list[Event], path: Path) -> None:
        """Adds the chunk's current events to their buckets."""
        for event in chunk:
            if event[0] != CURRENT:
                continue
            if self.filters and not all(f(event) for f in self.filters):
                continue
            self.add(event)
        if self.next_purge is None and self.purge.enabled:
            # The first run is one interval after the first event, as the reference
            # schedules it one interval after start.
            self.next_purge = wall_clock.time() * 1000 + self.purge.interval

    def add(self, event: Event) -> None:
        """Adds one (filtered) input event."""
        if event[1] > self.arrival:
            self.arrival = event[1]
        if self.arrival >= self._reopen:
            self._reopen = self.store.open(self.arrival)
        if self.event_time is None:
            time = self.arrival
        else:
            value = self.event_time(event)
            if value is None:
                raise AggregationTimeError(
                    f"aggregation '{self.name}': the 'aggregate by' timestamp is null")
            time = to_millis(value)
            if self.chain is not None:
                self.chain.add(time)
        group = self.group_key(event)
        shard = self.shard_id
        store, plan = self.store, self.plan
        for granularity, start in zip(self.granularities, self._starts(time)):
            key: BucketKey = (start, shard, group)
            row = store.get(granularity, key)
            if row is None:
                row = plan.new_row()
                plan.add(row, event, time)
                store.upsert(granularity, [(key, row)])
            else:
                plan.add(row, event, time)

    def add_columns(self, ts: Any, columns: Any) -> None:
        """Adds a batch of input events given as numpy columns (arrival times, then one
        array per input attribute): the same rows as :meth:`receive`, vectorised."""
        if self.columns is None:
            raise AggregationTimeError(f"aggregation '{self.name}' has no vectorised path")
        self.columns.add(ts, columns)

    def _starts(self, time: int) -> tuple[int, ...]:
        second = time - time % 1000
        cached_second, starts = self._buckets
        if cached_second != second:
            starts = tuple(bucket_start(time, g) for g in self.granularities)
            self._buckets = (second, starts)
        return starts

    # -- read path ----------------------------------------------------------------------------
    def find(self, granularity: str, start: int, end: int) -> list[tuple[Any, ...]]:
        """``(AGG_TIMESTAMP, *selected)`` of every bucket of ``granularity`` in
        ``[start, end)``, merged over shards and late rows."""
        if granularity not in self.granularities:
            raise AggregationTimeError(
                f"the aggregate values for {granularity} granularity cannot be provided since "
                f"aggregation definition {self.name} does not contain {granularity} duration")
        merged: dict[tuple[int, tuple[Any, ...]], BaseValues] = {}
        level = self.granularities.index(granularity)
        open_at = self.chain.open_bucket(level) if self.chain is not None else -1
        self._merge(merged, self.store.scan(granularity, start, end), skip=open_at)
        if open_at != -1:
            self._merge_open(merged, granularity, level, open_at, start, end)
        return [self.plan.select(timestamp, row) for (timestamp, _), row in merged.items()]

    def _merge(self, merged: dict[tuple[int, tuple[Any, ...]], BaseValues],
               rows: Any, skip: int = -1, bucket: int | None = None) -> None:
        """Merges store rows into ``merged`` by (bucket, group), over shards; a row of the
        bucket ``skip`` is left out, and ``bucket`` replaces the rows' own bucket."""
        plan = self.plan
        for (timestamp, _shard, group), row in rows:
            if timestamp == skip:
                continue
            key = (timestamp if bucket is None else bucket, group)
            existing = merged.get(key)
            if existing is None:
                merged[key] = row
            elif existing is not row:
                combined = plan.copy(existing)
                plan.merge(combined, row)
                merged[key] = combined

    def _merge_open(self, merged: dict[tuple[int, tuple[Any, ...]], BaseValues],
                    granularity: str, level: int, open_at: int, start: int, end: int) -> None:
        """The open bucket of ``granularity`` as the reference reads it (:mod:`.chain`):
        each in-memory part kept when its own bucket start lies in ``[start, end)``."""
        assert self.chain is not None
        parts = self.chain.parts(level)
        kept = [part for part in parts if start <= part[0] < end]
        if len(kept) == len(parts):
            self._merge(merged, self.store.scan(granularity, open_at, open_at + 1))
            return
        for _, finer, low, high in kept:
            self._merge(merged, self.store.scan(finer, low, high), bucket=open_at)

    # -- state --------------------------------------------------------------------------------
    def purge_due(self, now: float | None = None) -> bool:
        """Runs ``@purge`` if its interval has passed (wall clock, as in the reference);
        returns whether it ran."""
        now = wall_clock.time() * 1000 if now is None else now
        if self.next_purge is None or now < self.next_purge:
            return False
        for granularity in self.granularities:
            retention = self.purge.retention.get(granularity)
            if retention is not None:
                self.store.purge(granularity, int(now) - retention)
        self.next_purge = now + self.purge.interval
        return True

    def get_state(self) -> dict[str, Any]:
        """The state at a micro-batch's end: an external store writes its changed rows
        here, before Spark commits the state (see :mod:`.rdbms`)."""
        self.purge_due()
        return {"arrival": self.arrival, "next_purge": self.next_purge,
                "store": self.store.get_state(),
                "chain": self.chain.get_state() if self.chain is not None else None}

    def set_state(self, state: dict[str, Any]) -> None:
        self.arrival = state["arrival"]
        self.next_purge = state.get("next_purge")
        if self.chain is not None:
            self.chain.set_state(state.get("chain"))
        self._reopen = -1
        self.store.set_state(state["store"])


def _group_key(variables: tuple[ast.Variable, ...], analyzed: AnalyzedApp,
               position_of: Callable[[ast.Variable], int]) -> Callable[[Event], tuple[Any, ...]]:
    specs = [(position_of(v), analyzed.type_of(v) in (AttrType.FLOAT, AttrType.DOUBLE,
                                                      AttrType.OBJECT))
             for v in variables]
    if not specs:
        return lambda event: ()
    return lambda event: tuple(float_key(event[2][p]) if f else event[2][p] for p, f in specs)


def build_aggregations(analyzed: AnalyzedApp, context: Context, compiler: CompilerFactory
                       ) -> dict[str, AggregationRuntime]:
    """The runtime of every ``define aggregation`` of the app, by name, in written order."""
    return {name: AggregationRuntime(info, analyzed, context, compiler)
            for name, info in analyzed.streams.items() if info.kind == "aggregation"}
