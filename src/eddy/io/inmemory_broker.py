"""Siddhi's ``InMemoryBroker``: topics that connect ``inMemory`` sinks, sources and Python code
inside one process."""

from __future__ import annotations

import threading
from collections.abc import Callable

Subscriber = Callable[[object], None]


class InMemoryBroker:
    """Topic name → subscribers; :meth:`publish` calls each subscriber in turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: dict[str, list[Subscriber]] = {}

    def subscribe(self, topic: str, subscriber: Subscriber) -> None:
        """Calls ``subscriber(message)`` for every message published to ``topic``."""
        with self._lock:
            self._subscribers.setdefault(topic, []).append(subscriber)

    def unsubscribe(self, topic: str, subscriber: Subscriber) -> None:
        """Stops calling ``subscriber`` (no error if it was not subscribed)."""
        with self._lock:
            subscribers = self._subscribers.get(topic, [])
            if subscriber in subscribers:
                subscribers.remove(subscriber)

    def publish(self, topic: str, message: object) -> int:
        """Hands ``message`` to every subscriber of ``topic``; returns how many there were.
        A subscriber that raises stops the publish (the publisher sees the error)."""
        with self._lock:
            subscribers = list(self._subscribers.get(topic, ()))
        for subscriber in subscribers:
            subscriber(message)
        return len(subscribers)


_default = InMemoryBroker()


def default_broker() -> InMemoryBroker:
    """The process's broker."""
    return _default
