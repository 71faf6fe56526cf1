"""The language checks Siddhi makes, one folder of apps per rule, as golden files.

Each ``checks/<rule>/<case>.siddhi`` is an app; the ``.expected`` file beside it holds
``ok`` when Siddhi accepts the app, or the first line of eddy's report when it rejects it
(``<case>.siddhi:line:col: error: message``), so both the place and the words are pinned.
``EDDY_REGEN=1`` rewrites the expectations when a change is intended. Case names start with
``valid`` or ``invalid``, which the test also holds the result to: a rule must not reject an
app Siddhi accepts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eddy import SiddhiAppError, check

CHECKS = Path(__file__).with_name("checks")
CASES = sorted(CHECKS.glob("*/*.siddhi"))


def _outcome(path: Path) -> str:
    try:
        check(path.read_text(encoding="utf-8"), path.name)
    except SiddhiAppError as error:
        return error.render().splitlines()[0]
    return "ok"


def test_every_rule_has_valid_and_invalid_cases() -> None:
    rules = {p.parent.name for p in CASES}
    assert len(rules) >= 10
    for rule in rules:
        names = [p.stem for p in CASES if p.parent.name == rule]
        assert any(n.startswith("valid") for n in names), rule
        assert any(n.startswith("invalid") for n in names), rule


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_check(path: Path) -> None:
    outcome = _outcome(path)
    expected_path = path.with_suffix(".expected")
    if os.environ.get("EDDY_REGEN") == "1":
        expected_path.write_text(outcome + "\n", encoding="utf-8")
    assert (outcome == "ok") == path.stem.startswith("valid"), outcome
    assert outcome == expected_path.read_text(encoding="utf-8").strip()
