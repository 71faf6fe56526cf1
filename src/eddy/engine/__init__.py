"""The Spark back end: the only eddy package that imports pyspark."""
