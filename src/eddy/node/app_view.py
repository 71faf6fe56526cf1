"""One deployed app as the worker's API sees it, and the errors changing an app raises:
shared by the registry (:mod:`eddy.node.registry`) and the changes mixed into it
(:mod:`eddy.node.app_roles`, :mod:`eddy.node.app_revisions`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from eddy.lang import AnalyzedApp

AppState = Literal["inactive", "active", "faulty", "passive"]
StatLevel = Literal["OFF", "BASIC", "DETAIL"]


class AppNotFound(LookupError):
    """No app of that name is deployed."""


class AppNotRunning(RuntimeError):
    """The app exists but is not running, so it has no state to back up or restore."""


class StateMismatch(RuntimeError):
    """A revision was taken with a different version of the app."""


@dataclass(frozen=True)
class AppView:
    """A snapshot of one deployed app, as the API shows it."""

    name: str
    text: str
    state: AppState
    deployed_at_ms: int
    error: dict[str, Any] | None = None
    note: str | None = None
    stat_level: StatLevel = "OFF"
    metrics: dict[str, float] = field(default_factory=dict)
    analyzed: AnalyzedApp | None = None
    failures: int = 0
    """How often the app was found faulty since the worker started."""


PASSIVE_NOTE = "passive HA node: validated and compiled, not running"
