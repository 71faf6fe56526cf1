"""The front-end commands as a person runs them: exit codes, stdout, stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eddy.cli import main

APP = "define stream S (a int);\n@info(name='q') FROM S[a>1] select a insert into O;\n"


def test_fmt_prints_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "app.siddhi"
    path.write_text(APP)
    assert main(["fmt", str(path)]) == 0
    formatted = capsys.readouterr().out
    assert "from S[a > 1]" in formatted
    assert main(["fmt", "--check", str(path)]) == 1
    assert "would be reformatted" in capsys.readouterr().err
    assert main(["fmt", "-w", str(path)]) == 0
    assert path.read_text() == formatted
    assert main(["fmt", "--check", str(path)]) == 0


def test_validate_reports_syntax_errors_with_caret(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.siddhi"
    path.write_text("define stream S (a int);\nfrom S selct a insert into O;\n")
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{path}:2:7: error: unexpected 'selct'")
    assert err[1] == "  from S selct a insert into O;"
    assert err[2] == "         ^^^^^"
    assert any("did you mean 'select'" in line for line in err)


def test_console_script_runs_without_spark(tmp_path: Path) -> None:
    path = tmp_path / "ok.siddhi"
    path.write_text(APP)
    done = subprocess.run([sys.executable, "-m", "eddy.cli", "validate", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"{path}: ok"
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, eddy.cli; eddy.cli.main(['validate', sys.argv[1]]);"
         " print('pyspark' in sys.modules)", str(path)],
        capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip().endswith("False"), "validate must not import Spark"


def test_validate_fills_in_variables_from_the_environment(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    app = tmp_path / "vars.siddhi"
    app.write_text("define stream ${IN_STREAM} (a int);\n"
                   "from ${IN_STREAM} select a insert into Out;\n", encoding="utf-8")
    monkeypatch.setenv("IN_STREAM", "Readings")
    assert main(["validate", str(app)]) == 0
    monkeypatch.delenv("IN_STREAM")
    assert main(["validate", str(app)]) == 1
    assert f"{app}:1:14: error: no system or environment variable found for '${{IN_STREAM}}'" \
        in capsys.readouterr().err
