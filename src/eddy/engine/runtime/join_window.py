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

from eddy.engine.runtime.windows.base import Window
from eddy.engine.runtime.windows.batching import BatchWindow, LengthBatchWindow, TimeBatchWindow
from eddy.engine.runtime.windows.cron import CronWindow
from eddy.engine.runtime.windows.expression import ExpressionBatchWindow, ExpressionWindow
from eddy.engine.runtime.windows.external_batch import ExternalTimeBatchWindow
from eddy.engine.runtime.windows.frequent import FrequentWindow, LossyFrequentWindow
from eddy.engine.runtime.windows.session import SessionWindow
from eddy.engine.runtime.windows.sliding import (
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


__all__ = ["findable", "window_contents"]
