"""Siddhi's core windows, one processor class each, found by name with :func:`window_class`.

``sliding`` holds the windows whose events pass at once (``length``, ``time``,
``timeLength``, ``externalTime``, ``delay``, ``sort``); ``batching`` the tumbling ones
(``lengthBatch``, ``timeBatch``, ``batch``); ``external_batch``, ``session``, ``frequent``
(with ``lossyFrequent``), ``expression`` (with ``expressionBatch``) and ``cron`` one family
each.
"""

from __future__ import annotations

from eddy.runtime.windows.base import Window, WindowArgs
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

WINDOWS: dict[str, type[Window]] = {
    "length": LengthWindow,
    "lengthBatch": LengthBatchWindow,
    "time": TimeWindow,
    "timeBatch": TimeBatchWindow,
    "timeLength": TimeLengthWindow,
    "externalTime": ExternalTimeWindow,
    "externalTimeBatch": ExternalTimeBatchWindow,
    "session": SessionWindow,
    "sort": SortWindow,
    "delay": DelayWindow,
    "batch": BatchWindow,
    "frequent": FrequentWindow,
    "lossyFrequent": LossyFrequentWindow,
    "expression": ExpressionWindow,
    "expressionBatch": ExpressionBatchWindow,
    "cron": CronWindow,
}


def window_class(namespace: str | None, name: str) -> type[Window] | None:
    """The processor for ``#window.[namespace:]name``, or None if eddy has none."""
    if namespace is not None:
        return None
    return WINDOWS.get(name)


__all__ = ["WINDOWS", "Window", "WindowArgs", "window_class"]
