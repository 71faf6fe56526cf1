"""``#window.frequent(n [, attrs…])`` and ``#window.lossyFrequent(support [, error [, attrs…]])``.

Both key events by the Java string concatenation of the chosen attributes (all of them when
none is given) and keep one event per key. ``frequent`` is the Misra–Gries summary: a new key
beyond ``n`` decrements every count and expires the keys that reach zero; ``lossyFrequent``
is Lossy Counting: an event passes when its key's count reaches ``(support - error) · N``,
and keys are pruned at each bucket boundary. Keys expire in the order of the reference's
``ConcurrentHashMap``, which :mod:`..javahash` reproduces. Both windows are deprecated in
Siddhi.
"""

from __future__ import annotations

import math
from functools import cached_property

from eddy.lang.ast import AttrType
from eddy.runtime.events import EXPIRED, Event
from eddy.runtime.javahash import ConcurrentHashOrder, java_str
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs


class FrequentState(Slots):
    __slots__ = ("counts", "events", "order", "total", "bucket")

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}
        self.events: dict[str, Event] = {}
        self.order = ConcurrentHashOrder()
        self.total = 0
        self.bucket = 1.0


class _Keyed(Window):
    positions: list[int]

    def key(self, event: Event) -> str:
        """The attributes' Java strings, concatenated (FLOATs printed as ``Float``)."""
        data = event[2]
        floats = self.floats
        positions = self.positions or range(len(data))
        return "".join(java_str(data[p], p in floats) for p in positions)

    @cached_property
    def floats(self) -> set[int]:
        return {i for i, t in enumerate(self.args.attribute_types) if t == AttrType.FLOAT}

    def fresh_state(self) -> FrequentState:
        return FrequentState()


class FrequentWindow(_Keyed):
    def configure(self, args: WindowArgs) -> None:
        self.most = int(args.constant(0))
        self.positions = [args.index(i) for i in range(1, len(args))]

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: FrequentState = self.state
        now = self.context.now
        out: Chunk = []
        for event in chunk:
            key = self.key(event)
            had = state.events.get(key)
            state.events[key] = (EXPIRED, event[1], event[2])
            if had is not None:
                state.counts[key][0] += 1
                out.append(event)
                continue
            if len(state.events) > self.most:
                keys = list(state.order)
                for i in range(self.most):
                    victim = keys[i]
                    left = state.counts[victim][0] - 1
                    if left == 0:
                        del state.counts[victim]
                        state.order.remove(victim)
                        gone = state.events.pop(victim)
                        out.append((EXPIRED, now, gone[2]))
                    else:
                        state.counts[victim][0] = left
                if len(state.events) > self.most:
                    del state.events[key]  # no room was made: the event is dropped
                    continue
            state.counts[key] = [1]
            state.order.add(key)
            out.append(event)
        return [out]


class LossyFrequentWindow(_Keyed):
    def configure(self, args: WindowArgs) -> None:
        self.support = float(args.constant(0))
        self.error = float(args.constant(1)) if len(args) > 1 else self.support / 10
        self.positions = [args.index(i) for i in range(2, len(args))]
        self.width = math.ceil(1 / self.error)

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: FrequentState = self.state
        now = self.context.now
        out: Chunk = []
        threshold = self.support - self.error
        for event in chunk:
            state.total += 1
            if state.total != 1:
                state.bucket = float(math.ceil(state.total / self.width))
            key = self.key(event)
            had = state.events.get(key)
            state.events[key] = (EXPIRED, event[1], event[2])
            if had is not None:
                state.counts[key][0] += 1
            else:
                state.counts[key] = [1, int(state.bucket) - 1]
                state.order.add(key)
            if state.counts[key][0] >= threshold * state.total:
                out.append(event)
            if state.total % self.width == 0:
                for victim in list(state.order):
                    count, bucket = state.counts[victim]
                    if count + bucket <= state.bucket:
                        del state.counts[victim]
                        state.order.remove(victim)
                        gone = state.events.pop(victim)
                        out.append((EXPIRED, now, gone[2]))
        return [out]
