"""Spark itself: the process's SparkSession, eddy's JVM classes, what Spark is doing, and the
Python data sources a group reads (the bus, a spool of chunk files) with the row layout they
produce."""
