"""Shared test setup: ``eddy`` importable from the checkout, and one SparkSession per run."""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Tests run against the source tree even when eddy is not pip-installed into the venv.
_SRC = Path(__file__).resolve().parents[1] / "src"
if str(_SRC) not in sys.path:
    sys.path.insert(0, str(_SRC))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """A crash's traceback goes to standard output, right after the test it stopped: CI
    shows the tail of that stream, and pytest's own handler writes to standard error, which
    a CI log may not keep. Only the crashing thread's: Spark's many idle threads would push
    it out of that tail."""
    faulthandler.enable(file=os.dup(sys.stdout.fileno()), all_threads=False)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The process's SparkSession, shared by every test: starting one costs ~5 s."""
    pytest.importorskip("pyspark")
    from eddy.engine.spark.session import get_spark, stop_spark

    session = get_spark()
    yield session
    stop_spark()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """``host:port`` of a Kafka-compatible broker: ``EDDY_TEST_KAFKA``, or a Tansu started
    for the session (and killed, by process group, at its end)."""
    external = os.environ.get("EDDY_TEST_KAFKA")
    if external:
        yield external
        return
    from kafka_broker import start_tansu

    broker = start_tansu()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()
