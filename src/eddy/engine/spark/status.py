"""What the Spark of this process is doing, for the node API's ``/statistics`` (the
dashboard shows it per node): read from the running SparkContext, never starting one —
a worker starts Spark with its first app, and a node without apps has none yet."""

from __future__ import annotations

from typing import Any


def spark_status() -> dict[str, Any]:
    """``{running, version, master, appId, activeQueries, uiUrl, uiPort}``; only
    ``running: False`` while no SparkContext runs in this process."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return {"running": False}
    context = SparkContext._active_spark_context
    if context is None or getattr(context, "_jsc", None) is None:
        return {"running": False}
    session = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    queries = len(session.streams.active) if session is not None else 0
    url = context.uiWebUrl
    port = int(url.rsplit(":", 1)[1]) if url and url.rsplit(":", 1)[-1].isdigit() else None
    return {"running": True, "version": context.version, "master": context.master,
            "appId": context.applicationId, "activeQueries": queries, "uiUrl": url,
            "uiPort": port}
