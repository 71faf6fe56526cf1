"""One SparkSession per process, configured for eddy.

Settings come from three layers, later ones winning:
1. eddy's defaults (:func:`default_conf`): ``local[*]``, RocksDB state store, UTC, Arrow,
   WARN logs, no UI, shuffle partitions = cores, scratch under ``$TMPDIR/eddy-spark-<uid>``.
2. Environment variables, one per setting: ``EDDY_SPARK_<key>``, ``<key>`` being the Spark key
   without ``spark.`` and with each ``.`` written ``__``; case-sensitive like Spark keys, e.g.
   ``EDDY_SPARK_master=spark://host:7077``, ``EDDY_SPARK_sql__shuffle__partitions=8``.
   One variable per key needs no separator that a value (Java options) might contain.
3. The ``conf`` mapping passed to :func:`get_spark` (from deployment.yaml, or a test).

JVM settings (driver memory, Java options) only take effect on the first :func:`get_spark` of a
process: the JVM outlives :func:`stop_spark`, which restarts only the SparkContext (~0.1 s).

A session on a local master starts the Python stream readers of its queries by fork from a
pre-imported server (:mod:`eddy.engine.spark.runner_forks`), which lives as long as the
session; ``spark.eddy.runnerForks.enabled=false`` turns that off.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from eddy.engine.spark import runner_forks
from eddy.engine.spark.jvm_classes import bridge_jar

ENV_PREFIX = "EDDY_SPARK_"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_JAVA_OPTS = "spark.driver.extraJavaOptions"
LOCAL_FILE_SYSTEM_KEY = "spark.hadoop.fs.file.impl"
LOCAL_FILE_SYSTEM = "eddy.fs.LocalFileSystem"
CHECKPOINT_FILE_MANAGER = ("org.apache.spark.sql.execution.streaming.checkpointing."
                           "FileSystemBasedCheckpointFileManager")

_lock = threading.Lock()
_session: SparkSession | None = None
_forks: runner_forks.RunnerForks | None = None


def _usable_cores() -> int:
    """Cores this process may use; an affinity mask (taskset, cgroups) can be below cpu_count."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1)


def scratch_dir() -> Path:
    """Per-user directory for Spark's warehouse and Derby files, so nothing lands in the CWD."""
    path = Path(tempfile.gettempdir()) / f"eddy-spark-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


# Spark's built-in profile logs startup chatter before setLogLevel can run; this one doesn't.
_LOG4J2 = """rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
"""


def _log4j2_file(scratch: Path) -> Path:
    """Write the log config atomically, so a process starting alongside never reads half of it."""
    path = scratch / "log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        tmp.replace(path)
    return path


def _driver_memory() -> str:
    """A quarter of the machine's memory, between 1 and 4 GB (the driver is the executor in
    local mode)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "1g"
    return f"{max(1, min(4, total // 4 // 2**30))}g"


def default_conf() -> dict[str, str]:
    """eddy's baseline settings; see reference/spark-on-this-machine.md for why each matters."""
    scratch = scratch_dir()
    java_opts = f"-Dderby.system.home={scratch / 'derby'} "
    java_opts += f"-Dlog4j2.configurationFile=file:{_log4j2_file(scratch)}"
    return {
        "spark.master": "local[*]",
        # The operators' rows, state and each micro-batch's collected outputs (tens of MB
        # for the seed app) live in this heap; at Spark's 1 GB the operator tasks spent a
        # quarter to a third of their time in GC. The heap grows only as it is needed.
        "spark.driver.memory": _driver_memory(),
        # Each shuffle partition costs overhead on every micro-batch; Spark's 200 is far too many.
        "spark.sql.shuffle.partitions": str(_usable_cores()),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        # Commit a micro-batch's state as a changelog instead of uploading a RocksDB
        # snapshot each time (snapshots move to background maintenance): ~300 ms less per
        # stateful micro-batch on this machine, where the snapshot's fsync dominated.
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # Spark's default manager for local checkpoints goes through Hadoop's FileContext,
        # whose rename asks for the link status of the file, and without Hadoop's native
        # library (not in pyspark) that forks a `readlink` process, as creating the checksum
        # file forks a `chmod`: several forks per offset and commit log entry and per state
        # file, tens of ms of every micro-batch. The FileSystem-based manager renames with
        # java.io (atomic on a local disk) and keeps the `.crc` checksums.
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
        "spark.sql.session.timeZone": "UTC",
        # Siddhi (Java) semantics: int/long overflow wraps, casts saturate, division by zero
        # and unparsable strings give null. Spark 4's ANSI mode raises instead; see
        # engine/compile/expressions.py, which relies on this.
        "spark.sql.ansi.enabled": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Rows reach a stateful operator in Arrow batches of this many; Spark's 10,000 made
        # a 250,000-event micro-batch 20% slower than batches of 200,000 (each batch has a
        # fixed cost on both sides of the Python boundary). eddy's rows are narrow.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        # Below Int.MaxValue, Spark's streaming Arrow writer sums the size of every column's
        # buffers after each row it writes to a stateful Python operator, to cut batches by
        # bytes as well; at this value it skips that (the row limit above still cuts them):
        # 5 % more events/s through a partitioned pattern, warm JVM, alternating runs.
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
        # Python workers talk to the JVM over Unix sockets, not TCP on loopback: over TCP each
        # Python task (a bus source's read, a Python operator's batch) waited ~40 ms on a small
        # write held back by delayed acknowledgements; a trivial source's micro-batch took
        # 100 ms, over Unix sockets 69 ms.
        "spark.python.unix.domain.socket.enabled": "true",
        # How long Spark waits for a Python worker it started to connect back (default 15 s);
        # on a loaded machine an importing worker can take longer, failing the query.
        "spark.python.authenticate.socketTimeout": "120s",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(scratch / "warehouse"),
        _JAVA_OPTS: java_opts,
    }


def env_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings named by ``EDDY_SPARK_<key with . as __>`` environment variables."""
    env = os.environ if environ is None else environ
    return {
        "spark." + name[len(ENV_PREFIX) :].replace("__", "."): value
        for name, value in env.items()
        if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX)
    }


def effective_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """Defaults, overridden by the environment, overridden by ``conf``.

    Driver Java options are appended to eddy's, not replacing them, so adding ``-Xss4m`` keeps
    Derby out of the CWD; a later ``-D`` of the same property still wins in Java.
    """
    defaults = default_conf()
    merged = {**defaults, **env_conf(), **(conf or {})}
    if (opts := merged[_JAVA_OPTS]) != defaults[_JAVA_OPTS]:
        merged[_JAVA_OPTS] = f"{defaults[_JAVA_OPTS]} {opts}"
    return merged


def _with_eddy_jar(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with eddy's JVM classes (:mod:`eddy.engine.spark.jvm_classes`) on the
    driver's class path and shipped to executors, next to any jars the user configured;
    and, in local mode unless the user named one, eddy's ``file:`` file system
    (``jvm/src/eddy/fs/LocalFileSystem.java``: Hadoop's, without a ``chmod`` process per
    checkpoint file — eight per micro-batch of a stateful query). A cluster's executors
    keep Hadoop's: they load file systems before the jars a job ships."""
    jar = bridge_jar()
    if jar is None:
        return settings
    result = dict(settings)
    for key, separator in (("spark.driver.extraClassPath", os.pathsep), ("spark.jars", ",")):
        result[key] = separator.join(filter(None, (result.get(key), str(jar))))
    if result.get("spark.master", "").startswith("local"):
        result.setdefault(LOCAL_FILE_SYSTEM_KEY, LOCAL_FILE_SYSTEM)
    return result


def _prepare_environment() -> None:
    """Run Python workers on this interpreter (not another version) and bind to loopback."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def get_spark(conf: Mapping[str, str] | None = None, app_name: str = "eddy") -> SparkSession:
    """Return the process's SparkSession, starting it on first use.

    A later call returns the same session; settings in ``conf`` that Spark allows to change
    at runtime (most ``spark.sql.*``) are applied to it, the others are ignored.
    """
    global _session
    with _lock:
        # _jsc is None once the SparkContext was stopped, by us or by anyone else.
        if _session is not None and _session.sparkContext._jsc is not None:
            for key, value in (conf or {}).items():
                if _session.conf.isModifiable(key):
                    _session.conf.set(key, value)
            if _forks is not None:
                _forks.revive()  # if it died; meanwhile readers started the ordinary way
            return _session
        _prepare_environment()
        merged = _with_eddy_jar(effective_conf(conf))
        _stop_runner_forks()  # of a session someone else stopped
        _start_runner_forks(merged)
        settings: dict[str, str | int | float | bool | None] = {**merged}
        builder = SparkSession.builder.appName(app_name).config(map=settings)
        try:
            _session = builder.getOrCreate()
        except BaseException:
            _stop_runner_forks()
            raise
        if _forks is not None:
            # Both read by every Python function created from now on (data sources too).
            _session.sparkContext.pythonExec = str(_forks.launcher)
            _session.sparkContext.environment[runner_forks.SOCKET_ENV] = str(_forks.socket_path)
        _session.sparkContext.setLogLevel("WARN")  # also when a user's log4j2 config is in effect
        return _session


def runner_fork_server() -> runner_forks.RunnerForks | None:
    """The current session's fork server of stream readers, if it has one."""
    return _forks


def _start_runner_forks(settings: dict[str, str]) -> None:
    """Start the session's fork server early: it imports while the JVM starts."""
    global _forks
    python_exec = os.environ.get("PYSPARK_PYTHON", "python3")  # what SparkContext reads
    if runner_forks.wanted(settings, python_exec):
        _forks = runner_forks.RunnerForks.start(scratch_dir())


def _stop_runner_forks() -> None:
    global _forks
    if _forks is not None:
        _forks.stop()
        _forks = None


def stop_spark() -> None:
    """Stop the process's SparkSession (if any) so the next get_spark() starts a fresh one."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
        _stop_runner_forks()


# The server would exit by itself when this process does; stopping it removes its files too.
atexit.register(_stop_runner_forks)
