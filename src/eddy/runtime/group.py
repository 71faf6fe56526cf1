"""The runtime of one execution group: :func:`build_runtime` and the :class:`GroupRuntime`
it returns.

Built from an analysed app (or a subset of its queries), the runtime wires junctions, named
windows and queries the way the reference's ``SiddhiAppParser`` does, and then processes
input events one at a time: move the clock (firing due timers, each as its own chunk), then
hand the event to its stream's junction (or named window). All output is returned as
:class:`~eddy.runtime.model.OutputEvent` with the input's ``seq`` and an ``order``
that sorts it into the reference's emission order.

State (``snapshot``/``restore``) is plain data: the clock, every scheduler's queue, each
window's contents, each selector's aggregate states and each rate limiter's holdings,
pickled. Compiled closures are never part of it; a fresh ``build_runtime`` of the same app
restored from a snapshot continues exactly as the original would have.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from eddy.gcpause import gc_paused
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.runtime.aggregation import AggregationRuntime, build_aggregations
from eddy.runtime.context import Context
from eddy.runtime.events import CURRENT, to_float32
from eddy.runtime.javahash import ConcurrentHashOrder
from eddy.runtime.join import build_join
from eddy.runtime.junction import Junction, NamedWindow, Receiver
from eddy.runtime.model import InputEvent, OutputEvent
from eddy.runtime.on_demand import run_store_query
from eddy.runtime.partition import Member, PartitionRuntime
from eddy.runtime.pattern import build_pattern_query, pattern_scheduler_keys
from eddy.runtime.query import QueryRuntime
from eddy.runtime.query_builder import (
    UnsupportedQuery,
    build_query,
    limiter_uses_scheduler,
    unsupported_reason,
    uses_scheduler,
)
from eddy.runtime.table import Table, build_tables
from eddy.runtime.table_query import table_compiler, table_output
from eddy.runtime.windows import Window, WindowArgs, window_class

__all__ = ["Runtime", "UnsupportedQuery", "build_runtime"]

_STATE_VERSION = 1


def build_runtime(analyzed: AnalyzedApp, query_ids: Sequence[str] | None = None) -> Runtime:
    """The runtime for ``analyzed``'s queries (all top-level ones when ``query_ids`` is None).

    Raises :class:`UnsupportedQuery` for a query the runtime cannot run (see
    :func:`unsupported_reason`).
    """
    return Runtime(analyzed, query_ids)


def scheduler_order(analyzed: AnalyzedApp) -> dict[str, int]:
    """The creation index of every scheduler the app has, as the reference creates them:
    named windows first (in its window map's order), then per query its window's and its
    rate limiter's. Computed over the whole app so that indices agree across runtimes built
    from different subsets."""
    order: dict[str, int] = {}
    names = ConcurrentHashOrder()
    windows = {}
    for info in analyzed.streams.values():
        if info.kind == "window" and isinstance(info.definition, ast.WindowDefinition):
            names.add(info.name)
            windows[info.name] = info.definition
    for name in names:
        window = windows[name].window
        if window is not None and uses_scheduler(window):
            order[f"named:{name}"] = len(order)
    for query in analyzed.queries:
        for key in pattern_scheduler_keys(query):  # a pattern's absent states ('not S for t')
            order[key] = len(order)
        for handler in _handlers(query.query.input):
            if isinstance(handler, ast.Window) and uses_scheduler(handler):
                key = f"window:{query.id}"
                order[key if key not in order else f"{key}:{len(order)}"] = len(order)
        if limiter_uses_scheduler(query.query.output_rate):
            order[f"limiter:{query.id}"] = len(order)
    return order


def _handlers(stream: ast.InputStream) -> list[ast.StreamHandler]:
    if isinstance(stream, ast.SingleInputStream):
        return list(stream.handlers)
    if isinstance(stream, ast.JoinInputStream):
        return list(stream.left.handlers) + list(stream.right.handlers)
    return []


def _findable_windows(analyzed: AnalyzedApp) -> set[str]:
    """Named windows a join (or an ``in`` condition) reads: ``findToBeExecuted``."""
    found: set[str] = set()
    for info in analyzed.queries:
        if isinstance(info.query.input, ast.JoinInputStream):
            found.update(info.inputs)
    return found


class Runtime:
    """A :class:`~eddy.runtime.model.GroupRuntime`: queries, named windows, tables
    and partitions of one execution group."""

    def __init__(self, analyzed: AnalyzedApp, query_ids: Sequence[str] | None) -> None:
        self.analyzed = analyzed
        self.context = Context()
        self.schedulers = scheduler_order(analyzed)
        self.junctions: dict[str, Junction] = {}
        self.windows: dict[str, NamedWindow] = {}
        self.queries: dict[str, Member] = {}
        self.tables: dict[str, Table] = build_tables(analyzed)
        self.compiler = table_compiler(self.tables)  # expressions may read tables ('in T')
        self.partitions: list[PartitionRuntime] = []
        # Aggregations subscribe first: the reference defines them before any query.
        self.aggregations: dict[str, AggregationRuntime] = build_aggregations(
            analyzed, self.context, self.compiler)
        for i, aggregation in enumerate(self.aggregations.values()):
            self._junction(aggregation.input).subscribe(i - len(self.aggregations),
                                                        aggregation.receive)
        self.floats: dict[str, list[int]] = {
            name: [i for i, a in enumerate(info.attributes) if a.type == AttrType.FLOAT]
            for name, info in analyzed.streams.items()}
        selected = self._select(query_ids)
        inner = [q for p in analyzed.partitions for q in p.queries]
        for info in selected + inner:
            for name in info.inputs:
                if name in analyzed.streams and analyzed.streams[name].kind == "window":
                    self._named_window(name)
            if info.target_kind == "window" and info.target is not None:
                self._named_window(info.target)
        for info in selected:
            self._add_query(info)
        for partition in self.analyzed.partitions:
            if query_ids is None or any(q.id in query_ids for q in partition.queries):
                self.partitions.append(PartitionRuntime(partition, self))

    def _select(self, query_ids: Sequence[str] | None) -> list[QueryInfo]:
        top = [q for q in self.analyzed.queries if q.partition is None]
        if query_ids is None:
            chosen = top
        else:
            by_id = {q.id: q for q in self.analyzed.queries}
            missing = [q for q in query_ids if q not in by_id]
            if missing:
                raise KeyError(f"no query {', '.join(map(repr, missing))} in the app")
            wanted = set(query_ids)
            chosen = [q for q in top if q.id in wanted]  # partitions build their own
        for info in chosen:
            reason = unsupported_reason(info)
            if reason is not None:
                raise UnsupportedQuery(info.id, reason)
        return chosen

    def _junction(self, name: str) -> Junction:
        junction = self.junctions.get(name)
        if junction is None:
            junction = self.junctions[name] = Junction(name)
        return junction

    def _named_window(self, name: str) -> NamedWindow:
        existing = self.windows.get(name)
        if existing is not None:
            return existing
        info = self.analyzed.streams[name]
        definition = info.definition
        assert isinstance(definition, ast.WindowDefinition) and definition.window is not None
        handler = definition.window
        cls = window_class(handler.namespace, handler.name)
        if cls is None:
            raise UnsupportedQuery(name, f"window '{handler.name}' has no eddy implementation")
        positions = {a.name: i for i, a in enumerate(info.attributes)}
        event_type = definition.output_event_type or "all"

        def position_of(var: ast.Variable) -> int:
            return positions[var.attribute]

        from eddy.runtime.expressions import ExpressionCompiler

        compiler = ExpressionCompiler(self.analyzed.type_of, position_of, self.context)
        args = WindowArgs(handler, self.analyzed.type_of, position_of, compiler.compile,
                          [a.type for a in info.attributes])
        window: Window = cls(self.context, args, event_type != "current",
                             name in _findable_windows(self.analyzed))
        if cls.scheduling:
            window.scheduler = self.context.scheduler(self.schedulers[f"named:{name}"], name)
        bind = getattr(window, "bind", None)
        if bind is not None:
            bind(name, frozenset({name}), info.attributes)
        named = self.windows[name] = NamedWindow(name, window, event_type,
                                                 self._junction(name))
        return named

    def _add_query(self, info: QueryInfo) -> None:
        query, inputs = self.build_member(info, self._junction)
        self.queries[info.id] = query
        for stream, receiver in inputs:
            self._junction(stream).subscribe(info.index, receiver)

    def build_member(self, info: QueryInfo, junction: Callable[[str], Junction]
                     ) -> tuple[Member, list[tuple[str, Receiver]]]:
        """Builds one query's runtime and connects its output; returns it with the receivers
        of its input streams. ``junction`` gives the junctions of its input and inner ``#``
        streams: the group's, or a partition's own."""
        def index(key: str) -> int:
            return self.schedulers[key]

        query: QueryRuntime
        if isinstance(info.query.input, ast.StateInputStream):
            pattern = build_pattern_query(info, self.analyzed, self.context, index,
                                          self.tables)
            inputs = list(pattern.receivers.items())
            query = pattern
        elif isinstance(info.query.input, ast.JoinInputStream):
            join = build_join(info, self.analyzed, self.context, index, self.compiler,
                              self.tables, self.windows, self.aggregations)
            inputs = join.inputs()
            query = join.query
            self._connect_output(query, info, junction)
            return join, inputs
        else:
            query = build_query(info, self.analyzed, self.context, index, self.compiler)
            inputs = [(info.inputs[0], query.receive)]
        self._connect_output(query, info, junction)
        return query, inputs

    def _connect_output(self, query: QueryRuntime, info: QueryInfo,
                        junction: Callable[[str], Junction]) -> None:
        if info.target is None:
            return
        if info.target_kind == "window":
            window = self.windows[info.target]
            query.publish = lambda chunk, prefix, w=window: w.receive(chunk, prefix + (0,))
        elif info.target_kind == "stream":
            query.publish = self._junction(info.target).send
        elif info.target_kind == "inner":
            query.publish = junction(f"#{info.target}").send
        elif info.target_kind == "table":
            output = table_output(self.tables[info.target], info.query.output, info.outputs,
                                  self.compiler(self.analyzed.type_of, _no_position,
                                                self.context), self.analyzed.type_of)
            query.publish = output.receive

    # -- GroupRuntime ----------------------------------------------------------------------
    def process(self, events: Iterable[InputEvent]) -> list[OutputEvent]:
        """Processes ``events`` (in ``seq`` order) as if they arrived one at a time."""
        context = self.context
        outputs: list[OutputEvent] = []
        context.outputs = outputs
        junctions, windows, floats = self.junctions, self.windows, self.floats
        for event in events:
            context.seq = event.seq
            context.advance(event.ts)
            data = event.data
            positions = floats.get(event.stream)
            if positions:
                values = list(data)
                for p in positions:
                    if values[p] is not None:
                        values[p] = to_float32(values[p])
                data = tuple(values)
            chunk = [(CURRENT, event.ts, data)]
            window = windows.get(event.stream)
            if window is not None:
                window.receive(chunk, (1, 0))
                continue
            junction = junctions.get(event.stream)
            if junction is not None:
                junction.send(chunk, (1,))
        return outputs

    def advance(self, timestamp: int, seq: int) -> list[OutputEvent]:
        """Moves the clock without an event (live mode's wall-clock heartbeat); the timers
        that fire are attributed to ``seq``."""
        outputs: list[OutputEvent] = []
        self.context.outputs = outputs
        self.context.seq = seq
        self.context.advance(timestamp)
        return outputs

    def snapshot(self) -> bytes:
        state: dict[str, Any] = {
            "version": _STATE_VERSION,
            "context": self.context.get_state(),
            "queries": {qid: q.get_state() for qid, q in self.queries.items()},
            "windows": {name: w.get_state() for name, w in self.windows.items()},
            "tables": {name: t.get_state() for name, t in self.tables.items()},
            "partitions": [p.get_state() for p in self.partitions],
            "aggregations": {name: a.get_state() for name, a in self.aggregations.items()},
        }
        with gc_paused():
            return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, state: bytes) -> None:
        with gc_paused():
            loaded = pickle.loads(state)  # noqa: S301 - our own snapshot, from Spark's state store
        if loaded.get("version") != _STATE_VERSION:
            raise ValueError(f"runtime state version {loaded.get('version')} is not "
                             f"{_STATE_VERSION}")
        self.context.set_state(loaded["context"])
        for qid, query in self.queries.items():
            query.set_state(loaded["queries"][qid])
        for name, window in self.windows.items():
            window.set_state(loaded["windows"][name])
        for name, table in self.tables.items():
            table.set_state(loaded["tables"][name])
        for name, aggregation in self.aggregations.items():
            if name in loaded.get("aggregations", {}):
                aggregation.set_state(loaded["aggregations"][name])
        for partition, partition_state in zip(self.partitions, loaded["partitions"]):
            partition.set_state(partition_state)

    def store_query(self, query_text: str) -> list[tuple[Any, ...]]:
        """Runs an on-demand query against the group's tables (mutations return [])."""
        return run_store_query(self, query_text)


def _no_position(var: ast.Variable) -> int:
    raise KeyError(var.attribute)  # table operations resolve every variable themselves


if TYPE_CHECKING:
    from eddy.runtime.model import GroupRuntime

    def _implements_protocol(runtime: Runtime) -> GroupRuntime:
        return runtime
