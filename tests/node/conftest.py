"""Fixtures of the node tests: one real ``eddy worker`` process per test module.

A module sets ``WORKER_CONFIG`` (deployment.yaml blocks added to the test defaults) and
``WORKER_EDDY_CONFIG`` (lines added to the ``eddy:`` block) to configure its worker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from worker_process import WorkerProcess


@pytest.fixture(scope="module")
def worker(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    """The module's worker, started; stopped cleanly (exit status 0) at the end."""
    extra = getattr(request.module, "WORKER_CONFIG", "")
    eddy = getattr(request.module, "WORKER_EDDY_CONFIG", "")
    process = WorkerProcess(tmp_path_factory.mktemp("worker"), extra_config=extra,
                            eddy_config=eddy)
    process.start()
    yield process
    if process.process is not None and process.process.poll() is None:
        assert process.stop() == 0, process.log_tail()
