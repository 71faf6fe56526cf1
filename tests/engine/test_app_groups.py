"""A ``@dist`` app run as its execution groups (one streaming query per child app,
connected by the parent's bus topics) gives what the same app gives run as one group.

Real Spark, real SQLite bus; the seed app of the distributed-deployment docs with its
``@dist`` annotations (query-3 in two round-robin instances), and a partitioned app read
field-grouped by three instances.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from eddy.bus import open_bus
from eddy.engine.run.app_groups import AppGroups
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_topics import output_events

WAIT_S = 180.0
HERE = Path(__file__).parents[1] / "plan" / "explain"
SEED = (HERE / "seed_distributed.siddhi").read_text()

PARTITIONED = """\
@App:name('Rooms')
define stream TempStream (deviceID long, roomNo int, temp double);

@info(name='clean')
@dist(execGroup='ingest')
from TempStream[temp > 0.0]
select deviceID, roomNo, temp
insert into CleanStream;

@dist(execGroup='per-room', parallel='3')
partition with (roomNo of CleanStream)
begin
    @info(name='avg')
    from CleanStream#window.length(3)
    select roomNo, avg(temp) as avgTemp, count() as n
    insert into RoomAvg;
end;
"""


def _single(text: str) -> str:
    """The same app without ``@dist``: one group."""
    return re.sub(r"@dist\([^)]*\)", "", text)


def _events(count: int) -> dict[str, list[Any]]:
    rooms = [100 + (i * 7) % 13 for i in range(count)]
    return {"_ts": [1_000 + i * 500 for i in range(count)],
            "deviceID": [i % 5 for i in range(count)], "roomNo": rooms,
            "temp": [float(20 + (i * 11) % 31) for i in range(count)]}


def _run(runner: GroupRunner | AppGroups, url: str, topic: str,
         events: dict[str, list[Any]], outputs: list[str]) -> dict[str, list[Any]]:
    runner.start()
    try:
        with open_bus(url) as bus:
            for lo in range(0, len(events["_ts"]), 40):  # several appends: several batches
                bus.append(topic, pa.table({k: v[lo:lo + 40] for k, v in events.items()}))
        assert runner.await_idle(WAIT_S)
        with open_bus(url) as bus:
            return {o: [e["data"] for e in output_events(bus, o)] for o in outputs}
    finally:
        runner.stop()


def _compare(text: str, app: str, outputs: dict[str, bool], spark: Any,
             tmp_path: Path) -> None:
    """``outputs``: topic → whether its order must match too (a parallel group's
    instances interleave their appends)."""
    events = _events(200)
    one = _run(GroupRunner(_single(text), f"sqlite:///{tmp_path / 'one.db'}",
                           tmp_path / "one", spark=spark, topic_prefix=f"{app}.",
                           heartbeat=False),
               f"sqlite:///{tmp_path / 'one.db'}", f"{app}.TempStream", events, list(outputs))
    groups = AppGroups(text, f"sqlite:///{tmp_path / 'many.db'}", tmp_path / "many",
                       topic_prefix=f"{app}.", spark=spark, heartbeat=False)
    assert len(groups.runners) > 1
    many = _run(groups, f"sqlite:///{tmp_path / 'many.db'}", f"{app}.TempStream", events,
                list(outputs))
    for topic, ordered in outputs.items():
        assert one[topic], f"{topic} is empty: the test shows nothing"
        if ordered:
            assert many[topic] == one[topic], topic
        else:
            assert Counter(map(tuple, many[topic])) == Counter(map(tuple, one[topic])), topic


def test_seed_app_runs_as_its_groups(spark: Any, tmp_path: Path) -> None:
    _compare(SEED, "TempApp", {"TempApp.AvgTempStream": True, "TempApp.AlertStream": True,
                               "TempApp.HighTempStream": False}, spark, tmp_path)


def test_partitioned_app_runs_field_grouped(spark: Any, tmp_path: Path) -> None:
    _compare(PARTITIONED, "Rooms", {"Rooms.RoomAvg": False}, spark, tmp_path)
