"""A query start must not change the shape of the env map that every query of a Python
data source shares (:mod:`eddy.engine.spark.data_sources`): Spark serialises that map into
the tasks of running queries, and a map that gains a key meanwhile fails them with
``java.io.OptionalDataException`` — what two apps starting together on a worker, or two
replays at once, hit. Checked on a source registered just for this test, so that no earlier
query of the session has already added the keys."""

from __future__ import annotations

import sys
import tempfile
from typing import Any

import pytest

from eddy.engine.spark.data_sources import RUNNER_ENV_KEYS, register_data_source
from eddy.engine.spark.spool_source import SpoolDataSource

pytest.importorskip("pyspark")


class _ProbeSource(SpoolDataSource):
    """The spool source under a name of its own: a fresh shared env map."""

    @classmethod
    def name(cls) -> str:
        return "eddy-spool-env-probe"


def test_a_query_start_adds_no_key_to_a_sources_shared_env(spark: Any) -> None:
    from pyspark import cloudpickle

    # Spark's Python worker cannot import this test module: the class goes by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    register_data_source(spark, _ProbeSource)
    env = (spark._jsparkSession.sessionState().dataSourceManager()
           .lookupDataSource(_ProbeSource.name()).dataSourceCls().envVars())
    registered = set(env.keySet())
    assert set(RUNNER_ENV_KEYS) <= registered
    with tempfile.TemporaryDirectory() as spool:
        frame = (spark.readStream.format(_ProbeSource.name())
                 .schema("_seq long, _ts long, _stream string, x int")
                 .option("path", spool).load())
        query = frame.writeStream.format("noop").trigger(availableNow=True).start()
        try:
            assert query.awaitTermination(120)
        finally:
            query.stop()
    assert set(env.keySet()) == registered, set(env.keySet()) - registered
