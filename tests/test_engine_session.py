"""The SparkSession factory starts a usable, eddy-configured session and reuses it."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from eddy.engine.spark.jvm_classes import bridge_jar, unavailable_reason
from eddy.engine.spark.session import (
    LOCAL_FILE_SYSTEM,
    ROCKSDB_PROVIDER,
    effective_conf,
    env_conf,
    get_spark,
)

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


def test_driver_heap_is_a_quarter_of_memory_within_bounds() -> None:
    memory = int(effective_conf()["spark.driver.memory"].removesuffix("g"))
    assert 1 <= memory <= 4


def test_python_workers_use_unix_sockets(spark: SparkSession) -> None:
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "true"
    # a Python UDF round trip works over them
    assert spark.range(3).selectExpr("id").rdd.map(lambda r: r[0] * 2).collect() == [0, 2, 4]


def test_local_file_system_sets_permissions_without_a_process(
    spark: SparkSession, tmp_path: Path,
) -> None:
    """eddy's ``file:`` file system (local mode) keeps Hadoop's checksums and permissions
    but sets them in-process: a JVM that starts no process per checkpoint file."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    if bridge_jar() is None:
        pytest.skip(f"eddy's JVM classes are not built here: {unavailable_reason()}")
    hadoop = jvm.org.apache.hadoop
    target = hadoop.fs.Path(f"file://{tmp_path}/log")
    fs = target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    assert fs.getClass().getName() == LOCAL_FILE_SYSTEM
    out = fs.create(target, hadoop.fs.permission.FsPermission.createImmutable(0o640), True,
                    4096, 1, 1 << 20, None)
    out.write(b"offsets")
    out.close()
    assert stat.S_IMODE((tmp_path / "log").stat().st_mode) == 0o640
    assert (tmp_path / ".log.crc").exists()  # Hadoop's checksum file, as before
    fs.setPermission(target, hadoop.fs.permission.FsPermission.createImmutable(0o600))
    assert stat.S_IMODE((tmp_path / "log").stat().st_mode) == 0o600
    missing = hadoop.fs.Path(f"file://{tmp_path}/absent")
    with pytest.raises(Exception, match="FileNotFoundException"):
        fs.setPermission(missing, hadoop.fs.permission.FsPermission.createImmutable(0o600))
    sticky = hadoop.fs.permission.FsPermission.createImmutable(0o1750)
    fs.mkdirs(hadoop.fs.Path(f"file://{tmp_path}/dir"))
    fs.setPermission(hadoop.fs.Path(f"file://{tmp_path}/dir"), sticky)  # Hadoop's own way
    assert stat.S_IMODE((tmp_path / "dir").stat().st_mode) == 0o1750
