"""Siddhi's aggregate functions, step for step as the reference computes them.

Each aggregator is a stateless strategy over a small mutable list (its state), so group
states pickle as plain data. A current event adds, an expired event removes, a reset event
drops every group's state (the reference's ``cleanGroupByStates``), and with ``group by`` a
group's state is dropped as soon as it ``can_destroy`` (the reference's state holder does
this on every return), so a group that empties and refills starts afresh.

Quirks kept on purpose, because the reference's outputs show them:

- ``sum`` over INT/LONG removes in double arithmetic (``processRemove(double)`` is the
  overload a ``long`` argument picks), and wraps on overflow like Java's ``long``;
- ``min``/``max`` keep a monotonic deque only when the query's windows slide or the query
  outputs expired events (``trackFutureStates``); otherwise removing the current extreme
  forgets it (null) instead of falling back to the next one. The deque is exact for FIFO
  removal only: ``#window.sort`` removes out of order and can make ``min`` return null
  while events remain;
- ``stdDev`` uses Welford's update and its exact inverse on removal;
- ``minForever``/``maxForever`` treat a removal like an addition;
- a null argument leaves ``sum``/``avg``/``min``/``max``/``stdDev`` unchanged, is counted by
  ``count`` and is a distinct value for ``distinctCount``.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from eddy.lang.ast import AttrType
from eddy.runtime.events import (
    double_to_long,
    float_key,
    java_equals,
    to_float32,
    wrap_long,
)


def _sqrt(value: float) -> float:
    """``Math.sqrt``: NaN for a negative argument (Welford's removal can leave a tiny
    negative sum of squares; the reference then emits NaN, and so does eddy)."""
    return math.sqrt(value) if value >= 0 else math.nan


class Aggregator:
    """One aggregate function: how it adds, removes and when its state may be dropped."""

    name = ""

    def new(self) -> list[Any]:
        raise NotImplementedError

    def add(self, state: list[Any], value: Any) -> Any:
        raise NotImplementedError

    def remove(self, state: list[Any], value: Any) -> Any:
        raise NotImplementedError

    def can_destroy(self, state: list[Any]) -> bool:
        raise NotImplementedError


class SumLong(Aggregator):
    """``sum`` of INT/LONG: a LONG; null while nothing is summed."""

    name = "sum"

    def new(self) -> list[Any]:
        return [0, 0]

    def add(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0] if state[1] else None
        state[0] = wrap_long(state[0] + value)
        state[1] += 1
        return state[0]

    def remove(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0] if state[1] else None
        state[0] = double_to_long(float(state[0]) - float(value))
        state[1] -= 1
        return state[0] if state[1] else None

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[1] == 0 and state[0] == 0)


class SumDouble(Aggregator):
    """``sum`` of FLOAT/DOUBLE: a DOUBLE; null while nothing is summed."""

    name = "sum"

    def __init__(self, single: bool) -> None:
        self.single = single

    def new(self) -> list[Any]:
        return [0.0, 0]

    def add(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0] if state[1] else None
        state[0] += to_float32(value) if self.single else value
        state[1] += 1
        return state[0]

    def remove(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0] if state[1] else None
        state[0] -= to_float32(value) if self.single else value
        state[1] -= 1
        return state[0] if state[1] else None

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[1] == 0 and state[0] == 0.0)


class Avg(Aggregator):
    """``avg``: a DOUBLE mean; null while empty."""

    name = "avg"

    def __init__(self, single: bool) -> None:
        self.single = single

    def new(self) -> list[Any]:
        return [0.0, 0]

    def add(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0] / state[1] if state[1] else None
        state[1] += 1
        state[0] += to_float32(value) if self.single else value
        return state[0] / state[1] if state[1] else None

    def remove(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0] / state[1] if state[1] else None
        state[1] -= 1
        state[0] -= to_float32(value) if self.single else value
        return state[0] / state[1] if state[1] else None

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[0] == 0.0 and state[1] == 0)


class Count(Aggregator):
    """``count``: a LONG; every event counts, whatever its argument."""

    name = "count"

    def new(self) -> list[Any]:
        return [0]

    def add(self, state: list[Any], value: Any) -> Any:
        state[0] += 1
        return state[0]

    def remove(self, state: list[Any], value: Any) -> Any:
        state[0] -= 1
        return state[0]

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[0] == 0)


class DistinctCount(Aggregator):
    """``distinctCount``: how many distinct values (null among them) are present."""

    name = "distinctCount"

    def new(self) -> list[Any]:
        return [{}]

    def add(self, state: list[Any], value: Any) -> Any:
        counts = state[0]
        key = float_key(value)
        counts[key] = counts.get(key, 0) + 1
        return len(counts)

    def remove(self, state: list[Any], value: Any) -> Any:
        counts = state[0]
        key = float_key(value)
        left = counts.get(key, 0) - 1
        if left > 0:
            counts[key] = left
        else:
            counts.pop(key, None)
        return len(counts)

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(not state[0])


class Extreme(Aggregator):
    """``min``/``max``: state ``[deque or None, value]``; the deque is monotonic."""

    def __init__(self, is_max: bool, track: bool, single: bool) -> None:
        self.name = "max" if is_max else "min"
        self.is_max = is_max
        self.track = track
        self.single = single

    def new(self) -> list[Any]:
        return [deque() if self.track else None, None]

    def _worse(self, kept: Any, value: Any) -> bool:
        """Whether ``kept`` can never again be the extreme once ``value`` arrived."""
        return bool(kept < value) if self.is_max else bool(kept > value)

    def add(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[1]
        if self.single:
            value = to_float32(value)
        window = state[0]
        if window is not None:
            while window and self._worse(window[-1], value):
                window.pop()
            window.append(value)
        current = state[1]
        if current is None or self._worse(current, value):
            state[1] = value
        return state[1]

    def remove(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[1]
        if self.single:
            value = to_float32(value)
        window = state[0]
        if window is not None:
            for i, kept in enumerate(window):
                if java_equals(kept, value):
                    del window[i]
                    break
            state[1] = window[0] if window else None
        elif state[1] is not None and java_equals(state[1], value):
            state[1] = None
        return state[1]

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(not state[0] and state[1] is None)


class ExtremeForever(Aggregator):
    """``minForever``/``maxForever``: expiry is just another value to compare."""

    def __init__(self, is_max: bool, single: bool) -> None:
        self.name = "maxForever" if is_max else "minForever"
        self.is_max = is_max
        self.single = single

    def new(self) -> list[Any]:
        return [None]

    def add(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return state[0]
        if self.single:
            value = to_float32(value)
        current = state[0]
        if current is None or (current < value if self.is_max else current > value):
            state[0] = value
        return state[0]

    remove = add

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[0] is None)


class StdDev(Aggregator):
    """``stdDev``: population standard deviation; state ``[mean, m2, sum, count]``."""

    name = "stdDev"

    def __init__(self, single: bool) -> None:
        self.single = single

    def new(self) -> list[Any]:
        return [0.0, 0.0, 0.0, 0]

    @staticmethod
    def _value(state: list[Any]) -> Any:
        count = state[3]
        if count == 0:
            return None
        if count == 1:
            return 0.0
        return _sqrt(state[1] / count)

    def add(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return self._value(state)
        value = to_float32(value) if self.single else float(value)
        state[3] += 1
        count = state[3]
        if count == 1:
            state[2] = state[0] = value
            state[1] = 0.0
            return 0.0
        old_mean = state[0]
        state[2] += value
        state[0] = state[2] / count
        state[1] += (value - old_mean) * (value - state[0])
        return _sqrt(state[1] / count)

    def remove(self, state: list[Any], value: Any) -> Any:
        if value is None:
            return self._value(state)
        value = to_float32(value) if self.single else float(value)
        state[3] -= 1
        count = state[3]
        if count == 0:
            state[0] = state[1] = state[2] = 0.0
            return None
        old_mean = state[0]
        state[2] -= value
        state[0] = state[2] / count
        state[1] -= (value - old_mean) * (value - state[0])
        if count == 1:
            return 0.0
        return _sqrt(state[1] / count)

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[3] == 0 and state[2] == 0.0 and state[0] == 0.0 and state[1] == 0.0)


class Logical(Aggregator):
    """``and``/``or`` over BOOL: state ``[true_count, false_count]``."""

    def __init__(self, is_and: bool) -> None:
        self.name = "and" if is_and else "or"
        self.is_and = is_and

    def new(self) -> list[Any]:
        return [0, 0]

    def _value(self, state: list[Any]) -> bool:
        if self.is_and:
            return bool(state[0] > 0 and state[1] == 0)
        return bool(state[0] > 0)

    def add(self, state: list[Any], value: Any) -> Any:
        if value is not None:
            state[0 if value else 1] += 1
        return self._value(state)

    def remove(self, state: list[Any], value: Any) -> Any:
        if value is not None:
            state[0 if value else 1] -= 1
        return self._value(state)

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(state[0] == 0 and state[1] == 0)


class UnionSet(Aggregator):
    """``unionSet``: union of sets; with expiry, reference counts per element."""

    name = "unionSet"

    def __init__(self, track: bool) -> None:
        self.track = track

    def new(self) -> list[Any]:
        return [set(), {} if self.track else None]

    def add(self, state: list[Any], value: Any) -> Any:
        members, counts = state
        for item in value or ():
            members.add(item)
            if counts is not None:
                counts[item] = counts.get(item, 0) + 1
        return set(members)

    def remove(self, state: list[Any], value: Any) -> Any:
        members, counts = state
        for item in value or ():
            if counts is None:
                members.discard(item)
                continue
            have = counts.get(item)
            if have is None:
                continue
            if have == 1:
                members.discard(item)  # the reference leaves the count at 1 here
            else:
                counts[item] = have - 1
        return set(members)

    def can_destroy(self, state: list[Any]) -> bool:
        return bool(not state[0])


def make_aggregator(name: str, arg_type: AttrType | None, track_future: bool) -> Aggregator:
    """The aggregator ``name`` over an argument of ``arg_type``.

    ``track_future`` is the reference's ``processingMode == SLIDE || outputExpectsExpiredEvents``.
    """
    single = arg_type == AttrType.FLOAT
    if name == "sum":
        if arg_type in (AttrType.INT, AttrType.LONG):
            return SumLong()
        return SumDouble(single)
    if name == "avg":
        return Avg(single)
    if name == "count":
        return Count()
    if name == "distinctCount":
        return DistinctCount()
    if name in ("min", "max"):
        return Extreme(name == "max", track_future, single)
    if name in ("minForever", "maxForever"):
        return ExtremeForever(name == "maxForever", single)
    if name == "stdDev":
        return StdDev(single)
    if name in ("and", "or"):
        return Logical(name == "and")
    if name == "unionSet":
        return UnionSet(track_future)
    raise KeyError(name)


AGGREGATOR_NAMES = frozenset({"sum", "avg", "count", "distinctCount", "min", "max",
                              "minForever", "maxForever", "stdDev", "and", "or", "unionSet"})
