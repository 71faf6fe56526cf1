"""Bus positions in minimum HA, on the real SQLite bus and NATS JetStream: where a mirrored
checkpoint resumes, the passive's lag in events behind the active's committed position, and
retention that keeps what a successor resuming from the mirror still has to read even
though the active's own committed position is past it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from ha_nodes import NATS_URL

from eddy.bus import TS, Bus, Retention, TopicSpec, open_bus, sqlite_url
from eddy.io.app_connectors import query_consumer
from eddy.lang.ast import Attribute, AttrType
from eddy.node.ha_positions import lag_events, mirror_consumer, protect, resume_positions

HEADER = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n'


@pytest.fixture(params=["sqlite", "nats"])
def bus(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Bus]:
    url = sqlite_url(tmp_path / "bus.db") if request.param == "sqlite" \
        else f"{NATS_URL}?app=hap{uuid.uuid4().hex[:10]}"
    opened = open_bus(url, retention=Retention(max_age_ms=1))
    yield opened
    if request.param == "nats":
        from eddy.bus.nats_bus import NatsBus

        assert isinstance(opened, NatsBus)
        opened.destroy()
    opened.close()


def checkpoint(root: Path, offsets: dict[int, str], commits: list[int]) -> Path:
    """A Spark checkpoint's offset and commit logs (``offsets``: batch -> source line)."""
    for batch, line in offsets.items():
        (root / "spark" / "offsets").mkdir(parents=True, exist_ok=True)
        (root / "spark" / "offsets" / str(batch)).write_text(HEADER + line)
    (root / "spark" / "commits").mkdir(parents=True, exist_ok=True)
    for batch in commits:
        (root / "spark" / "commits" / str(batch)).write_text("v1\n{}")
    return root


def test_a_checkpoint_resumes_at_the_end_of_its_last_committed_batch(tmp_path: Path) -> None:
    assert resume_positions(tmp_path / "none") == {}
    root = checkpoint(tmp_path, {3: '{"A.In": [20, 7], "A.__tick__": [2]}',
                                 4: '{"A.In": [40, 9], "A.__tick__": [3]}'}, [])
    assert resume_positions(root) == {}  # nothing committed: from the bus's positions
    checkpoint(root, {}, [2, 3])
    assert resume_positions(root) == {"A.In": [20, 7], "A.__tick__": [2]}  # batch 4 re-runs


def test_the_lag_and_retention_follow_the_mirror_not_the_group(bus: Bus, tmp_path: Path
                                                              ) -> None:
    bus.create_topic(TopicSpec("A.In", (Attribute("v", AttrType.LONG),)))
    for first in range(0, 50, 10):  # five stored batches: 0..9, 10..19, …, 40..49
        values = list(range(first, first + 10))
        bus.append("A.In", pa.table({TS: [1_000 + v for v in values], "v": values}))
    # The active ran batch 4 to the end and committed 50, but its mirror was last pushed
    # when batch 4 started: a successor resumes at 20 and re-runs 20..49.
    bus.commit(query_consumer("A"), "A.In", 0, 50)
    mirrored = resume_positions(checkpoint(tmp_path, {3: '{"A.In": [20]}',
                                                      4: '{"A.In": [50]}'}, [3]))
    assert lag_events(bus, "A", mirrored) == 30
    assert lag_events(bus, "A", {"A.In": [50]}) == 0
    assert lag_events(bus, "B", mirrored) == 0  # nothing committed for that app

    protect(bus, "A", mirrored)
    assert bus.committed(mirror_consumer("A"), "A.In", 0) == 20
    time.sleep(0.01)  # every stored batch is now older than the 1 ms retention
    bus.trim()
    assert bus.start_offsets("A.In") == [20]
    assert bus.read_table("A.In", 0, 20, 50).column("v").to_pylist() == list(range(20, 50))
