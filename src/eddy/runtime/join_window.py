"""What a join finds on each side: the contents of the side's window, as the reference's
``FindableProcessor.find`` iterates them.

Each window keeps the events a join probes in a known part of its state (the reference's
``expiredEventQueue``, ``sortedWindow``, the frequent windows' map values, …); this module
knows where, so the windows themselves need no join-specific code. A side without a window
holds nothing (the reference's ``EmptyWindowProcessor``), and a named window is probed
through its own window processor.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eddy.runtime.events import CURRENT
from eddy.runtime.windows.base import Window
from eddy.runtime.windows.batching import BatchWindow, LengthBatchWindow, TimeBatchWindow
from eddy.runtime.windows.cron import CronWindow
from eddy.runtime.windows.expression import ExpressionBatchWindow, ExpressionWindow
from eddy.runtime.windows.external_batch import ExternalTimeBatchWindow
from eddy.runtime.windows.frequent import FrequentWindow, LossyFrequentWindow
from eddy.runtime.windows.session import SessionWindow
from eddy.runtime.windows.sliding import (
    DelayWindow,
    ExternalTimeWindow,
    LengthWindow,
    SortWindow,
    TimeLengthWindow,
    TimeWindow,
)

_QUEUES = (LengthWindow, TimeWindow, TimeLengthWindow, ExternalTimeWindow, DelayWindow)
_BATCHES = (LengthBatchWindow, TimeBatchWindow, BatchWindow, ExternalTimeBatchWindow,
            SessionWindow, ExpressionWindow)


def findable(window: Window) -> bool:
    """Whether a join can probe ``window`` (the reference's cron window is not findable)."""
    return not isinstance(window, CronWindow)


def window_contents(window: Window) -> Iterable[Any]:
    """The data of the events a join finds in ``window``, in the reference's order."""
    state = window.state
    if isinstance(window, _QUEUES):
        return [event[2] for event in state.queue]
    if isinstance(window, SortWindow):
        return [event[2] for event in state.events]
    if isinstance(window, _BATCHES):
        return [event[2] for event in (state.expired or ())]
    if isinstance(window, ExpressionBatchWindow):
        return [event[2] for event in state.current]
    if isinstance(window, (FrequentWindow, LossyFrequentWindow)):
        return [state.events[key][2] for key in state.order if key in state.events]
    raise TypeError(f"a join cannot find events in a {type(window).__name__}")


class ProbeIndex:
    """The events of a join side's ``length``/``time`` window by the value of one attribute
    (the side's :attr:`~eddy.runtime.join.JoinSide.probe`), so that an event of the
    other side finds its candidates without reading the whole window.

    Both windows are FIFO queues: an event enters at the tail when it arrives and leaves from
    the head. So each entry carries its arrival number, and the window holds exactly the
    last ``len(queue)`` arrivals: an older entry is gone, and is dropped when its key is next
    probed (or when stale entries outnumber live ones, by a rebuild from the queue). Per key
    the entries keep the queue's order, which is the order the reference finds them in.

    The index is derived data, never part of a snapshot: restoring the window's state (a
    restart, or a partition switching keys) invalidates it and the next probe rebuilds it.
    """

    __slots__ = ("window", "position", "keyed", "arrived", "entries", "valid")

    def __init__(self, window: Window, position: int) -> None:
        self.window = window
        self.position = position
        self.keyed: dict[Any, list[tuple[int, Any]]] = {}
        self.arrived = 0
        self.entries = 0
        self.valid = False

    @staticmethod
    def supports(window: Window) -> bool:
        """Whether ``window`` is one this index can follow."""
        return type(window) is TimeWindow or (type(window) is LengthWindow
                                              and getattr(window, "length", 0) > 0)

    def added(self, chunk: list[Any]) -> None:
        """The window just processed ``chunk``: its current events entered the queue."""
        if not self.valid:
            return
        keyed, position = self.keyed, self.position
        for event in chunk:
            if event[0] == CURRENT:
                self.arrived += 1
                data = event[2]
                bucket = keyed.get(data[position])
                if bucket is None:
                    keyed[data[position]] = [(self.arrived, data)]
                else:
                    bucket.append((self.arrived, data))
                self.entries += 1

    def find(self, key: Any) -> list[Any]:
        """The data of the window's events whose attribute equals ``key``, in queue order."""
        queue = self.window.state.queue
        if not self.valid or self.entries > 2 * len(queue) + 64:
            self._rebuild(queue)
        bucket = self.keyed.get(key)
        if bucket is None:
            return []
        gone = self.arrived - len(queue)
        drop = 0
        while drop < len(bucket) and bucket[drop][0] <= gone:
            drop += 1
        if drop:
            del bucket[:drop]
            self.entries -= drop
            if not bucket:
                del self.keyed[key]
                return []
        return [data for _, data in bucket]

    def _rebuild(self, queue: Iterable[Any]) -> None:
        self.keyed = {}
        self.arrived = self.entries = 0
        self.valid = True
        self.added([(CURRENT, event[1], event[2]) for event in queue])


__all__ = ["ProbeIndex", "findable", "window_contents"]
