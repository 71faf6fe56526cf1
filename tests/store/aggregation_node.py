"""One eddy node for the active-active tests, as its own process with its own SparkSession.

``python aggregation_node.py APP DEPLOYMENT_YAML BUS_URL CHECKPOINT_DIR`` loads the node's
deployment.yaml (``siddhi.properties`` ``partitionById``/``shardId``), exports it for the
aggregations, runs the app as a :class:`~eddy.engine.run.group_runner.GroupRunner` between bus
topics and a checkpoint, prints ``ready``, then answers commands on stdin, one JSON line per
command:

- ``idle <seconds>``: waits until every event on the input topics is processed → true/false
- ``query <on-demand query>``: the rows of a retrieval over the stored aggregations
- ``exit``: stops the runner and exits
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    app_path, config_path, bus_url, checkpoint = sys.argv[1:5]
    from eddy.config import load_config
    from eddy.store.aggregation_settings import export_settings

    export_settings(load_config(config_path).node_settings())  # before Spark starts
    from eddy.engine.run.group_runner import GroupRunner
    from eddy.engine.spark.session import get_spark
    from eddy.runtime.aggregation.api import query_aggregation

    app = Path(app_path).read_text()
    spark = get_spark({"spark.sql.shuffle.partitions": "1"}, app_name="eddy-aggregation-node")
    runner = GroupRunner(app, bus_url, checkpoint, spark=spark, filename=app_path,
                         max_rows_per_batch=50)
    runner.start()
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "idle":
            print(json.dumps(runner.await_idle(float(argument))), flush=True)
        elif command == "query":
            print(json.dumps(query_aggregation(app, argument)), flush=True)
        elif command == "exit":
            break
    runner.stop()


if __name__ == "__main__":
    main()
