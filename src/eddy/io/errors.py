"""Errors of sources, sinks and mappers.

Faults in an app's ``@source``/``@sink``/``@map`` annotations surface as
:class:`~eddy.lang.errors.SiddhiAppError` (the one error type at the boundary) built from
:class:`IoConfigError`; faults in data are :class:`MappingError`, which never escape a
source: they become HTTP 400 answers, fault-stream events or log lines.
"""

from __future__ import annotations

from eddy.lang.errors import NO_SPAN, AppIssue, Span


class IoError(Exception):
    """Base of the errors of :mod:`eddy.io`."""


class IoConfigError(IoError):
    """An ``@source``/``@sink``/``@map`` annotation eddy cannot build, with where it is."""

    def __init__(self, message: str, span: Span = NO_SPAN, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint

    @property
    def issue(self) -> AppIssue:
        """The fault as one issue of a :class:`~eddy.lang.errors.SiddhiAppError`."""
        return AppIssue("semantic", self.message, self.span, self.hint)


class MappingError(IoError):
    """A payload or an event that does not fit the stream; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PublishError(IoError):
    """A sink could not hand events to its target (after any retries it makes)."""


class SourceError(IoError):
    """A source cannot start: its port is taken, its server unreachable, its file unreadable."""
