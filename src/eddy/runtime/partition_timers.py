"""Timers of partitioned queries: one notification queue per partition key.

In the reference a partitioned query's ``Scheduler`` keeps one ``SchedulerState`` (a FIFO of
notification times) per partition key. When the clock moves, it collects the keys whose
first notification is due into a ``TreeMultimap`` keyed by that time; since the states all
compare equal, only the *first* key (in the state map's ``HashMap`` order) is kept for each
due time. It then fires those keys in time order, each key's due notifications one after
another; a key dropped because another one was due at the same time fires at the next
clock move.

:class:`KeyedTimers` reproduces that behind the queue interface the group's
:class:`~eddy.runtime.context.Context` drives (``bool``, ``[0]``, ``popleft``): it
takes the place of a partitioned scheduler's ``queue``, files ``append`` (``notify_at``)
under the partition key being processed, and presents the firing plan as the queue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from eddy.bus.routing import java_string_hash
from eddy.runtime.context import Context, Path, Scheduler
from eddy.runtime.javahash import hash_map_capacity, spread


class KeyedOwner(Protocol):
    """What the timers need from their partition: the key being processed, and a way to
    run a timer under another key."""

    active: str | None

    def enter(self, key: str) -> str | None: ...

    def leave(self, previous: str | None) -> None: ...


class TimerQueues:
    """Plain-data state of one partitioned scheduler: a queue per key, and the key map's
    ``HashMap`` layout (insertion numbers and capacity) that orders them."""

    __slots__ = ("queues", "inserted", "counter", "capacity")

    def __init__(self) -> None:
        self.queues: dict[str, deque[int]] = {}
        self.inserted: dict[str, int] = {}
        self.counter = 0
        self.capacity = 16

    def add(self, key: str, time: int) -> None:
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = deque()
            self.inserted[key] = self.counter
            self.counter += 1
            self.capacity = hash_map_capacity(len(self.queues), self.capacity)
        queue.append(time)

    def drop_if_empty(self, key: str) -> None:
        """A state with nothing to notify is destroyed (and re-created at the map's end)."""
        queue = self.queues.get(key)
        if queue is not None and not queue:
            del self.queues[key]
            del self.inserted[key]

    def ordered_keys(self) -> list[str]:
        mask = self.capacity - 1
        return sorted(self.queues, key=lambda k: (spread(java_string_hash(k)) & mask,
                                                  self.inserted[k]))

    def get_state(self) -> Any:
        return {"queues": {k: list(q) for k, q in self.queues.items()},
                "inserted": dict(self.inserted), "counter": self.counter,
                "capacity": self.capacity}

    def set_state(self, state: Any) -> None:
        self.queues = {k: deque(q) for k, q in state["queues"].items()}
        self.inserted = dict(state["inserted"])
        self.counter = state["counter"]
        self.capacity = state["capacity"]


class KeyedTimers:
    """The ``queue`` of a partitioned :class:`Scheduler` (see the module docstring)."""

    def __init__(self, owner: KeyedOwner, context: Context, scheduler: Scheduler) -> None:
        self.owner = owner
        self.context = context
        self.scheduler = scheduler
        self.state = TimerQueues()
        self.plan: list[tuple[int, str]] = []
        self.stamp: tuple[int, int] | None = None
        self.firing: str | None = None
        self.target: Callable[[int, Path], None] | None = scheduler.target
        scheduler.target = self.fire

    def install(self) -> None:
        """(Re)places this object as the scheduler's queue (a restore replaces queues), and
        forgets the firing plan: it belongs to the state it was computed from. A runtime is
        reused for every state key and run a worker process sees, so a plan left from
        another state at the same ``(seq, now)`` would otherwise fire that state's keys."""
        self.scheduler.queue = self  # type: ignore[assignment]
        self.plan, self.stamp, self.firing = [], None, None

    # -- the scheduler's side: notify_at -----------------------------------------------------
    def append(self, time: int) -> None:
        key = self.owner.active
        if key is not None:
            self.state.add(key, time)

    # -- the context's side: the firing plan as a queue ---------------------------------------
    def _current_plan(self) -> list[tuple[int, str]]:
        stamp = (self.context.seq, self.context.now)
        if stamp != self.stamp:
            self.stamp = stamp
            now = self.context.now
            due: dict[int, str] = {}
            for key in self.state.ordered_keys():
                head = self.state.queues[key][0]
                if head <= now and head not in due:
                    due[head] = key
            self.plan = sorted(due.items())
        return self.plan

    def __bool__(self) -> bool:
        return bool(self._current_plan())

    def __len__(self) -> int:
        return len(self._current_plan())

    def __getitem__(self, index: int) -> int:
        return self._current_plan()[index][0]

    def __iter__(self) -> Iterator[int]:
        return iter(())  # the queues are the partition's state, not the context's

    def popleft(self) -> int:
        head, key = self._current_plan().pop(0)
        self.firing = key
        return head

    # -- firing ------------------------------------------------------------------------------
    def fire(self, due: int, path: Path) -> None:
        """Fires the popped key's due notifications, one after another, under that key."""
        key = self.firing
        target = self.target
        if key is None or target is None:
            return
        queue = self.state.queues.get(key)
        previous = self.owner.enter(key)
        try:
            n = 0
            now = self.context.now
            while queue:
                time = queue[0]
                if time > now:
                    break
                queue.popleft()
                target(time, path + (n,))
                n += 1
        finally:
            self.state.drop_if_empty(key)
            self.owner.leave(previous)
