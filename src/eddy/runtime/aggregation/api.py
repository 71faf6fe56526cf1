"""Reading stored aggregations from Python, in any process: :func:`query_aggregation`.

A node writes every row its micro-batches change at each batch end (see :mod:`.rdbms`),
so the tables alone answer ``from A within … per … select …`` for all shards, up to the
last completed micro-batch of each node. This builds the app's aggregations (none of its
queries) the way a read-only copy of the app does in WSO2, and runs the on-demand query
over them: rows of every shard and arrival bucket merged, then the query's own ``select``,
``group by``, ``having``, ``order by`` and ``limit``.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from eddy.lang import check
from eddy.runtime.group import Runtime, build_runtime

__all__ = ["query_aggregation"]

_readers: dict[str, Runtime] = {}
_lock = threading.Lock()


def query_aggregation(app_text: str, query: str) -> list[tuple[Any, ...]]:
    """The rows of on-demand ``query`` over the ``@store(type='rdbms', …)`` aggregations of
    ``app_text``. An in-memory aggregation has nothing stored and answers no rows."""
    key = hashlib.sha256(app_text.encode()).hexdigest()
    with _lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = build_runtime(check(app_text), [])
        return reader.store_query(query)
