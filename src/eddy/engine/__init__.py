"""The Spark back end: the only eddy package that imports pyspark.

``spark/`` the session, eddy's JVM classes and the Python data sources a group reads;
``compile/`` an app's physical plan into one streaming DataFrame per execution group;
``operators/`` the Python stateful operators that DataFrame runs; ``run/`` the runners that
start, watch and stop those queries (a worker's group, ``eddy replay``, ``eddy run``).
"""
