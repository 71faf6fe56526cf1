"""From an app's physical plan to one Spark streaming DataFrame per execution group: the
checks before a run, the engine's answers to the planner, Siddhi expressions and functions
as Spark SQL, the queries that run natively in the JVM and the rows each operator reads."""
