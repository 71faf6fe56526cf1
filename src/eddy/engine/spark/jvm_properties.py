"""System properties of the JVM that runs Spark for this process, for the node API's
``/system-details`` (WSO2 reports its own JVM there; eddy's is Spark's)."""

from __future__ import annotations


def spark_jvm_properties(names: dict[str, str]) -> dict[str, str] | None:
    """``{field: System.getProperty(name)}`` for ``names`` (field → property), or None while
    no SparkContext runs in this process."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    context = SparkContext._active_spark_context
    jvm = getattr(context, "_jvm", None)
    if jvm is None:
        return None
    system = jvm.java.lang.System
    return {field: str(system.getProperty(name) or "") for field, name in names.items()}
