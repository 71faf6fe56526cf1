"""Streaming query progress, handed to Python cheaply.

pyspark's ``StreamingQueryListener`` turns every progress event into Python objects field by
field over py4j: dozens of calls, plus one Java exception (converted on the Python side) at
the end of every map it iterates — about 40 ms of the driver's Python per event on this
machine, paid while the next micro-batch waits for the GIL. And every listener receives every
query's events, so one listener per query costs that once per query per event of any query.

eddy registers one listener per SparkSession instead (:func:`progress_listeners`), which
asks each event for its query id and, only when some callback wants that query, for the
progress as JSON: three or four py4j calls and one ``json.loads``. Callbacks get Spark's
progress JSON as a dict (``batchId``, ``numInputRows``, ``durationMs``, ``sources`` with
their ``endOffset``, …).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

log = logging.getLogger("eddy.engine.spark.query_progress")

Progress = dict[str, Any]
"""One ``StreamingQueryProgress`` as Spark writes it in JSON."""
ProgressCallback = Callable[[Progress], None]

_LISTENER_INTERFACE = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
_sessions: dict[int, ProgressListeners] = {}
_sessions_lock = threading.Lock()


class ProgressListeners:
    """The progress callbacks of one SparkSession's queries, by query id."""

    def __init__(self, spark: SparkSession) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        context = spark.sparkContext
        gateway = context._gateway
        jvm = context._jvm
        assert gateway is not None and jvm is not None
        ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
        self._session = spark._jsparkSession  # kept: its id() keys _sessions
        self._callbacks: dict[str, ProgressCallback] = {}
        self._lock = threading.Lock()
        wrapper = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper
        spark._jsparkSession.streams().addListener(wrapper(_Bridge(self)))

    def add(self, query_id: str, callback: ProgressCallback) -> None:
        """Calls ``callback`` with every progress of the query (on Spark's listener thread)."""
        with self._lock:
            self._callbacks[query_id] = callback

    def remove(self, query_id: str) -> None:
        """No more progress of the query: after this returns, its callback is not called
        again (a call in progress finishes first)."""
        with self._lock:
            self._callbacks.pop(query_id, None)

    def _progress(self, jprogress: Any) -> None:
        query_id = str(jprogress.id().toString())
        with self._lock:
            callback = self._callbacks.get(query_id)
            if callback is None:
                return
            try:
                callback(json.loads(jprogress.json()))
            except Exception:  # Spark's listener thread must not see it
                log.exception("the progress callback of query %s failed", query_id)


class _Bridge:
    """Spark's Python listener interface, implemented over py4j."""

    def __init__(self, listeners: ProgressListeners) -> None:
        self._listeners = listeners

    def onQueryStarted(self, jevent: Any) -> None:  # noqa: N802 - Spark's interface
        pass

    def onQueryProgress(self, jevent: Any) -> None:  # noqa: N802
        self._listeners._progress(jevent.progress())

    def onQueryIdle(self, jevent: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, jevent: Any) -> None:  # noqa: N802
        pass

    class Java:
        implements = [_LISTENER_INTERFACE]


def progress_listeners(spark: SparkSession) -> ProgressListeners:
    """The session's progress listener, registered on first use."""
    key = id(spark._jsparkSession)
    with _sessions_lock:
        listeners = _sessions.get(key)
        if listeners is None:
            listeners = _sessions[key] = ProgressListeners(spark)
        return listeners
