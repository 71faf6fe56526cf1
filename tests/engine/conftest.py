"""Fixtures of the engine tests that run groups over a bus of their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eddy.bus import Bus, open_bus, sqlite_url


@pytest.fixture
def bus_url(tmp_path: Path) -> str:
    """A SQLite bus in the test's own folder."""
    return sqlite_url(tmp_path / "bus" / "bus.db")


@pytest.fixture
def bus(bus_url: str) -> Iterator[Bus]:
    """That bus, open."""
    with open_bus(bus_url) as opened:
        yield opened
