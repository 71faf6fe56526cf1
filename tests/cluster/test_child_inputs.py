"""The leader holds the topics a parent's children read before it deploys any of them, so
bus retention cannot remove events a receiver child took while the reading children were
still starting (:mod:`eddy.cluster.child_inputs`). A real manager (its lease on SQLite, in
this process) and a real SQLite bus with a retention age of 0: everything not protected by
a committed position is removable at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from polling import wait_for

from eddy.bus import Retention, TopicSpec, open_bus
from eddy.cluster.manager import Manager
from eddy.config import WorkerConfig
from eddy.config.model import DeploymentYaml
from eddy.io.app_connectors import query_consumer

APP = """\
@App:name('Held')

@source(type='http', receiver.url='http://127.0.0.1:8290/held', @map(type='json'))
define stream TempStream (deviceID long, roomNo int, temp double);

@info(name = 'query-1')
@dist(execGroup='group-1', parallel='2')
from TempStream[temp > {limit}]
select roomNo, temp
insert into HotStream;

@info(name = 'query-2')
@dist(execGroup='group-2')
from HotStream[roomNo > 10]
select roomNo, temp
insert into FarHotStream;
"""
READERS = {"Held-group-1-1": "Held.TempStream", "Held-group-1-2": "Held.TempStream",
           "Held-group-2-1": "Held.HotStream"}
TOPICS = ("Held.TempStream", "Held.HotStream")


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Manager]:
    """A manager alone on the embedded defaults (no worker joins: every app waits), leading."""
    model = DeploymentYaml.model_validate({
        "eddy": {"dataDir": str(tmp_path / "data"), "busUrl": f"sqlite:///{tmp_path}/bus.db"}})
    manager = Manager(WorkerConfig(model, None, profile="manager"))
    manager.start()
    try:
        wait_for(lambda: manager.is_leader, 30, "the manager to lead")
        yield manager
    finally:
        manager.stop()


def _readings(rows: int) -> pa.Table:
    return pa.table({"deviceID": pa.array(range(rows), pa.int64()),
                     "roomNo": pa.array([20] * rows, pa.int32()),
                     "temp": pa.array([45.0] * rows, pa.float64())})


def test_a_waiting_parents_input_topics_are_held_before_any_child_runs(
        leader: Manager, tmp_path: Path) -> None:
    assert leader.submit(APP.format(limit="40.0"), "Held", replace=False)
    assert leader.waiting_reason("Held")  # no worker: nothing of it runs
    with open_bus(f"sqlite:///{tmp_path}/bus.db", retention=Retention(max_age_ms=0)) as bus:
        assert {child: bus.committed(query_consumer(child), topic, 0)
                for child, topic in READERS.items()} == {c: 0 for c in READERS}
        # The receiver child (the source's passthrough) reads no topic: nothing held for it.
        assert bus.committed(query_consumer("Held-passthrough-TempStream-1"),
                             "Held.TempStream", 0) is None
        for topic in TOPICS:
            bus.append(topic, _readings(5).select([a.name for a in bus.topic(topic).attributes]))
        bus.create_topic(TopicSpec("Held.Unread", bus.topic("Held.TempStream").attributes))
        bus.append("Held.Unread", _readings(5))
        bus.append("Held.Unread", _readings(5))
        # Retention is on: the unread topic loses its first batch once it is older than 0 ms.
        wait_for(lambda: bus.trim() >= 0 and bus.start_offsets("Held.Unread") == [5], 10,
                 "retention to trim the unread topic")
        assert [bus.start_offsets(topic) for topic in TOPICS] == [[0], [0]]

        # A child that has started commits its own position; holding again never moves it.
        bus.commit(query_consumer("Held-group-1-1"), "Held.TempStream", 0, 3)
        leader.submit(APP.format(limit="41.0"), "Held", replace=True)  # new child versions
        assert bus.committed(query_consumer("Held-group-1-1"), "Held.TempStream", 0) == 3
