"""eddy's own JVM classes (``engine/spark/jvm/src``), compiled once and put on Spark's classpath.

Spark's real-time mode reads only from sources written against its Java connector API
(:mod:`eddy.engine.run.real_time`). Those few classes ship as source, not as a jar, and are
compiled here with the JDK's ``javac`` against the jars of the installed pyspark — there
is no build step at install time and no binary in the repository. The jar is cached per
source text and pyspark version, under ``$XDG_CACHE_HOME/eddy`` (``~/.cache/eddy``); a
machine with a JRE but no ``javac`` runs without it (real-time mode is then refused with
that reason, and micro-batches are used).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

log = logging.getLogger("eddy.engine.spark.jvm_classes")
SOURCES = Path(__file__).parent / "jvm" / "src"
BRIDGE_PROVIDER = "eddy.bridge.BridgeProvider"
BRIDGE_WRITER = "eddy.bridge.BridgeWriter"

_lock = threading.Lock()
_built: dict[str, Path | str] = {}


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "eddy"


def bridge_jar() -> Path | None:
    """The jar of eddy's JVM classes, compiled on first use; None when it cannot be built
    (:func:`unavailable_reason` says why)."""
    with _lock:
        if "jar" not in _built:
            try:
                _built["jar"] = _build()
            except (OSError, subprocess.SubprocessError, RuntimeError) as error:
                _built["jar"] = str(error)
                log.info("real-time mode is unavailable: %s", error)
        built = _built["jar"]
        return built if isinstance(built, Path) else None


def unavailable_reason() -> str | None:
    """Why :func:`bridge_jar` has no jar, or None when it has one."""
    bridge_jar()
    built = _built["jar"]
    return built if isinstance(built, str) else None


def _build() -> Path:
    import pyspark

    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in sources:
        digest.update(source.relative_to(SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    jar = _cache_dir() / f"eddy-bridge-{digest.hexdigest()[:16]}.jar"
    if jar.is_file():
        return jar
    javac = _javac()
    if javac is None:
        raise RuntimeError("no javac (a JDK) on this machine to compile eddy's JVM classes")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="eddy-javac-") as scratch:
        classes = Path(scratch) / "classes"
        result = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-cp", str(_spark_jars() / "*"),
             "-d", str(classes), *map(str, sources)],
            capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"javac failed: {result.stderr.strip()[-2000:]}")
        partial = jar.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)  # atomic: a process starting alongside sees all or nothing
    log.info("compiled eddy's JVM classes into %s", jar)
    return jar


def jvm_class(spark: Any, name: str) -> Any | None:
    """Class ``name`` in ``spark``'s JVM, or None when eddy's JVM classes are not on its
    class path (no JDK to compile them): py4j answers an unknown name with a package."""
    from py4j.java_gateway import JavaClass  # type: ignore[import-untyped, unused-ignore]

    found = spark._jvm
    for part in name.split("."):
        found = getattr(found, part)
    return found if isinstance(found, JavaClass) else None


def java_schema(spark: Any, schema: Any) -> Any:
    """``schema`` (a pyspark ``StructType``) as a ``StructType`` of ``spark``'s JVM, for a
    Java operator's output."""
    return spark._jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
