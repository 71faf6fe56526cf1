"""One single-stream query at run time: its processing chain and where its output goes.

The chain is the reference's: stream handlers in written order (filters, stream functions,
at most one window), then the selector, the rate limiter and the output callbacks. A chunk
from the input junction enters at the first handler; a window's timer enters at the window
(the reference's entry valve), a rate limiter's timer at the limiter.

Emitting: the query callback sees current and expired events (reset events are dropped),
each becoming an :class:`~eddy.runtime.model.OutputEvent`; then the chunk, all
events now current, is published to the target (a stream's junction or a named window),
whose subscribers run before this query emits again (depth first, as the reference's
synchronous junctions do).

``order`` paths: a query reached through path ``P`` gives its ``c``-th emission's events
``P + (c, 0, i)`` and its subscribers ``P + (c, 1, j)``, ``j`` being the subscriber's index
in the app; inputs start at ``(1, j)`` and timers at ``(0, scheduler, n)``. Sorting by path
is sorting by emission order, within one runtime or across runtimes built from one app.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from eddy.runtime.context import Context, Path
from eddy.runtime.events import CURRENT, EXPIRED, TIMER, Event, OutEvent
from eddy.runtime.model import OutputEvent
from eddy.runtime.ratelimit import RateLimiter
from eddy.runtime.selector import Selector
from eddy.runtime.windows.base import Window

Chunk = list[Any]
Publisher = Callable[[list[Event], Path], None]

log = logging.getLogger("eddy.runtime")


class Stage:
    """A stateless stream handler: ``apply(chunk)`` returns the chunk to pass on."""

    def apply(self, chunk: Chunk) -> Chunk:
        raise NotImplementedError


class FilterStage(Stage):
    """``[condition]``: keeps the events whose condition is true.

    Timer events never pass: the reference would evaluate the condition on a timer's empty
    data and fail; eddy drops the timer (the window before the filter has used it).
    """

    def __init__(self, condition: Callable[[Event], Any]) -> None:
        self.condition = condition

    def apply(self, chunk: Chunk) -> Chunk:
        condition = self.condition
        return [e for e in chunk if e[0] != TIMER and condition(e)]


class LogStage(Stage):
    """``#log(...)``: logs each event and passes it on unchanged."""

    def __init__(self, query: str, message: Callable[[Event], Any] | None) -> None:
        self.query = query
        self.message = message

    def apply(self, chunk: Chunk) -> Chunk:
        if log.isEnabledFor(logging.INFO):
            for event in chunk:
                if event[0] != TIMER:
                    text = self.message(event) if self.message else ""
                    log.info("%s: %s %s", self.query, text, event)
        return chunk


class Pol2CartStage(Stage):
    """``#pol2Cart(theta, rho [, z])``: appends ``x``, ``y`` (and ``z``) to each event."""

    def __init__(self, args: Sequence[Callable[[Event], Any]]) -> None:
        self.args = list(args)

    def apply(self, chunk: Chunk) -> Chunk:
        out: Chunk = []
        for event in chunk:
            if event[0] == TIMER:
                out.append(event)
                continue
            theta, rho = self.args[0](event), self.args[1](event)
            radians = math.radians(theta)
            extra: tuple[Any, ...] = (rho * math.cos(radians), rho * math.sin(radians))
            if len(self.args) == 3:
                extra += (self.args[2](event),)
            out.append((event[0], event[1], event[2] + extra))
        return out


class QueryRuntime:
    """A compiled query with its stateful parts (window, selector, rate limiter)."""

    def __init__(self, query_id: str, index: int, context: Context, pre: list[Stage],
                 window: Window | None, post: list[Stage], selector: Selector,
                 limiter: RateLimiter, target: str | None) -> None:
        self.id = query_id
        self.index = index
        self.context = context
        self.pre = pre
        self.window = window
        self.post = post
        self.selector = selector
        self.limiter = limiter
        self.target = target
        self.publish: Publisher | None = None
        if window is not None and window.scheduler is not None:
            window.scheduler.target = self.on_window_timer
        if limiter.timed:
            scheduler = getattr(limiter, "scheduler", None)
            if scheduler is not None:
                scheduler.target = self.on_limiter_timer
            context.start_hooks.append(limiter.start)

    # -- entry points ----------------------------------------------------------------------
    def receive(self, chunk: Chunk, path: Path) -> None:
        """A chunk from the input junction."""
        for stage in self.pre:
            chunk = stage.apply(chunk)
            if not chunk:
                return
        self._from_window(chunk, path)

    def on_window_timer(self, time: int, path: Path) -> None:
        self._from_window([(TIMER, time, None)], path)

    def on_limiter_timer(self, time: int, path: Path) -> None:
        out = self.limiter.on_timer(time)
        if out:
            self._emit(out, path, 0)

    # -- the chain -------------------------------------------------------------------------
    def _from_window(self, chunk: Chunk, path: Path) -> None:
        chunks = self.window.process(chunk) if self.window is not None else [chunk]
        self.select_and_emit(chunks, path)

    def select_and_emit(self, chunks: list[Chunk], path: Path) -> None:
        """The tail every query shares, whatever feeds it (a window here; a join or pattern
        processor later): handlers after the window, selector, rate limiter, output."""
        emitted = 0
        selector, limiter = self.selector, self.limiter
        for piece in chunks:
            for stage in self.post:
                piece = stage.apply(piece)
                if not piece:
                    break
            if not piece:
                continue
            selected = selector.process(piece)
            if selected is None:
                continue
            out = limiter.process(selected)
            if out:
                self._emit(out, path, emitted)
                emitted += 1

    def select_and_emit_together(self, chunks: list[Chunk], path: Path,
                                 emission: int = 0) -> None:
        """The tail of a join (``QuerySelector.process(List)``): each chunk goes through the
        selector on its own, then everything selected reaches the rate limiter and the
        output as one chunk."""
        selected: list[OutEvent] = []
        for piece in chunks:
            out = self.selector.process(piece)
            if out:
                selected += out
        if selected:
            limited = self.limiter.process(selected)
            if limited:
                self._emit(limited, path, emission)

    def _emit(self, events: list[OutEvent], path: Path, emission: int) -> None:
        context = self.context
        seq, outputs = context.seq, context.outputs
        query_id, target = self.id, self.target
        published: list[Event] = []
        base = path + (emission, 0)
        for i, event in enumerate(events):
            kind = event[0]
            if kind == CURRENT or kind == EXPIRED:
                outputs.append(OutputEvent(seq, base + (i,), event[1], query_id, target,
                                           event[2], kind == EXPIRED))
                published.append((CURRENT, event[1], event[2]))
        if published and self.publish is not None:
            self.publish(published, path + (emission, 1))

    # -- state -----------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        return {"window": self.window.get_state() if self.window is not None else None,
                "selector": self.selector.get_state(),
                "limiter": self.limiter.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        if self.window is not None:
            self.window.set_state(state["window"])
        self.selector.set_state(state["selector"])
        self.limiter.set_state(state["limiter"])
