"""The import rules of DESIGN.md §1 hold: ``lint-imports`` keeps every contract in
pyproject.toml's ``[tool.importlinter]`` (``lang``, ``plan`` and the per-event runtime never
import pyspark; imports point down the layers)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) \
        or shutil.which("lint-imports")
    assert command is not None, "import-linter is a dev dependency: pip install -e '.[dev]'"
    done = subprocess.run([command, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
