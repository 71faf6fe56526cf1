"""Incremental aggregations (``define aggregation … every sec ... year``) in the runtime:
time buckets (:mod:`.timeutil`), bucket storage (:mod:`.store`), base values (:mod:`.values`),
the write and read paths (:mod:`.runtime`) and retrieval by queries and joins
(:mod:`.retrieval`)."""

from eddy.runtime.aggregation.runtime import AggregationRuntime, build_aggregations

__all__ = ["AggregationRuntime", "build_aggregations"]
