"""The aggregation conformance cases again, with the aggregation kept in an RDBMS.

The case files are not touched: the test adds ``@store(type='rdbms', jdbc.url=…)`` to the
app's ``define aggregation`` and gives the aggregation a name unique to the run (in the app
and in the on-demand queries), so runs never share tables; the tables are dropped after.
Small micro-batches make every batch end write the changed rows, so a wrong flush or a
double count would show. The runtime runs them against SQLite, MariaDB and PostgreSQL; Spark
(``eddy.replay``) against SQLite.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import Any

import pytest
from conformance import Case, compare_case, load_cases
from runtime.test_runtime_conformance import differences
from sqlalchemy import inspect, text

from eddy.engine.run.replay import replay
from eddy.store.connect import connect, jdbc_to_sqlalchemy

CASES = [c for c in load_cases(["aggregation"]) if c.expected_error is None]
BACKENDS = {
    "sqlite": None,  # a file under tmp_path
    "mariadb": "jdbc:mysql://root@127.0.0.1:3306/test",
    "postgresql": "jdbc:postgresql://root@127.0.0.1:5432/test",
}
_DEFINE = re.compile(r"define\s+aggregation\s+(\w+)")


def with_store(case: Case, jdbc_url: str) -> tuple[str, list[dict[str, Any]], str]:
    """The case's app and inputs with an RDBMS ``@store`` and a unique aggregation name."""
    match = _DEFINE.search(case.app)
    assert match is not None, case.name
    old, new = match[1], f"{match[1]}_{uuid.uuid4().hex[:8]}"
    rename = re.compile(rf"\b{old}\b")
    app = rename.sub(new, case.app)
    app = _DEFINE.sub(lambda m: f"@store(type='rdbms', jdbc.url='{jdbc_url}')\n{m[0]}", app,
                      count=1)
    inputs = [{**item, "store_query": rename.sub(new, item["store_query"])}
              if "store_query" in item else item for item in case.inputs]
    return app, inputs, new


def drop_tables(url: str, aggregation: str) -> None:
    engine = connect(url)
    with engine.begin() as connection:
        for table in inspect(engine).get_table_names():
            if table.lower().startswith(aggregation.lower() + "_"):
                quoted = engine.dialect.identifier_preparer.quote(table)
                connection.execute(text(f"DROP TABLE {quoted}"))


@pytest.mark.parametrize("batch_size", (1, 3, None), ids=lambda b: f"batch-{b or 'all'}")
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_cases_in_the_runtime(backend: str, batch_size: int | None, tmp_path: Any) -> None:
    """Every case through the runtime (no Spark), snapshotted and restored between batches
    as Spark's state store does; all three databases."""
    jdbc_url = BACKENDS[backend] or f"jdbc:sqlite:{tmp_path}/aggregations.db"
    for case in CASES:
        app, inputs, name = with_store(case, jdbc_url)
        try:
            problems = differences(replace(case, app=app, inputs=inputs), batch_size)
        finally:
            drop_tables(jdbc_to_sqlalchemy(jdbc_url), name)
        assert not problems, f"{case.name}:\n" + "\n".join(problems)


def test_cases_through_spark(tmp_path: Any, spark: object) -> None:
    """Every case through ``eddy.replay`` (the vectorised aggregation step, or the per-event
    operator for the join), SQLite store, micro-batches of two events."""
    jdbc_url = f"jdbc:sqlite:{tmp_path}/aggregations.db"
    for case in CASES:
        app, inputs, name = with_store(case, jdbc_url)
        try:
            result = replay(app, inputs, batch_size=2)
        finally:
            drop_tables(jdbc_to_sqlalchemy(jdbc_url), name)
        problems = compare_case(case, result.streams, result.queries, result.store)
        assert not problems, f"{case.name}:\n" + "\n".join(problems)
