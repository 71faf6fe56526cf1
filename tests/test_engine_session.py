"""The SparkSession factory starts a usable, eddy-configured session and reuses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from eddy.engine.spark.session import ROCKSDB_PROVIDER, effective_conf, env_conf, get_spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_get_spark_starts_configured_session_and_reuses_it(spark: SparkSession) -> None:
    assert spark.range(10).count() == 10
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert get_spark() is spark


def test_settings_layer_defaults_then_environment_then_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EDDY_SPARK_sql__shuffle__partitions", "7")
    monkeypatch.setenv("EDDY_SPARK_driver__memory", "2g")
    assert env_conf({"EDDY_SPARK_master": "local[1]", "OTHER": "x"}) == {"spark.master": "local[1]"}
    conf = effective_conf({"spark.driver.memory": "3g", "spark.driver.extraJavaOptions": "-Xss4m"})
    assert conf["spark.sql.shuffle.partitions"] == "7"
    assert conf["spark.driver.memory"] == "3g"
    assert conf["spark.master"] == "local[*]"
    assert "-Dderby.system.home=" in conf["spark.driver.extraJavaOptions"]
    assert conf["spark.driver.extraJavaOptions"].endswith(" -Xss4m")
