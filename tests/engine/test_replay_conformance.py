"""Every valid conformance case, through ``eddy.replay`` on Spark.

Each case runs with micro-batches of 1 and 3 events and all at once; the three runs are
independent streaming queries in one SparkSession, started together because a micro-batch
is mostly waiting, not computing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conformance import Case, compare_case, load_cases

from eddy.engine.run.replay import ReplayResult, replay

FEATURES = ["filter", "projection", "function", "chain", "window", "aggregate", "output",
            "rate", "pattern", "sequence", "join", "table", "partition", "aggregation"]
CASES = [c for c in load_cases(FEATURES) if c.expected_error is None]
BATCH_SIZES = (1, 3, 0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_through_spark(case: Case, spark: object) -> None:
    with ThreadPoolExecutor(len(BATCH_SIZES)) as pool:
        runs = {size: pool.submit(replay, case.app, case.inputs, batch_size=size)
                for size in BATCH_SIZES}
        results: dict[int, ReplayResult] = {size: run.result() for size, run in runs.items()}
    for size, result in results.items():
        problems = compare_case(case, result.streams, result.queries, result.store)
        assert not problems, f"batch size {size or 'all'}:\n" + "\n".join(problems)
