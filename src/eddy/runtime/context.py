"""The clock, the schedulers and the output sink that every operator of a group shares.

Time is Siddhi's playback time (DESIGN.md §3): the clock is the largest event timestamp seen
so far, and it starts at 0 as the reference's ``TimestampGenerator`` does, so an event older
than the clock neither moves it nor fires timers. Moving the clock wakes the schedulers in
the order they were created (named windows first, then each query's window and its rate
limiter, as the reference builds them); each scheduler fires its due notifications in the
order they were requested (a FIFO, like the reference's queue, not a priority queue), one
timer chunk at a time, until its head is in the future.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from eddy.runtime.model import OutputEvent

Path = tuple[int, ...]
TimerTarget = Callable[[int, Path], None]


class Scheduler:
    """One reference ``Scheduler``: a FIFO of notification times and the operator it wakes.

    ``index`` is the scheduler's creation position in the whole app, so the ``order`` of
    timer-driven outputs is comparable across runtimes built from subsets of one app.
    """

    __slots__ = ("index", "queue", "target", "owner")

    def __init__(self, index: int, owner: str) -> None:
        self.index = index
        self.owner = owner
        self.queue: deque[int] = deque()
        self.target: TimerTarget | None = None

    def notify_at(self, time: int) -> None:
        self.queue.append(time)


class Context:
    """What a group's operators share while it processes: clock, schedulers, outputs.

    ``now`` and ``started`` are state (snapshotted with the group); ``seq`` and
    ``outputs`` belong to the input being processed.
    """

    __slots__ = ("now", "started", "seq", "outputs", "schedulers", "start_hooks")

    def __init__(self) -> None:
        self.now = 0
        self.started: int | None = None
        self.seq = 0
        self.outputs: list[OutputEvent] = []
        self.schedulers: list[Scheduler] = []
        self.start_hooks: list[Callable[[int], None]] = []

    def scheduler(self, index: int, owner: str) -> Scheduler:
        created = Scheduler(index, owner)
        self.schedulers.append(created)
        self.schedulers.sort(key=lambda s: s.index)
        return created

    def advance(self, timestamp: int) -> None:
        """Moves the clock to ``timestamp`` (if not behind it) and fires the due timers."""
        if self.started is None:
            # The reference arms its time-based rate limiters when the app starts; in event
            # time the app starts with its first event.
            self.started = timestamp
            for hook in self.start_hooks:
                hook(timestamp)
        if timestamp < self.now:
            return
        self.now = timestamp
        for scheduler in self.schedulers:
            queue = scheduler.queue
            fired = 0
            while queue and queue[0] <= timestamp:
                due = queue.popleft()
                target = scheduler.target
                if target is not None:
                    target(due, (0, scheduler.index, fired))
                fired += 1

    # -- state ---------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        return {"now": self.now, "started": self.started,
                "timers": {s.index: list(s.queue) for s in self.schedulers}}

    def set_state(self, state: dict[str, Any]) -> None:
        self.now = state["now"]
        self.started = state["started"]
        timers = state["timers"]
        for s in self.schedulers:
            s.queue = deque(timers.get(s.index, ()))
