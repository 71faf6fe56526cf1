"""eddy's per-event runtime: the Siddhi semantics Spark lacks, run in plain Python.

It executes inside Spark's Python stateful operators (DESIGN.md §4): windows with current and
expired events, chunk-wise aggregation, output rate limiting, joins, patterns and sequences,
tables and partitions. :mod:`.evaluate` compiles Siddhi expressions to Python closures with
the same semantics as the JVM expressions of :mod:`eddy.engine.compile.expressions`.
"""
