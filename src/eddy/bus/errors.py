"""Errors the bus raises on purpose; every one names the topic, partition or column at fault."""

from __future__ import annotations


class BusError(Exception):
    """Base of every error the bus raises on purpose."""


class BusURLError(BusError, ValueError):
    """A bus URL that cannot be opened (unknown scheme, missing or unknown parameter)."""


class TopicSpecError(BusError, ValueError):
    """A topic definition that cannot be created (bad name, key or partition count)."""


class UnknownTopicError(BusError, LookupError):
    """A topic that was never created on this bus."""


class TopicConflictError(BusError):
    """``create_topic`` for an existing topic with a different definition."""


class BatchSchemaError(BusError, ValueError):
    """An appended batch whose columns do not fit the topic's attributes."""


class SequenceRangeError(BusError, IndexError):
    """A read outside the stored events: removed by retention, or not yet written."""
