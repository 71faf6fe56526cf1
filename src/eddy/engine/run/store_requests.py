"""On-demand queries on a running group: sent as events, answered in the group's outputs.

A running group's tables, named windows and aggregations live in its Spark state, inside the
operator that hosts the runtime, so an on-demand query travels the way events do: the
caller appends its text to the group's store-query topic (the
:data:`~eddy.engine.spark.row_layout.STORE_STREAM` pseudo-stream, through which ``eddy.replay``
sends them too), the next micro-batch runs it at its place in the input against the state as it
is then, and its rows leave with the batch's outputs, closed by one row that marks the
answer complete (:func:`~eddy.engine.operators.runtime_operator.answer_store_query`). The bus
sink hands those rows to :class:`StoreRequests`, which wakes the caller.

**Exactly once.** A query is an input event: its side effects (insert, update, delete) are
part of the micro-batch's state, which Spark commits together with the batch's offsets. A
batch replayed after a crash starts from the state before it, so a mutation is applied
once; its answer is then awaited by nobody (the caller saw the crash) and goes nowhere.
Restoring an earlier revision rewinds the input, so queries sent after that revision run
again, like every other event sent after it.

**Which answer is whose.** The text a request sends ends with a comment carrying a random
request id (:func:`marked`); the closing row carries the text back, so the id finds its
caller whatever micro-batch the query landed in and however many queries were in it.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from eddy.bus import Bus
from eddy.engine.operators.runtime_operator import STORE_ANSWERED, STORE_FAILED
from eddy.engine.spark.row_layout import STORE_STREAM, decode_data

Records = list[list[Any]]
_MARK = re.compile(r"\n-- eddy:request ([0-9a-f]{32})\n\Z")
_CHECK_S = 0.25  # how often a waiting caller checks that the group still runs


class StoreQueryFailed(RuntimeError):
    """The query was valid but failed when it ran (a bad ``within`` value, …)."""


def marked(text: str, request: str) -> str:
    """``text`` with the request id in a trailing line comment: the same query for the
    parser, and the same line and column for every position in it."""
    return f"{text}\n-- eddy:request {request}\n"


def request_of(text: str) -> str | None:
    """The request id of a :func:`marked` text, None for a query sent otherwise."""
    match = _MARK.search(text)
    return match.group(1) if match else None


@dataclass(frozen=True)
class StoreAnswer:
    """The answer to one request: its rows, or why it failed."""

    request: str
    records: Records
    error: str | None = None


def answers(rows: pa.Table) -> list[StoreAnswer]:
    """The complete answers among a micro-batch's output rows
    (:data:`~eddy.engine.spark.row_layout.OUTPUT_SCHEMA`), in input order."""
    mine = pc.is_in(rows.column("_query"), pa.array([STORE_STREAM]))  # null: not in
    if not pc.any(mine).as_py():  # the common case: looked at without leaving Arrow
        return []
    rows = rows.filter(mine)
    chosen = list(range(rows.num_rows))
    seqs: list[Any] = rows.column("_seq").to_pylist()
    orders: list[Any] = rows.column("_order").to_pylist()
    targets: list[Any] = rows.column("_target").to_pylist()
    data: list[Any] = rows.column("_data").to_pylist()
    by_query: dict[int, list[int]] = {}
    for i in sorted(chosen, key=lambda i: (seqs[i], orders[i])):
        by_query.setdefault(seqs[i], []).append(i)
    result: list[StoreAnswer] = []
    for indices in by_query.values():
        closing = [i for i in indices if targets[i] in (STORE_ANSWERED, STORE_FAILED)]
        if not closing:
            continue  # cannot happen: the operator closes every answer in the same batch
        values = decode_data(data[closing[0]])
        request = request_of(str(values[0]))
        if request is None:
            continue
        if targets[closing[0]] == STORE_FAILED:
            result.append(StoreAnswer(request, [], str(values[1])))
        else:
            result.append(StoreAnswer(request, [decode_data(data[i]) for i in indices
                                                if targets[i] is None]))
    return result


class StoreRequests:
    """The requests of one running group that wait for their answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, Future[Records]] = {}

    def ask(self, bus: Bus, topic: str, text: str, timeout: float,
            check: Callable[[], None] = lambda: None) -> Records:
        """Sends ``text`` to the group's store-query topic and waits for its records.

        ``check`` raises when the group stopped or failed, so a caller never waits for a
        group that cannot answer; TimeoutError after ``timeout`` seconds.
        """
        request = uuid.uuid4().hex
        future: Future[Records] = Future()
        with self._lock:
            self._waiting[request] = future
        try:
            bus.append(topic, pa.table({"query": [marked(text, request)]}))
            waited = 0.0
            while True:
                try:
                    return future.result(timeout=_CHECK_S)
                except FutureTimeout:
                    waited += _CHECK_S
                check()
                if waited >= timeout:
                    raise TimeoutError(f"the on-demand query got no answer within "
                                       f"{timeout:g} s (is the app overloaded?)") from None
        finally:
            with self._lock:
                self._waiting.pop(request, None)

    def resolve(self, found: Iterable[StoreAnswer]) -> None:
        """Hands answers to the callers waiting for them (others are dropped)."""
        for answer in found:
            with self._lock:
                future = self._waiting.pop(answer.request, None)
            if future is None:
                continue
            if answer.error is not None:
                future.set_exception(StoreQueryFailed(answer.error))
            else:
                future.set_result(answer.records)
