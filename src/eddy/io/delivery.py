"""A :class:`~eddy.io.api.Deliver` onto a bus: each stream's events appended to its topic.

Concurrent deliveries to one stream share appends (group commit): while one append runs,
the events of other callers wait, and the next append takes all of them at once, each
caller's events kept together and in its order. Every caller still returns only once its
own events are durable (or raises the append's error). One append of many events costs
far less than many appends of a few, so throughput grows with load while an idle source
appends at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus import TS, Bus
from eddy.io.api import DedupKey


@dataclass
class _Pending:
    rows: pa.Table
    wake: threading.Event = field(default_factory=threading.Event)
    done: bool = False
    error: BaseException | None = None


@dataclass
class _Group:
    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: list[_Pending] = field(default_factory=list)
    appending: bool = False


class BusDeliver:
    """Appends events to the topic of their stream and returns once the bus has them.

    ``topic_of`` names the topic of a stream (the fault stream ``!S`` included); the
    default is the stream name itself. :meth:`for_app` uses the plan's ``<app>.<stream>``.
    The topics must exist (``Bus.create_topic``) before a source starts. Deliveries with a
    :class:`~eddy.io.api.DedupKey` are appended alone, as their key names exactly them.
    """

    def __init__(self, bus: Bus, topic_of: Callable[[str], str] | None = None) -> None:
        self.bus = bus
        self.topic_of = topic_of or (lambda stream: stream)
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_app(cls, bus: Bus, app: str) -> BusDeliver:
        """Delivery to the topics ``<app>.<stream>`` (as :mod:`eddy.plan` names them)."""
        return cls(bus, lambda stream: f"{app}.{stream}")

    def __call__(self, stream: str, rows: pa.Table, ts: int, *,
                 dedup: DedupKey | None = None) -> None:
        if TS not in rows.column_names:
            rows = rows.append_column(TS, pa.array(np.full(rows.num_rows, ts, dtype=np.int64)))
        topic = self.topic_of(stream)
        if dedup is not None:
            self.bus.append(topic, rows, producer=dedup.producer, batch_id=dedup.batch_id)
            return
        self._group_append(topic, _Pending(rows))

    def _group_append(self, topic: str, mine: _Pending) -> None:
        """Appends ``mine`` together with whatever else waits; one caller at a time leads
        an append, and hands the lead to the next waiter when it is done."""
        with self._lock:
            group = self._groups.setdefault(topic, _Group())
        with group.lock:
            group.pending.append(mine)
            lead = not group.appending
            group.appending = True
        if not lead:
            mine.wake.wait()  # done by another leader's append, or made the leader
        if not mine.done:
            with group.lock:
                batch, group.pending = group.pending, []
            self._append_batch(topic, batch)
            with group.lock:
                for pending in batch:
                    pending.done = True
                    pending.wake.set()
                if group.pending:
                    group.pending[0].wake.set()  # the next leader
                else:
                    group.appending = False
        if mine.error is not None:
            raise mine.error

    def _append_batch(self, topic: str, batch: list[_Pending]) -> None:
        """One append for the whole batch; one per caller if their columns differ."""
        try:
            combined = pa.concat_tables([p.rows for p in batch])
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            for pending in batch:
                try:
                    self.bus.append(topic, pending.rows)
                except BaseException as error:  # this caller gets the error
                    pending.error = error
            return
        try:
            self.bus.append(topic, combined)
        except BaseException as error:  # each caller of the batch gets the error
            for pending in batch:
                pending.error = error
