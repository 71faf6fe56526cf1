"""An asyncio event loop on its own thread, so synchronous callers can drive async clients.

Spark's data source callbacks and HTTP handlers call the bus from plain threads; the NATS
client is asyncio. Each NATS bus owns one loop thread and submits coroutines to it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A running event loop on a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedules ``coro`` on the loop; the future resolves with its result."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a coroutine cannot wait for its own loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs ``coro`` on the loop and waits for its result."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        """Stops the loop and joins the thread (idempotent)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
