"""Registering eddy's Python data sources with a SparkSession, safely for concurrent queries.

Spark keeps one ``PythonFunction`` per registered Python data source, and every query reading
that source shares its ``envVars`` — a plain ``java.util.HashMap``. Two things touch that map
on the driver at the same time when several queries run:

- the DAG scheduler serialises it into each task of every query reading the source;
- ``PythonStreamingSourceRunner.init()`` (Spark 4.x), run whenever a query starts, ``put``s
  four keys into it (``SPARK_PYTHON_RUNTIME`` since Spark 4.1; missing it here left the race
  open: the first query start added that key while a concurrent query's task was being
  serialised, and the task failed).

The first ``put`` of a new key changes the map's structure. If that happens while another
query's task is being serialised, the map is written with a size that disagrees with its
entries, and the task fails on the executor with ``java.io.OptionalDataException``. A worker
restarting with two apps hits exactly that: both queries start together. Adding the keys at
registration, before any query exists, leaves the runner only replacing values, which never
changes the map's structure.
"""

from __future__ import annotations

import threading

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource

# What PythonStreamingSourceRunner.init() puts into a source's shared env (PythonPlannerRunner
# puts its keys into a copy).
RUNNER_ENV_KEYS = ("SPARK_LOCAL_DIRS", "SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE",
                   "SPARK_PYTHON_RUNTIME")

_lock = threading.Lock()


def register_data_source(spark: SparkSession, source: type[DataSource]) -> None:
    """Makes ``format(source.name())`` known to ``spark``, once, with the runner's environment
    keys already in the source's shared map (see the module docstring)."""
    name = source.name()
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    with _lock:
        if manager.dataSourceExists(name):
            return
        spark.dataSource.register(source)
        env = manager.lookupDataSource(name).dataSourceCls().envVars()
        for key, value in runner_env(spark).items():
            env.putIfAbsent(key, value)


def runner_env(spark: SparkSession) -> dict[str, str]:
    """The values Spark's Python runners put under :data:`RUNNER_ENV_KEYS`, computed the
    same way from the session's configuration (the runners overwrite them anyway)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.sc().conf()
    local_dirs = jvm.org.apache.spark.util.Utils.getConfiguredLocalDirs(conf)
    timeout = jvm.org.apache.spark.network.util.JavaUtils.timeStringAsSec(
        conf.get("spark.python.authenticate.socketTimeout", "15s"))
    return {"SPARK_LOCAL_DIRS": ",".join(local_dirs),
            "SPARK_AUTH_SOCKET_TIMEOUT": str(timeout),
            "SPARK_BUFFER_SIZE": str(conf.get("spark.buffer.size", "65536")),
            "SPARK_PYTHON_RUNTIME": "PYTHON_WORKER"}
