"""The role changes of a minimum-HA node as ``GET /ha`` lists them, with each takeover's
measured times (the dashboard's failover timeline and ``bench/ha_failover.py`` read them).

Kept apart from the role keeper (:mod:`eddy.node.ha`): the keeper decides, this only
remembers — the last :data:`HISTORY` changes, a repeated status with the same reason once.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, replace
from typing import Any

HISTORY = 100
"""Role changes kept (oldest dropped first)."""


@dataclass(frozen=True)
class RoleChange:
    """One change of role, as ``GET /ha`` lists it."""

    at_ms: int
    status: str
    epoch: int | None
    holder: str | None
    reason: str
    loss_ms: int | None = None
    """On a takeover: the previous holder's last renewal as this node last saw it (the
    cluster database's clock), i.e. when the group lost its active node."""
    recovered_ms: int | None = None
    """On a takeover: when this node's apps had all become active (ready to output)."""
    first_output_ms: int | None = None
    """On a takeover: when the first events this node emitted were on the bus."""


def now_ms() -> int:
    """Wall-clock epoch milliseconds, the history's time."""
    return int(time.time() * 1000)


class RoleHistory:
    """The node's last role changes, oldest first; safe to use from any thread."""

    def __init__(self) -> None:
        self._changes: deque[RoleChange] = deque(maxlen=HISTORY)
        self._lock = threading.Lock()

    def entries(self) -> list[dict[str, Any]]:
        """The changes as plain dicts, oldest first."""
        with self._lock:
            return [asdict(change) for change in self._changes]

    def record(self, status: str, reason: str | None, epoch: int | None,
               holder: str | None) -> tuple[str, bool]:
        """Notes the node's status and why (``reason`` None: the last entry's, when the
        status is the same); returns the reason used and whether the status changed. A
        passive's new reason is kept without counting as a change: the holder it follows
        was replaced, say, and nothing else happened to this node."""
        with self._lock:
            last = self._changes[-1] if self._changes else None
            if reason is None:
                reason = last.reason if last is not None and last.status == status else ""
            changed = last is None or last.status != status or (
                reason != last.reason and status != "passive")
            if changed or (last is not None and reason != last.reason):
                self._changes.append(RoleChange(now_ms(), status, epoch, holder, reason))
            return reason, changed

    def note_takeover(self, *, loss_ms: int | None = None, recovered_ms: int | None = None,
                      first_output_ms: int | None = None) -> None:
        """Writes the takeover's times that are given into the latest ``active`` entry."""
        with self._lock:
            for i in range(len(self._changes) - 1, -1, -1):
                change = self._changes[i]
                if change.status == "active":
                    self._changes[i] = replace(
                        change, loss_ms=change.loss_ms if loss_ms is None else loss_ms,
                        recovered_ms=change.recovered_ms if recovered_ms is None
                        else recovered_ms,
                        first_output_ms=change.first_output_ms if first_output_ms is None
                        else first_output_ms)
                    return
