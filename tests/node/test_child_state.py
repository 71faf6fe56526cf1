"""A distributed child's state across workers (:mod:`eddy.node.child_state`), with a real
persistence database and a real bus with retention (both SQLite), the workers' own
registries and checkpoint folders, and the checkpoint files as Spark lays them out.

Bus retention must never remove an event that a worker taking a moved child over reads
again: the child's own consumer position (``<child>/main``) is committed as each batch
completes, one batch ahead of the mirror in the persistence database, whose newest batch
the next worker re-runs. And a retired child (its parent deleted) leaves nothing behind:
neither rows in the persistence database nor the position that kept its mirror's events
from retention.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.bus.retention import Retention
from eddy.io.app_connectors import query_consumer
from eddy.lang.ast import Attribute, AttrType
from eddy.node.child_state import ChildState
from eddy.node.deployment import DeploymentFolder
from eddy.node.ha_positions import mirror_consumer, resume_positions
from eddy.node.persistence import RevisionStore
from eddy.node.registry import AppRegistry
from eddy.store.connect import connect
from eddy.store.fence import Fenced

CHILD = "Dist-group-1-1"
TEXT = "@App:name('Dist-group-1-1')\n-- the child's text: only its digest matters here\n"
TOPIC = "Dist.TempStream"
BATCH = 10  # events per stored bus batch


def _no_runner(spec: Any) -> Any:
    raise AssertionError("nothing is run in this test")


def _worker(root: Path, name: str, bus_url: str) -> ChildState:
    """One worker's child state over the shared persistence database."""
    registry = AppRegistry(DeploymentFolder(root / name / "deployment"),
                           RevisionStore(root / name / "persistence", 3), _no_runner, bus_url)
    return ChildState(connect(f"sqlite:///{root / 'persistence.db'}"), "STATE", registry)


def _spark_batch(checkpoint: Path, batch_id: int, end: int, committed: bool) -> None:
    """Spark's offset log entry of a micro-batch reading the topic up to ``end`` (and its
    commit log entry once it completed)."""
    spark = checkpoint / "spark"
    for folder in ("offsets", "commits"):
        (spark / folder).mkdir(parents=True, exist_ok=True)
    (spark / "offsets" / str(batch_id)).write_text(
        "v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n" + json.dumps({TOPIC: [end]}))
    if committed:
        (spark / "commits" / str(batch_id)).write_text("v1\n{}")


def _run_to_batch_one(worker: ChildState) -> Path:
    """The worker takes the child, batch 0 (events [0, 20)) has completed and batch 1
    (up to 40) starts: mirrored, then run. The child's checkpoint folder."""
    worker.take_over(CHILD, TEXT)
    checkpoint = worker.registry.store.checkpoint_dir(CHILD)
    _spark_batch(checkpoint, 0, 20, committed=True)
    _spark_batch(checkpoint, 1, 40, committed=False)
    assert worker.registry.batch_hook is not None
    worker.registry.batch_hook(CHILD, checkpoint)(1)
    return checkpoint


@pytest.fixture
def bus(tmp_path: Path) -> Bus:
    """The bus as an operator trims it: every stored batch beyond 1 byte may go."""
    opened = open_bus(f"sqlite:///{tmp_path / 'bus.db'}", retention=Retention(max_bytes=1))
    opened.create_topic(TopicSpec(TOPIC, (Attribute("temp", AttrType.DOUBLE),)))
    for first in range(0, 5 * BATCH, BATCH):
        opened.append(TOPIC, pa.table({"temp": [float(t) for t in range(first, first + BATCH)]}))
    return opened


def test_retention_keeps_what_a_worker_taking_a_child_over_reads(tmp_path: Path,
                                                                 bus: Bus) -> None:
    bus_url = f"sqlite:///{tmp_path / 'bus.db'}"
    first, second = _worker(tmp_path, "w1", bus_url), _worker(tmp_path, "w2", bus_url)
    checkpoint = _run_to_batch_one(first)
    # Batch 1 completes on w1: the query commits its position past it, and w1 dies before
    # batch 2 mirrors that (the mirror's newest batch is 1, not known to have completed).
    _spark_batch(checkpoint, 1, 40, committed=True)
    bus.commit(query_consumer(CHILD), TOPIC, 0, 40)

    assert bus.trim() == 2 * BATCH
    assert bus.start_offsets(TOPIC) == [20]  # not [40]: the mirror resumes at 20

    note = second.take_over(CHILD, TEXT)  # the child moved: w2 continues it
    assert "continues from micro-batch 1" in note
    resumes = resume_positions(second.registry.store.checkpoint_dir(CHILD))
    assert resumes == {TOPIC: [20]}
    assert bus.read_table(TOPIC, 0, 20, 40).column("temp").to_pylist() == \
        [float(t) for t in range(20, 40)]  # batch 1, re-run by w2
    with pytest.raises(Fenced):
        first.registry.batch_hook(CHILD, checkpoint)(2)  # w1 resumes: shut out


def test_a_retired_child_leaves_no_state_and_no_mirror_position(tmp_path: Path,
                                                                  bus: Bus) -> None:
    bus_url = f"sqlite:///{tmp_path / 'bus.db'}"
    worker, other = _worker(tmp_path, "w1", bus_url), _worker(tmp_path, "w2", bus_url)
    checkpoint = _run_to_batch_one(worker)
    bus.commit(query_consumer(CHILD), TOPIC, 0, 40)
    assert bus.committed(mirror_consumer(CHILD), TOPIC, 0) == 20

    # Its parent is deleted; the worker it ran on is gone: another one forgets it.
    version = hashlib.sha256(TEXT.encode()).hexdigest()
    assert other.forget(CHILD, version) is True
    assert worker.mirror.head(next(iter(worker._keys.values()))) is None
    assert bus.committed(mirror_consumer(CHILD), TOPIC, 0) is None
    # The query's own position stays, as for an app undeployed on one node (deployed
    # again, it goes on from there): retention keeps only what follows it.
    assert bus.committed(query_consumer(CHILD), TOPIC, 0) == 40
    assert bus.trim() == 4 * BATCH
    assert bus.start_offsets(TOPIC) == [40]
    with pytest.raises(Fenced, match="retired"):  # w1, paused until now, writes nothing
        worker.registry.batch_hook(CHILD, checkpoint)(2)
    assert other.forget(CHILD, version) is False  # asked again (a lost answer): done
