"""Fixtures of the API tests: one real ``eddy worker`` process for the whole package.

The worker process helper lives beside the node tests (``tests/node/worker_process.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_NODE_TESTS = Path(__file__).resolve().parents[1] / "node"
if str(_NODE_TESTS) not in sys.path:
    sys.path.insert(0, str(_NODE_TESTS))

from worker_process import WorkerProcess  # noqa: E402

@pytest.fixture(scope="package")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """A worker keeping two revisions per app and taking request bodies up to 64 KiB."""
    process = WorkerProcess(tmp_path_factory.mktemp("api-worker"),
                            extra_config="state.persistence:\n  revisionsToKeep: 2\n",
                            eddy_config="  maxRequestBytes: 65536\n")
    process.start()
    yield process
    assert process.stop() == 0, process.log_tail()
