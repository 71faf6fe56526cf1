"""The README's example, as a person runs it: ``eddy run`` and ``eddy replay`` on the seed app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Imported before any test captures stdout, as a full run does: ``eddy run`` must write to
# the stdout of the moment it runs, not the one of its import.
import eddy.engine.run.live  # noqa: F401
from eddy.cli import main

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "examples" / "temperature.siddhi")
EVENTS = str(ROOT / "examples" / "temperature.jsonl")
ALERTS = {"AlertStream : Event{timestamp=1700000020000, data=[101, 38.0, 44.0], isExpired=false}",
          "AlertStream : Event{timestamp=1700000040000, data=[102, 41.5, 47.0], isExpired=false}",
          "AlertStream : Event{timestamp=1700000060000, data=[205, 30.0, 36.0], isExpired=false}"}


def test_readme_example_runs(spark: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", APP, "--input", EVENTS]) == 0
    lines = set(capsys.readouterr().out.splitlines())
    assert ALERTS <= lines
    assert sum(1 for line in lines if line.startswith("HighTempStream")) == 4


def test_replay_json_matches_run(spark: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", APP, "--input", EVENTS, "--json", "--batch-size", "2"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [e["data"] for e in result["streams"]["AlertStream"]] == [
        [101, 38.0, 44.0], [102, 41.5, 47.0], [205, 30.0, 36.0]]
    assert len(result["streams"]["AvgTempStream"]) == 7
    assert result["queries"]["query-3"][0] == {"timestamp": 1700000010000,
                                               "data": [102, 41.5], "expired": False}


def test_bad_input_is_reported(tmp_path: Path, spark: object,
                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"stream": "TempStream", "timestamp": 1, "data": [1, 2]}\n')
    assert main(["replay", APP, "--input", str(bad)]) == 1
    assert "has 3 attributes, the event has 2 values" in capsys.readouterr().err
    bad.write_text('{"stream": "TempStream", "data": [1, 2, 3.0]}\n')
    assert main(["replay", APP, "--input", str(bad)]) == 1
    assert "it has no 'timestamp'" in capsys.readouterr().err
    bad.write_text('{"stream": "TempStream", "timestamp": "noon", "data": [1, 2, 3.0]}\n')
    assert main(["replay", APP, "--input", str(bad)]) == 1
    assert "'timestamp' must be a number of milliseconds, not 'noon'" in capsys.readouterr().err
