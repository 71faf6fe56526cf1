"""``eddy replay``, ``eddy run`` and the worker build the same physical plan for the same app
(DESIGN.md §4): each entry point's source supplies the same columns, so the planner gets the
same input from all three. Checked for every conformance app without starting Spark — the
planner's output is compared for the source schema each entry point reads with."""

from __future__ import annotations

import json

import pytest
from conformance import Case, load_cases

from eddy.engine.compile.operator_facts import source_plan
from eddy.engine.run import live, replay
from eddy.engine.spark.bus_source import BusDataSource, GroupInput
from eddy.engine.spark.row_layout import CLOCK, input_layout
from eddy.lang import check
from eddy.plan.explain import physical_json

CASES = [c for c in load_cases() if c.expected_error is None]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_replay_run_and_worker_plan_alike(case: Case) -> None:
    analyzed = check(case.app)
    layout = input_layout(analyzed)
    topics = tuple((name, f"{analyzed.name}.{name}") for name, _ in layout.streams)
    worker = BusDataSource({"inputs": GroupInput(layout, topics).to_json()}).schema()
    schemas = {"replay": replay.source_schema(layout), "run": live.source_schema(layout),
               "worker": worker}
    plans = {entry: json.dumps(physical_json(source_plan(analyzed, layout, schema.fieldNames())))
             for entry, schema in schemas.items()}
    assert plans["replay"] == plans["worker"] and plans["run"] == plans["worker"]
    assert all(CLOCK not in schema.fieldNames() for schema in schemas.values())
