"""Partitions: ``partition with (k of S, v < 10 as 'small' or v >= 10 as 'big' of T) begin …
end``, the reference's ``PartitionRuntime`` and ``PartitionStreamReceiver``.

The partition's queries are compiled once; what each partition key owns is their *state*
(windows, aggregates, rate limiters, a join's windows, a pattern's partial matches), created
fresh the first time an event with that key arrives, and the inner ``#`` streams flowing
under that key. Before a query runs for a key, the key's state is swapped in (the
reference's partition-keyed state holders do the same); a nested flow (a partition query
emitting into a stream this partition reads) swaps back afterwards.

Routing, per stream the partition reads:

- a partitioned stream (``k of S``, or ranges of S) computes each event's key: the value's
  Java ``toString`` (a null value goes nowhere), or the ``as`` label of every range whose
  condition holds (an event may go to several keys, in the written order). One event is
  sent per key; a chunk of events is cut into runs of equal keys, as the reference does;
- a stream the partition reads but does not partition goes to every existing key, in the
  order of a ``HashSet`` of the keys, and creates none;
- an inner stream ``#X`` stays within the key that produced it;
- a named window (``define window W``) is the app's, one for every key: a query of the
  partition inserting into it fills that one window, and the window's output reaches the
  partition like a stream's (``k of W`` routes it by key, else it goes to every key). A
  join inside the partition only *probes* a named window: the reference's join marks a
  window side ``EventType.WINDOW`` and a partition creates its receivers only for
  ``DEFAULT`` inputs, so the window's events never trigger the join there.

Time: each key has its own timer queues (:mod:`.partition_timers`). A window processor's
fields that the reference keeps on the processor rather than in its state are shared by
all keys: ``timeBatch``'s next emission time is one for the whole partition, so a key that
arrives after the first batch started joins that schedule and never gets its own timer.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.inputs import source_of
from eddy.lang.scope import Scope
from eddy.lang.semantic import AnalyzedApp, PartitionInfo
from eddy.runtime.context import Path
from eddy.runtime.events import Event
from eddy.runtime.expressions import ExpressionCompiler
from eddy.runtime.javahash import ConcurrentHashOrder, hash_map_order, java_str
from eddy.runtime.join import JoinQueryRuntime
from eddy.runtime.junction import Junction
from eddy.runtime.partition_timers import KeyedTimers
from eddy.runtime.query_builder import UnsupportedQuery
from eddy.runtime.windows.base import Window
from eddy.runtime.windows.batching import TimeBatchWindow

if TYPE_CHECKING:
    from eddy.runtime.group import Runtime

Receiver = Callable[[list[Event], Path], None]
KeyFn = Callable[[Event], str | None]

# Processor fields the reference does not keep per partition key (see the module docstring).
SHARED_WINDOW_FIELDS: dict[type[Window], tuple[str, ...]] = {TimeBatchWindow: ("next_emit",)}

__all__ = ["Member", "PartitionRuntime"]


class Member(Protocol):
    """A query runtime whose state a partition keeps per key."""

    id: str

    def get_state(self) -> Any: ...

    def set_state(self, state: Any) -> None: ...


def member_windows(member: Member) -> list[Window]:
    """The window processors a query owns (a join owns one per side)."""
    windows = getattr(member, "windows", None)
    if callable(windows):
        return list(windows())
    window = getattr(member, "window", None)
    return [window] if isinstance(window, Window) else []


def partition_input_problem(analyzed: AnalyzedApp, inputs: tuple[str, ...]) -> str | None:
    """Why a query inside a partition cannot read ``inputs`` here, or None: it may read
    streams, tables and named windows, not aggregations."""
    for name in inputs:
        info = analyzed.streams.get(name)
        if info is not None and info.kind not in ("stream", "table", "window"):
            return f"a partition reading {info.kind} '{name}' is not supported by this runtime yet"
    return None


class PartitionRuntime:
    """One ``partition … begin … end`` of a group: its queries and the state of every key."""

    def __init__(self, info: PartitionInfo, runtime: Runtime) -> None:
        self.info = info
        self.runtime = runtime
        self.context = runtime.context
        self.local: dict[str, Junction] = {}
        self.members: list[Member] = []
        for query in info.queries:
            self._check_inputs(query.id, query.inputs)
        for position, query in enumerate(info.queries):
            member, inputs = runtime.build_member(query, self._junction)
            for name, receiver in inputs:
                if isinstance(member, JoinQueryRuntime) and name in runtime.windows:
                    continue  # a join's named-window side only probes here (module docstring)
                self._junction(name).subscribe(position, receiver)
            self.members.append(member)
        self.executors = self._executors()
        for name in self.local:
            if not name.startswith("#"):
                runtime._junction(name).subscribe(info.index, self._receiver(name))
        ids = {m.id for m in self.members}
        self.timers = [KeyedTimers(self, self.context, s) for s in self.context.schedulers
                       if s.owner in ids]
        for timers in self.timers:
            timers.install()
        self.shared = [(i, w, field) for i, m in enumerate(self.members)
                       for w in member_windows(m)
                       for field in SHARED_WINDOW_FIELDS.get(type(w), ())]
        self.fresh = pickle.dumps([m.get_state() for m in self.members],
                                  protocol=pickle.HIGHEST_PROTOCOL)
        self.shared_values = [getattr(w.state, field) for _, w, field in self.shared]
        self.keys = ConcurrentHashOrder()
        self.instances: dict[str, list[Any]] = {}
        self.active: str | None = None
        self.depth = 0  # how many sends into this partition are running (nested flows)

    # -- building ----------------------------------------------------------------------------
    def _check_inputs(self, query_id: str, inputs: tuple[str, ...]) -> None:
        problem = partition_input_problem(self.runtime.analyzed, inputs)
        if problem is not None:
            raise UnsupportedQuery(query_id, problem)

    def _junction(self, name: str) -> Junction:
        """The partition's own junction of stream ``name`` (inner ``#X`` streams included)."""
        junction = self.local.get(name)
        if junction is None:
            junction = self.local[name] = Junction(name)
        return junction

    def _executors(self) -> dict[str, list[KeyFn]]:
        analyzed = self.runtime.analyzed
        executors: dict[str, list[KeyFn]] = {}
        for ptype in self.info.partition.partition_types:
            stream = analyzed.streams[ptype.stream]
            scope = Scope((source_of(stream, frozenset({stream.name})),))
            positions = {a.name: i for i, a in enumerate(stream.attributes)}

            def position_of(var: ast.Variable, scope: Scope = scope,
                            positions: dict[str, int] = positions) -> int:
                return positions[scope.resolve(var).attribute.name]

            compiler = self.runtime.compiler(analyzed.type_of, position_of, self.context)
            if isinstance(ptype, ast.ValuePartitionType):
                executors[ptype.stream] = [_value_key(compiler, ptype.expression,
                                                      analyzed.type_of(ptype.expression))]
            else:
                executors[ptype.stream] = [_range_key(compiler, r.condition, r.key)
                                           for r in ptype.ranges]
        return executors

    # -- receiving ---------------------------------------------------------------------------
    def _receiver(self, name: str) -> Receiver:
        executors = self.executors.get(name)
        junction = self.local[name]
        if not executors:
            return lambda chunk, path: self._broadcast(junction, chunk, path)
        return lambda chunk, path: self._route(junction, executors, chunk, path)

    def _route(self, junction: Junction, executors: list[KeyFn], chunk: list[Event],
               path: Path) -> None:
        sent = 0
        if len(chunk) == 1:
            for executor in executors:
                key = executor(chunk[0])
                if key is not None:
                    self._send(key, junction, [chunk[0]], path + (sent,))
                    sent += 1
            return
        # PartitionStreamReceiver.receive(ComplexEvent): runs of equal keys become chunks.
        current: str | None = None
        run: list[Event] = []
        for event in chunk:
            matched = False
            for executor in executors:
                key = executor(event)
                if key is None:
                    continue
                if current is None:
                    current = key
                elif current != key:
                    self._send(current, junction, run, path + (sent,))
                    sent += 1
                    current, run = key, ([event] if matched else [])
                if not matched:
                    run.append(event)
                matched = True
        if current is not None and run:
            self._send(current, junction, run, path + (sent,))

    def _broadcast(self, junction: Junction, chunk: list[Event], path: Path) -> None:
        keys = list(self.keys)
        capacity = _table_size(max(int(len(keys) / 0.75) + 1, 16))  # new HashSet<>(keys)
        for n, key in enumerate(hash_map_order(keys, capacity)):
            self._send(key, junction, chunk, path + (n,))

    def _send(self, key: str, junction: Junction, chunk: list[Event], path: Path) -> None:
        """Runs ``chunk`` under ``key``. Only a nested flow (this partition's own output
        coming back in) returns to the key it interrupted; an event from outside leaves its
        key live, so the next event of the same key costs no state swap at all."""
        self.depth += 1
        previous = self.enter(key)
        try:
            junction.send(chunk, path)
        finally:
            self.depth -= 1
            if self.depth:
                self.leave(previous)

    # -- keys --------------------------------------------------------------------------------
    def enter(self, key: str) -> str | None:
        """Makes ``key``'s state the live one (creating it on first use); returns the key
        that was live, for :meth:`leave`."""
        previous = self.active
        if previous == key:
            return previous
        self._park()
        states = self.instances.get(key)
        created = states is None
        if states is None:
            states = pickle.loads(self.fresh)  # noqa: S301 - our own pristine state
            self.instances[key] = states
            self.keys.add(key)
        for member, state in zip(self.members, states):
            member.set_state(state)
        for (_, window, field), value in zip(self.shared, self.shared_values):
            setattr(window.state, field, value)
        self.active = key
        if created:
            self._created()
        return previous

    def leave(self, previous: str | None) -> None:
        """Returns to the key that was live before :meth:`enter`."""
        if previous is not None and previous != self.active:
            self.enter(previous)

    def _park(self) -> None:
        """Files the live state under its key (the objects themselves: no copy)."""
        if self.active is None:
            return
        self.shared_values = [getattr(w.state, field) for _, w, field in self.shared]
        self.instances[self.active] = [m.get_state() for m in self.members]

    def _created(self) -> None:
        """``initPartition``: a new key's time-based rate limiters start now."""
        for member in self.members:
            limiter = getattr(member, "limiter", None) or getattr(
                getattr(member, "query", None), "limiter", None)
            if limiter is not None and limiter.timed:
                limiter.start(self.context.now)
            started = getattr(member, "partition_created", None)
            if callable(started):
                started(self.context.now)

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        self._park()
        return {"keys": list(self.keys), "instances": self.instances,
                "shared": self.shared_values, "active": self.active,
                "timers": [t.state.get_state() for t in self.timers]}

    def set_state(self, state: dict[str, Any]) -> None:
        self.keys = ConcurrentHashOrder()
        for key in state["keys"]:
            self.keys.add(key)
        self.instances = state["instances"]
        self.shared_values = state["shared"]
        for timers, timer_state in zip(self.timers, state["timers"]):
            timers.state.set_state(timer_state)
            timers.install()
        self.active = None
        if state["active"] is not None:
            self.enter(state["active"])


def _table_size(n: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at or above ``n``."""
    size = 1
    while size < n:
        size *= 2
    return size


def _value_key(compiler: ExpressionCompiler, expression: ast.Expression,
               kind: AttrType) -> KeyFn:
    """``ValuePartitionExecutor``: the value's Java string; null keys nothing."""
    value = compiler.compile(expression)
    single = kind == AttrType.FLOAT

    def key(event: Event) -> str | None:
        found = value(event)
        return None if found is None else java_str(found, single)
    return key


def _range_key(compiler: ExpressionCompiler, condition: ast.Expression, label: str) -> KeyFn:
    """``RangePartitionExecutor``: the label when the condition holds."""
    test = compiler.compile(condition, condition=True)
    return lambda event: label if test(event) else None
