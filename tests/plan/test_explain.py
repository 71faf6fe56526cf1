"""``eddy explain`` as golden files, and the execution-group rules spelled out as tests.

Each ``explain/*.siddhi`` has ``.txt`` and ``.json`` expectations beside it; run with
``EDDY_REGEN=1`` to rewrite them after an intended change, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eddy import SiddhiAppError, check
from eddy.cli import main
from eddy.plan import build_plan
from eddy.plan.explain import explain_json, explain_text

HERE = Path(__file__).parent / "explain"
APPS = sorted(HERE.glob("*.siddhi"))
REGEN = os.environ.get("EDDY_REGEN") == "1"


def _golden(path: Path, actual: str) -> None:
    if REGEN or not path.exists():
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs; EDDY_REGEN=1 rewrites"


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.stem)
def test_explain_golden(app: Path) -> None:
    analyzed = check(app.read_text(), app.name)
    plan = build_plan(analyzed)
    _golden(app.with_suffix(".txt"), explain_text(analyzed, plan))
    _golden(app.with_suffix(".json"), json.dumps(explain_json(analyzed, plan), indent=2) + "\n")


def test_seed_groups_and_topic() -> None:
    analyzed = check((HERE / "seed_distributed.siddhi").read_text())
    plan = build_plan(analyzed)
    assert [(g.name, g.parallel, g.queries) for g in plan.groups] == [
        ("group-1", 1, ("query-1", "query-2")), ("group-2", 2, ("query-3",))]
    (topic,) = plan.topics
    assert topic.name == "TempApp.TempStream" and topic.producers == ()
    assert topic.consumers == (("group-1", "all"), ("group-2", "round-robin"))
    assert plan.group("group-2").inputs[0].topic == "TempApp.TempStream"


def test_wiring_follows_dataflow_not_text_order() -> None:
    plan = build_plan(check((HERE / "backward_wiring.siddhi").read_text()))
    mid = next(t for t in plan.topics if t.stream == "Mid")
    assert mid.producers == ("g2",) and mid.consumers == (("g1", "all"),)


def test_field_grouping_partitions() -> None:
    plan = build_plan(check((HERE / "partitioned_parallel.siddhi").read_text()))
    clean = next(t for t in plan.topics if t.stream == "CleanStream")
    assert (clean.key, clean.partitions, clean.consumers) == (
        "symbol", 3, (("per-symbol", "field-grouping"),))
    sub = plan.group("per-symbol").inputs[0]
    assert sub.partitions == ((0,), (1,), (2,))


def test_plans_are_deterministic() -> None:
    text = (HERE / "aggregation_groups.siddhi").read_text()
    assert explain_text(check(text), build_plan(check(text))) == \
        explain_text(check(text), build_plan(check(text)))


@pytest.mark.parametrize(("app", "words"), [
    ("define stream S (a int);\n"
     "@dist(execGroup='g1') from S select a insert into A;\n"
     "@dist(execGroup='g2') from A select a insert into B;\n"
     "@dist(execGroup='g1') from B select a insert into C;\n", "cycle"),
    ("define stream S (a int);\n"
     "@dist(execGroup='g', parallel='2') from S select a insert into A;\n"
     "@dist(execGroup='g', parallel='3') from S select a insert into B;\n", "agree"),
    ("define stream S (a int);\n"
     "@dist(execGroup='g', parallel='2') from S#window.length(5) select sum(a) as s "
     "insert into A;\n", "keeps state"),
    ("define stream S (a int);\n"
     "@dist(execGroup='g') partition with (a of S) begin\n"
     "@dist(execGroup='h') from S select a insert into A; end;\n", "inside a partition"),
])
def test_distribution_faults(app: str, words: str) -> None:
    with pytest.raises(SiddhiAppError) as caught:
        build_plan(check(app))
    assert words in caught.value.message


def test_cli_explain_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = HERE / "seed_distributed.siddhi"
    assert main(["explain", str(good)]) == 0
    assert "group-2 (parallel 2): query-3" in capsys.readouterr().out
    assert main(["explain", "--json", str(good)]) == 0
    assert json.loads(capsys.readouterr().out)["execution_groups"][1]["parallel"] == 2
    bad = tmp_path / "bad.siddhi"
    bad.write_text("define stream S (a int);\nfrom S select b insert into O;\n")
    assert main(["validate", str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2:14: error: attribute 'b' does not exist" in err
    assert "from S select b insert into O;" in err and "^" in err
