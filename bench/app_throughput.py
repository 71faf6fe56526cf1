"""Whole apps through the plan a worker builds, read from the bus (issue 16).

Each app runs in a real :class:`~eddy.engine.run.group_runner.GroupRunner` — the worker's
runner: its bus source (no ``_clock`` column), its physical plan (``eddy explain`` shows
it), its bus sink — over ``TempStream (deviceID long, roomNo int, temp double)`` events
100 ms apart in event time, roomNo uniform over 1,000 rooms, temp ~ N(30, 10), appended to
the input topic before the runner starts and read in micro-batches of ``--batch-rows``.
Steady ev/s = input events (the source offsets' advance, not Spark's ``numInputRows``,
which counts each of a plan's scans of the source) / ``triggerExecution`` time of the
micro-batches after the first
``--warmup`` ones, or after the first ``--warmup-minutes`` of a timed run (the JVM's and
Python workers' warm-up: class loading, JIT — which goes on for minutes — imports);
p50/p99 of those micro-batches; the run's total rate, warm-up included, beside it; the
mean of Spark's phases of a steady micro-batch; the state stores' keys and memory after the
first and the last steady micro-batch. ``--rate`` appends only the warm-up's events
before the start and the rest at that rate while the app runs: the micro-batch p50/p99 at
a load (the issue's "p99 at half the maximum rate"); its ev/s then says nothing.
``--minutes`` keeps events arriving a few micro-batches ahead of the app for that long
(capacity over a long run, as the issue measures it: ``--long``).

Apps:

- ``seed``: the seed app as written (``examples`` of the WSO2 distributed doc: query-1
  ``#window.time(2 min)`` avg ``insert all events``, query-2 the rising-temperature
  pattern, query-3 a filter), one group;
- ``seed-query-1``: the seed app's query-1 alone; ``seed-query-2``: its pattern alone;
- ``two-windows``: ``#window.time(1 min)`` avg by room and ``#window.length(100)`` max by
  room;
- ``filtered-window``: ``TempStream[temp > 20]#window.time(1 min)`` avg by room.
- ``hot-rooms``: ``#window.time(1 min)`` avg and count by room ``having avgTemp > 32.0``;
- ``device-totals``: no window, per device (5,000) a running count, ``max(temp)`` and
  ``sum(roomNo)`` (a long);
- ``minute-batches``: ``#window.timeBatch(1 min)`` per room ``max(temp)``, ``stdDev(temp)``
  and a count, ``having maxTemp > 40.0``;
- ``room-partitions``: ``partition with (roomNo of TempStream)``, each room's
  ``#window.length(10)`` avg and ``distinctCount(deviceID)``;
- ``room-dashboard``: ``#window.time(1 min)`` avg and max by room, ``output last every 5
  sec`` (each room's latest, as a dashboard reads them);
- ``with-a-table``: the hottest devices upserted into a table (the per-event runtime's),
  beside a ``#window.time(1 min)`` avg and count by room;
- ``room-alerts``: a filter of plausible readings into a stream, their
  ``#window.time(1 min)`` avg by room into another, and a filter of that (a chain of three
  queries inside the group);
- ``temp-jumps``: a self join of each reading with the room's readings among the last 2,000
  that were more than 5 degrees colder;
- ``rising-rooms``: per room (``partition with (roomNo of TempStream)``) the sequence of
  three readings in a row, each more than a degree warmer than the one before;
- ``heat-outcomes``: after each reading above 45 degrees, whichever comes first: a reading
  below 25 in that room or a reading above 50 from that device (``every e1 -> (e2 or
  e3)``);
- ``room-bursts``: per room, each run of three to five readings above 40 degrees and the
  room's next reading below 20 (``every e1=TempStream[temp > 40.0]<3:5> -> e2=…``, a
  counting pattern);
- ``room-swings``: per room, a reading above 45 degrees, then one below 15, then one above
  45 again, restarted as a whole (``every (e1 -> e2 -> e3)``: one partial match per room);
- ``device-bursts``: per device (``partition with (deviceID of TempStream)``), two to five
  readings above 35 degrees and a reading below 25 from the same device within 20 minutes
  (a counting pattern with ``within``);
- ``room-pair-stats``: per room, the pairs of its last 1,000 readings (of all rooms) and
  last 100 door readings (a second stream, every other event), counted and averaged: a
  join of two length windows that aggregates;
- ``room-breaches``: per room, a door reading above 40 and a reading above 45 in either
  order, then an alarm reading (three streams, every third event each) less than 20 below
  it (``every (e1 and e2) -> e3``, a logical pattern);
- ``hot-spells``: spells of readings above 50 degrees, each over once none came for 10
  seconds (``#window.session``): its readings, peak and mean as they arrive and leave;
- ``room-silence``: WSO2's heartbeat idiom, a room with no reading for 5 minutes after one
  (``every e1 -> not S[roomNo == e1.roomNo] for 5 min``, an absent pattern);
- ``silent-partitions``: the same per room as WSO2 writes it, in a value partition (each
  room its own pattern and timers);
- ``device-alerts``: WSO2's partition idiom: per device, the average of its last 10
  readings into an inner stream ``#AvgTempStream``, and a filter of the partition reading it
  into an alert stream;
- ``room-trends``: averages of the last minute by room into a stream, and two stateful
  queries reading it: each room's peak of its last 10 averages, and an average above 40
  followed by a higher one in that room within a minute (a chain of stateful queries);
- ``device-trends``: WSO2's partition idiom with a stateful reader: per device, the average
  of its last 10 readings into ``#AvgTempStream``, and the peak of its last 5 averages.

The Siddhi reference figures (one JVM thread of this machine, one event per send) are in
``RESULTS.md``. ``--handwritten`` runs, in the same process, a hand-written PySpark job
that computes ``filtered-window`` (``bench/handwritten.py``: the filter in the JVM, each
room's last minute in ``applyInPandasWithState``, NumPy per batch) over the same events,
read and written through the same bus; ``bench/cep_throughput.py`` has hand-written jobs for
the pattern and the joins.

Run: PYTHONPATH=src .venv/bin/python bench/app_throughput.py [--apps seed,two-windows,
     filtered-window] [--events 600000] [--batch-rows 100000] [--warmup 2]
     [--bus sqlite|nats://127.0.0.1:4222] [--handwritten] [--rate EV_PER_S]
     [--minutes M --warmup-minutes W]  (events arrive as the app reads them, for M
     minutes; the first W minutes' micro-batches left out: a warm JVM)
     ... --long  (the issue's variant: --minutes 10 --warmup-minutes 2)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from eddy.bus import Bus, open_bus, sqlite_url
from eddy.engine.compile.operator_facts import physical_plan
from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.spark.row_layout import input_layout
from eddy.engine.spark.session import get_spark
from eddy.lang import check

TEMP = "define stream TempStream (deviceID long, roomNo int, temp double);\n"
APPS = {
    "seed": "@app:name('Seed')\n" + TEMP + """
@info(name = 'query-1')
from TempStream#window.time(2 min)
select avg(temp) as avgTemp, roomNo, deviceID
insert all events into AvgTempStream;
@info(name = 'query-2')
from every( e1=TempStream ) -> e2=TempStream[e1.roomNo==roomNo and (e1.temp + 5) <= temp ]
    within 10 min
select e1.roomNo, e1.temp as initialTemp, e2.temp as finalTemp
insert into AlertStream;
@info(name = 'query-3')
from TempStream [(roomNo >= 100 and roomNo < 110) and temp > 40 ]
select roomNo, temp
insert into HighTempStream;
""",
    "seed-query-1": "@app:name('SeedQuery1')\n" + TEMP + """
@info(name = 'query-1')
from TempStream#window.time(2 min)
select avg(temp) as avgTemp, roomNo, deviceID
insert all events into AvgTempStream;
""",
    "seed-query-2": "@app:name('SeedQuery2')\n" + TEMP + """
@info(name = 'query-2')
from every( e1=TempStream ) -> e2=TempStream[e1.roomNo==roomNo and (e1.temp + 5) <= temp ]
    within 10 min
select e1.roomNo, e1.temp as initialTemp, e2.temp as finalTemp
insert into AlertStream;
""",
    "two-windows": "@app:name('TwoWindows')\n" + TEMP + """
@info(name = 'avg-1min') from TempStream#window.time(1 min)
select roomNo, avg(temp) as avgTemp group by roomNo insert into AvgStream;
@info(name = 'max-100') from TempStream#window.length(100)
select roomNo, max(temp) as maxTemp group by roomNo insert into MaxStream;
""",
    "filtered-window": "@app:name('FilteredWindow')\n" + TEMP + """
@info(name = 'hot-avg') from TempStream[temp > 20]#window.time(1 min)
select roomNo, avg(temp) as avgTemp group by roomNo insert into HotAvgStream;
""",
    "hot-rooms": "@app:name('HotRooms')\n" + TEMP + """
@info(name = 'hot-rooms') from TempStream#window.time(1 min)
select roomNo, avg(temp) as avgTemp, count() as readings group by roomNo
having avgTemp > 32.0 insert into HotRoomStream;
""",
    "device-totals": "@app:name('DeviceTotals')\n" + TEMP + """
@info(name = 'device-totals') from TempStream
select deviceID, count() as readings, max(temp) as maxTemp, sum(roomNo) as roomSum
group by deviceID insert into DeviceTotalStream;
""",
    "minute-batches": "@app:name('MinuteBatches')\n" + TEMP + """
@info(name = 'minute-batches') from TempStream#window.timeBatch(1 min)
select roomNo, max(temp) as maxTemp, stdDev(temp) as spread, count() as readings
group by roomNo having maxTemp > 40.0 insert into MinuteStream;
""",
    "room-partitions": "@app:name('RoomPartitions')\n" + TEMP + """
partition with (roomNo of TempStream)
begin
    @info(name = 'room-last-10') from TempStream#window.length(10)
    select roomNo, avg(temp) as avgTemp, distinctCount(deviceID) as devices
    insert into RoomStream;
end;
""",
    "room-dashboard": "@app:name('RoomDashboard')\n" + TEMP + """
@info(name = 'room-dashboard') from TempStream#window.time(1 min)
select roomNo, avg(temp) as avgTemp, max(temp) as maxTemp group by roomNo
output last every 5 sec insert into DashboardStream;
""",
    "with-a-table": "@app:name('WithATable')\n" + TEMP + """
define table HotDeviceTable (deviceID long, roomNo int, temp double);
@info(name = 'hot-devices') from TempStream[temp > 55.0]
update or insert into HotDeviceTable on HotDeviceTable.deviceID == deviceID;
@info(name = 'room-avg') from TempStream#window.time(1 min)
select roomNo, avg(temp) as avgTemp, count() as readings group by roomNo
insert into RoomAvgStream;
""",
    "room-alerts": "@app:name('RoomAlerts')\n" + TEMP + """
@info(name = 'valid') from TempStream[temp > -50.0 and temp < 150.0]
select roomNo, temp insert into ValidTempStream;
@info(name = 'room-avg') from ValidTempStream#window.time(1 min)
select roomNo, avg(temp) as avgTemp group by roomNo insert into RoomAvgStream;
@info(name = 'room-alert') from RoomAvgStream[avgTemp > 35.0]
select roomNo, avgTemp insert into RoomAlertStream;
""",
    "temp-jumps": "@app:name('TempJumps')\n" + TEMP + """
@info(name = 'temp-jumps')
from TempStream#window.length(1) as now join TempStream#window.length(2000) as before
on now.roomNo == before.roomNo and now.temp > before.temp + 5.0
select now.roomNo, before.temp as was, now.temp as is insert into JumpStream;
""",
    "rising-rooms": "@app:name('RisingRooms')\n" + TEMP + """
partition with (roomNo of TempStream) begin
@info(name = 'rising')
from every e1=TempStream, e2=TempStream[temp > e1.temp + 1.0],
  e3=TempStream[temp > e2.temp + 1.0]
select e1.roomNo, e1.temp as first, e3.temp as last insert into RisingStream;
end;
""",
    "heat-outcomes": "@app:name('HeatOutcomes')\n" + TEMP + """
@info(name = 'outcome')
from every e1=TempStream[temp > 45.0]
  -> (e2=TempStream[roomNo == e1.roomNo and temp < 25.0]
      or e3=TempStream[deviceID == e1.deviceID and temp > 50.0])
select e1.roomNo, e1.temp as hot, e2.temp as cooled, e3.temp as hotter
insert into OutcomeStream;
""",
    "room-bursts": "@app:name('RoomBursts')\n" + TEMP + """
partition with (roomNo of TempStream) begin
@info(name = 'bursts')
from every e1=TempStream[temp > 40.0]<3:5> -> e2=TempStream[temp < 20.0]
select e1[0].roomNo, e1[0].temp as first, e1[last].temp as last, e2.temp as cooled
insert into BurstStream;
end;
""",
    "room-swings": "@app:name('RoomSwings')\n" + TEMP + """
partition with (roomNo of TempStream) begin
@info(name = 'swings')
from every (e1=TempStream[temp > 45.0] -> e2=TempStream[temp < 15.0]
            -> e3=TempStream[temp > 45.0])
select e1.roomNo, e1.temp as high, e2.temp as low, e3.temp - e2.temp as rise
insert into SwingStream;
end;
""",
    "device-bursts": "@app:name('DeviceBursts')\n" + TEMP + """
partition with (deviceID of TempStream) begin
@info(name = 'bursts')
from every e1=TempStream[temp > 35.0]<2:5> -> e2=TempStream[temp < 25.0] within 20 min
select e1[0].deviceID, e1[0].temp as first, e1[last].temp as last, e2.temp as cooled
insert into DeviceBurstStream;
end;
""",
    "room-pair-stats": "@app:name('RoomPairStats')\n" + TEMP + """
define stream DoorStream (deviceID long, roomNo int, temp double);
@info(name = 'room-pairs') from TempStream#window.length(1000) as t
join DoorStream#window.length(100) as d on t.roomNo == d.roomNo
select t.roomNo, count() as pairs, avg(t.temp) as meanTemp group by t.roomNo
insert into RoomPairStream;
""",
    "room-breaches": "@app:name('RoomBreaches')\n" + TEMP + """
define stream DoorStream (deviceID long, roomNo int, temp double);
define stream AlarmStream (deviceID long, roomNo int, temp double);
partition with (roomNo of TempStream, roomNo of DoorStream, roomNo of AlarmStream)
begin
    @info(name = 'breach') from every (e1=DoorStream[temp > 40.0] and e2=TempStream[temp > 45.0])
    -> e3=AlarmStream[temp > e2.temp - 20.0]
    select e1.deviceID as door, e2.temp, e3.deviceID as alarm insert into BreachStream;
end;
""",
    "hot-spells": "@app:name('HotSpells')\n" + TEMP + """
@info(name = 'hot-spell') from TempStream[temp > 50.0]#window.session(10 sec)
select count() as readings, max(temp) as peak, avg(temp) as meanTemp
insert all events into HotSpellStream;
""",
    "room-silence": "@app:name('RoomSilence')\n" + TEMP + """
@info(name = 'silent-room') from every e1=TempStream -> not TempStream[roomNo == e1.roomNo]
    for 5 min
select e1.roomNo, e1.deviceID as lastDevice, eventTimestamp() as silentAt
insert into SilentRoomStream;
""",
    "silent-partitions": "@app:name('SilentPartitions')\n" + TEMP + """
partition with (roomNo of TempStream)
begin
    @info(name = 'silent-room') from every e1=TempStream -> not TempStream for 5 min
    select e1.roomNo, e1.deviceID as lastDevice, eventTimestamp() as silentAt
    insert into SilentRoomStream;
end;
""",
    "room-trends": "@app:name('RoomTrends')\n" + TEMP + """
@info(name = 'room-avg') from TempStream#window.time(1 min)
select roomNo, avg(temp) as avgTemp group by roomNo insert into RoomAvgStream;
@info(name = 'room-peak') from RoomAvgStream#window.length(10)
select roomNo, max(avgTemp) as peakAvg group by roomNo insert into RoomPeakStream;
@info(name = 'room-climb')
from every e1=RoomAvgStream[avgTemp > 40.0]
    -> e2=RoomAvgStream[roomNo == e1.roomNo and avgTemp > e1.avgTemp + 1.0] within 1 min
select e1.roomNo, e1.avgTemp as fromAvg, e2.avgTemp as toAvg insert into RoomClimbStream;
""",
    "device-trends": "@app:name('DeviceTrends')\n" + TEMP + """
partition with (deviceID of TempStream)
begin
    @info(name = 'device-avg') from TempStream#window.length(10)
    select deviceID, avg(temp) as avgTemp insert into #AvgTempStream;
    @info(name = 'device-peak') from #AvgTempStream#window.length(5)
    select deviceID, max(avgTemp) as peakAvg insert into DevicePeakStream;
end;
""",
    "device-alerts": "@app:name('DeviceAlerts')\n" + TEMP + """
partition with (deviceID of TempStream)
begin
    @info(name = 'device-avg') from TempStream#window.length(10)
    select roomNo, deviceID, avg(temp) as avgTemp insert into #AvgTempStream;
    @info(name = 'device-alert') from #AvgTempStream[avgTemp > 45.0]
    select roomNo, deviceID, avgTemp insert into DeviceAlertStream;
end;
""",
}
TARGETS = {"seed": 250_000, "two-windows": 400_000, "filtered-window": 500_000}
"""The issue's targets (ev/s on this 2-core machine); the other apps have none."""
CHUNK = 100_000
BACKLOG = 4
"""Micro-batches of events kept ahead of the app in a timed run (``--minutes``)."""


def events(start: int, count: int, rng: np.random.Generator) -> pa.Table:
    """``count`` events from number ``start`` on (100 ms apart), as a topic's rows."""
    index = np.arange(start, start + count, dtype=np.int64)
    return pa.table({"_ts": index * 100, "deviceID": index % 5_000,
                     "roomNo": rng.integers(0, 1_000, count).astype(np.int32),
                     "temp": rng.normal(30.0, 10.0, count)})


def run_app(name: str, count: int, batch_rows: int, warmup: int, bus_url: str,
            work: Path, rate: int = 0, minutes: float = 0.0,
            warmup_minutes: float = 0.0) -> dict[str, Any]:
    """One app through a GroupRunner over ``count`` events already on its input topic; with
    ``rate``, only the warm-up's events are there at the start and the rest arrive at
    ``rate`` events a second while it runs (micro-batch latency at a load, not capacity);
    with ``minutes``, events keep arriving, always a few micro-batches ahead of the app, for
    that long, and the micro-batches of the first ``warmup_minutes`` are left out."""
    app = APPS[name]
    spark = get_spark()
    run = f"{name}-{uuid.uuid4().hex[:6]}"  # an app listed twice starts afresh both times
    runner = GroupRunner(app, bus_url, work / run / "checkpoint", spark=spark, group=name,
                         max_rows_per_batch=batch_rows, heartbeat=False,
                         topic_prefix=f"{run}.")
    ahead = BACKLOG * batch_rows if minutes else \
        min(count, warmup * batch_rows) if rate else count
    inputs = [runner.input_topic(stream) for stream in runner.topics.inputs]
    assert len(inputs) == 1 or not (rate or minutes), \
        f"{name}: timed and paced runs feed one input stream"
    with open_bus(bus_url) as bus:
        runner.create_topics(bus)
        append_events(bus, inputs, ahead)
    started, began = time.perf_counter(), time.time()
    runner.start()
    try:
        seen: dict[int, Any] = {}
        if minutes:
            count = keep_ahead(bus_url, runner.input_topic("TempStream"), ahead, batch_rows,
                               lambda: gather(spark, seen), began + minutes * 60)
        elif ahead < count:
            feed(bus_url, runner.input_topic("TempStream"), ahead, count, rate,
                 lambda: gather(spark, seen))
        assert runner.await_idle(3_600.0), "the runner did not finish"
        wall = time.perf_counter() - started
        gather(spark, seen)
        progress = progress_of(seen)
    finally:
        runner.stop()
    if minutes:
        warmup = sum(1 for p in progress
                     if started_at(p) < began + warmup_minutes * 60)
    analyzed = check(app)
    plan = physical_plan(analyzed, input_layout(analyzed), clock=False)
    return {"app": name, **rates(progress, warmup, count, wall), "target": TARGETS.get(name),
            "plan": [c.describe() for c in plan.queries],
            "outputs": {o.stream: o.topic for o in runner.topics.outputs}}


def gather(spark: Any, seen: dict[int, Any]) -> Any | None:
    """Adds the active query's newest micro-batches to ``seen`` (by batch id: Spark keeps
    only its last 100 reports) and returns the newest one (None before the first)."""
    newest = None
    for query in spark.streams.active:
        newest = query.lastProgress  # one report parsed, not Spark's last 100
        if newest is None or newest.batchId in seen:
            continue
        missed = newest.batchId > 0 and newest.batchId - 1 not in seen
        for p in query.recentProgress if missed else [newest]:
            seen.setdefault(p.batchId, p)
    return newest


def progress_of(seen: dict[int, Any]) -> list[Any]:
    """The gathered micro-batches that read events, in order."""
    return [seen[b] for b in sorted(seen) if seen[b].numInputRows > 0]


def started_at(progress: Any) -> float:
    """When a micro-batch started (epoch seconds)."""
    return datetime.fromisoformat(progress.timestamp.replace("Z", "+00:00")).timestamp()


def keep_ahead(bus_url: str, topic: str, appended: int, batch_rows: int,
               newest: Any, until: float) -> int:
    """Appends events while the app runs, keeping ``BACKLOG`` micro-batches of them ahead of
    what it has read (``newest()``: its latest micro-batch), until ``until`` (epoch
    seconds); the number of events appended."""
    rng = np.random.default_rng(appended)
    with open_bus(bus_url) as bus:
        while time.time() < until:
            last = newest()
            read = read_to(last) if last is not None else 0
            if appended - read < BACKLOG * batch_rows:
                bus.append(topic, events(appended, CHUNK, rng))
                appended += CHUNK
            else:
                time.sleep(0.05)  # polling the app's progress, bounded by ``until``
    return appended


def read_to(progress: Any) -> int:
    """The events the app has read up to the end of a micro-batch: its sources' end
    positions (bus positions count events from 0)."""
    return sum(sum(positions) for source in progress.sources
               for positions in offsets(source.endOffset).values())


def topic_rows(bus_url: str, topic: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """Every row of ``topic`` (all partitions), as sorted tuples of ``columns``."""
    with open_bus(bus_url) as bus:
        tables = [bus.read_table(topic, p, 0, end)
                  for p, end in enumerate(bus.end_offsets(topic)) if end]
    rows = [tuple(t.column(c)[i].as_py() for c in columns)
            for t in tables for i in range(t.num_rows)]
    return sorted(rows)


def feed(bus_url: str, topic: str, start: int, count: int, rate: int,
         progress: Any) -> None:
    """Appends events ``start`` to ``count`` to ``topic`` at ``rate`` a second, a slice every
    100 ms on a fixed schedule (a late slice is not made up by a burst beyond the backlog),
    gathering the app's ``progress`` between slices."""
    rng = np.random.default_rng(start)
    step = max(1, rate // 10)
    began = time.perf_counter()
    with open_bus(bus_url) as bus:
        for n, first in enumerate(range(start, count, step)):
            delay = began + n * 0.1 - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            bus.append(topic, events(first, min(step, count - first), rng))
            progress()  # gathers the app's micro-batches while it runs


def append_events(bus: Bus, topics: str | list[str], count: int) -> None:
    """The benchmark's ``count`` events (the same ones every run) appended to ``topics``
    (an app's input streams, all of ``TempStream``'s schema): event ``i`` to topic ``i`` mod
    their number, so each gets an equal share in time order."""
    topics = [topics] if isinstance(topics, str) else topics
    rng = np.random.default_rng(16)
    for start in range(0, count, CHUNK):
        table = events(start, min(CHUNK, count - start), rng)
        if len(topics) == 1:
            bus.append(topics[0], table)
            continue
        share = np.arange(start, start + table.num_rows) % len(topics)
        for i, topic in enumerate(topics):
            bus.append(topic, table.filter(pa.array(share == i)))


def batch_events(progress: Any) -> int:
    """The events a micro-batch read: its source offsets' advance, summed over topics and
    partitions. Not ``numInputRows``: Spark counts every scan of the source, and a plan
    with several operators reads it once per operator (the seed app: three times)."""
    events = 0
    for source in progress.sources:
        end, start = offsets(source.endOffset), offsets(source.startOffset)
        for topic, positions in end.items():
            before = start.get(topic) or [0] * len(positions)
            events += sum(e - s for e, s in zip(positions, before))
    return events


def offsets(text: str | None) -> dict[str, list[int]]:
    """A source offset of a progress report (JSON, ``null`` or missing before the first)."""
    return (json.loads(text) if text else None) or {}


def rates(progress: list[Any], warmup: int, count: int, wall: float) -> dict[str, Any]:
    """Steady ev/s and micro-batch p50/p99 after ``warmup`` batches, and the whole run's."""
    steady = progress[warmup:] or progress
    rows = sum(batch_events(p) for p in steady)
    millis = [p.durationMs["triggerExecution"] for p in steady]
    return {"events": count, "batches": len(progress),
            "steady_ev_s": rows / (sum(millis) / 1000.0),
            "p50_ms": statistics.median(millis),
            "p99_ms": sorted(millis)[max(0, int(len(millis) * 0.99 + 0.5) - 1)],
            "whole_run_ev_s": count / wall, "phases_ms": phases(steady),
            "state": state_growth(steady)}


def state_growth(progress: list[Any]) -> str:
    """The stateful operators' rows and memory after the first and the last steady
    micro-batch (summed over operators): flat state means a window that forgets."""
    def size(p: Any) -> tuple[int, int]:
        return (sum(o.numRowsTotal for o in p.stateOperators),
                sum(o.memoryUsedBytes for o in p.stateOperators))
    if not progress or not progress[0].stateOperators:
        return "none"
    (rows0, bytes0), (rows1, bytes1) = size(progress[0]), size(progress[-1])
    return f"{rows0} keys {bytes0 / 2**20:.1f} MiB -> {rows1} keys {bytes1 / 2**20:.1f} MiB"


def phases(progress: list[Any]) -> str:
    """Where a steady micro-batch's time goes: Spark's ``durationMs`` parts (``addBatch``
    is the plan and the sink; ``walCommit``/``commitOffsets`` the checkpoint), means."""
    names = sorted({k for p in progress for k in p.durationMs} - {"triggerExecution"})
    means = {k: statistics.fmean(p.durationMs.get(k, 0) for p in progress) for k in names}
    return " ".join(f"{k}:{v:.0f}" for k, v in means.items() if v >= 1)


def run_handwritten_job(count: int, batch_rows: int, warmup: int, bus_url: str,
                        work: Path, kind: str) -> dict[str, Any]:
    """``filtered-window`` as the hand-written job ``kind`` of ``bench/handwritten.py``."""
    from handwritten import JOBS, run_handwritten

    progress, wall, output = run_handwritten(
        bus_url, work, batch_rows, lambda bus, topic: append_events(bus, topic, count),
        JOBS[kind])
    return {"app": f"filtered-window (hand-written: {kind})",
            **rates(progress, warmup, count, wall), "output": output}


def same_outputs(bus_url: str, eddy_topic: str, handwritten_topic: str) -> str:
    """Whether eddy's plan and the hand-written job emitted the same (ts, room, average)s."""
    columns = ["_ts", "roomNo", "avgTemp"]
    ours, theirs = (topic_rows(bus_url, t, columns) for t in (eddy_topic, handwritten_topic))
    close = len(ours) == len(theirs) and all(
        a[:2] == b[:2] and abs(a[2] - b[2]) <= 1e-9 * max(1.0, abs(a[2]))
        for a, b in zip(ours, theirs))
    return f"{'same' if close else 'DIFFERENT'} outputs ({len(ours):,} vs {len(theirs):,} rows)"


def show(result: dict[str, Any]) -> None:
    print(" | ".join(f"{k}={v:,.0f}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in result.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--events", type=int, default=600_000)
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--warmup", type=int, default=2, help="micro-batches left out")
    parser.add_argument("--bus", default="sqlite")
    parser.add_argument("--long", action="store_true",
                        help="the issue's variant: 10 minutes per app, the first 2 left out")
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="run each app this long, events arriving as it reads them")
    parser.add_argument("--warmup-minutes", type=float, default=0.0,
                        help="with --minutes: leave out the micro-batches of this warm-up")
    parser.add_argument("--rate", type=int, default=0,
                        help="events a second appended while the app runs (0: all before)")
    parser.add_argument("--handwritten", action="store_true",
                        help="also run filtered-window as a hand-written PySpark job")
    args = parser.parse_args()
    count = args.events
    minutes, warmup_minutes = (10.0, 2.0) if args.long else (args.minutes, args.warmup_minutes)
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if args.handwritten:
        from handwritten import jvm_job_conf

        get_spark(jvm_job_conf())  # the first session of the process: with the Java job
    with tempfile.TemporaryDirectory(prefix="eddy-app-bench-") as work:
        url = sqlite_url(Path(work) / "bus.db") if args.bus == "sqlite" else \
            f"{args.bus}?app=bench-{uuid.uuid4().hex[:8]}"
        outputs: dict[str, str] = {}
        for name in args.apps.split(","):
            result = run_app(name, count, args.batch_rows, args.warmup, url, Path(work),
                             args.rate, minutes, warmup_minutes)
            for line in result.pop("plan"):
                print("  ", line)
            outputs.update(result.pop("outputs"))
            show(result)
        for kind in ("PySpark", "Java", "bus in/out only") if args.handwritten else ():
            result = run_handwritten_job(count, args.batch_rows, args.warmup, url, Path(work),
                                         kind)
            output = result.pop("output")
            show(result)
            if "HotAvgStream" in outputs and kind != "bus in/out only":
                print("  ", same_outputs(url, outputs["HotAvgStream"], output))
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
