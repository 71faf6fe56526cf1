"""``eddy worker`` start-up: configuration faults stop it with the key and the line, default
credentials never listen beyond loopback, and the first log lines say what it runs with."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from worker_process import SRC

from eddy.config import load_config
from eddy.node.worker import describe


def _worker(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eddy.cli", "worker", "--config", str(config)],
                          capture_output=True, text=True, timeout=60, cwd=config.parent,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})


def test_a_faulty_config_stops_the_worker_naming_key_and_line(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yaml"
    config.write_text("wso2.carbon:\n  id: w1\nstate.persistence:\n  enabled: yes\n"
                      "  intervalInMins: 2\n")
    result = _worker(config)
    assert result.returncode == 2
    assert result.stderr.strip() == (f"eddy worker: {config}:5: state.persistence."
                                     f"intervalInMins: unknown key; did you mean "
                                     f"'intervalInMin'?")


def test_default_credentials_beyond_loopback_stop_the_worker(tmp_path: Path) -> None:
    config = tmp_path / "deployment.yaml"
    config.write_text("wso2.transport.http:\n  listenerConfigurations:\n"
                      "    - {id: default, host: 0.0.0.0, port: 9090}\n")
    result = _worker(config)
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0:9090 with the default credentials" in result.stderr


def test_the_first_log_lines_say_embedded_defaults_and_warn_about_credentials(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.INFO, logger="eddy.node.worker"):
        describe(load_config(None))
    first, second, warning = caplog.records[:3]
    assert first.getMessage() == (f"no deployment.yaml given: running with embedded defaults "
                                  f"(data under {tmp_path / 'eddy-data'}, SQLite bus, "
                                  f"Spark local[*])")
    assert f"bus sqlite:///{tmp_path / 'eddy-data' / 'bus' / 'bus.db'}" in second.getMessage()
    assert warning.levelno == logging.WARNING
    assert "default credentials admin:admin" in warning.getMessage()
