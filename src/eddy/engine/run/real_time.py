"""Real-time mode: a stateless group as one long-running Spark task.

A micro-batch costs ~300 ms on this machine however few events it holds (planning, the
Spark job, the offset and commit logs), and an event waits for the batch in flight and then
its own, so a filter's p99 latency cannot go below ~600 ms in micro-batches. Spark's
real-time mode (``trigger(realTime=…)``) runs a batch as long-lived tasks that process each
row as it arrives; the batch's duration only says how often progress is checkpointed. It
takes stateless plans only — which is what a group of native queries compiles to — and
sources and sinks written against Spark's Java connector API, so the group's Spark side is
eddy's JVM classes (:mod:`eddy.engine.spark.jvm_classes`) and the bus stays here, behind a
*bridge*:

* a loopback TCP server in the driver's process, one thread per connection, each
  connection introduced by a JSON line with a random token;
* ``read``: the group's one real-time task asks for the events of every partition of every
  input topic from given bus sequences on, and gets them as an Arrow IPC stream of the
  group's wide rows (each with its slot), polled from the bus every 2 ms, with an empty
  batch after 50 ms of silence so the reader never waits long past its batch's deadline;
* ``latest``: the bus's end offsets, for Spark's progress reports;
* ``write``: a task's output rows as tab-separated lines (``BridgeWriter.java``), appended
  to the output topics as they come (gathered for up to 5 ms: an append is a bus
  transaction); the task's ``END`` is answered ``OK`` only once all of them are on the bus,
  and Spark commits the batch only after every task's writer closed. Each flush of the
  writer also says how far its partition has got (every event before a sequence went
  through the plan), which the bridge reports on the bus as the group's *progress*
  (:func:`~eddy.io.lag.progress_consumer`): Spark commits the group's position only at the
  end of a batch, and sources measure the group's lag by it.

**Exactly once.** A batch that was not committed is run again after a crash from the same
start offsets: each task reads its partition from the same position and emits the same
rows in the same order, as a prefix of what it emits this time (the new run's end is
later) — within each (topic, partition) *slot* it reads; how the slots interleave depends
on timing. So an output row is identified by (batch, task, output topic, input slot, index
among the rows of that topic from that slot), and an append covers a run of indices of one
slot, its bus batch id being ``batch << 32 | first index`` under the producer
``<group>/<query id>/rt<task>.<slot>``. When the
bus answers an append with the ranges of an earlier one (a replay), those ranges say how
many rows the earlier run stored from that index on; they are skipped and the rest is
appended under its own index — so the rows land once even though the replay's appends are
cut elsewhere. (This lasts as long as the bus remembers the earlier appends: the sqlite
bus until retention trims them, NATS for its duplicate window.)
"""

from __future__ import annotations

import hmac
import io
import json
import logging
import re
import secrets
import socket
import socketserver
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from eddy.bus import Bus, open_bus
from eddy.engine.run.bus_sink import BusSink
from eddy.engine.spark.bus_source import GroupInput, Offsets, widen
from eddy.engine.spark.jvm_classes import (
    BRIDGE_PROVIDER,
    BRIDGE_WRITER,
    bridge_jar,
    unavailable_reason,
)
from eddy.engine.spark.row_layout import OUTPUT_SCHEMA
from eddy.io.lag import progress_consumer

log = logging.getLogger("eddy.engine.run.real_time")
POLL_S = 0.002
HEARTBEAT_S = 0.05
MAX_READ_ROWS = 50_000
GATHER_S = 0.005
PROGRESS_S = 0.05
GATHER_BYTES = 4 << 20
MAX_REQUEST_BYTES = 64 * 1024
SLOT = "_slot"
_POSITION = re.compile(rb"^POS\t([^\t\n]*)\t(\d+)\t(\d+)\n", re.MULTILINE)
_LINE_COLUMNS = [SLOT, *OUTPUT_SCHEMA.fieldNames()]  # the order BridgeWriter.java writes
_TEXT_TYPES = {SLOT: pa.int32(), "_seq": pa.int64(), "_order": pa.string(), "_ts": pa.int64(),
               "_query": pa.string(), "_target": pa.string(), "_expired": pa.string(),
               "_data": pa.string()}


class Bridge:
    """Serves a group's input partitions to its real-time tasks and stores their outputs;
    see the module docstring."""

    def __init__(self, bus_url: str, inputs: GroupInput, sink: BusSink, consumer: str,
                 start: Offsets) -> None:
        self.consumer = consumer
        self.start_offsets = {topic: list(positions) for topic, positions in start.items()}
        self._completed = {topic: list(positions) for topic, positions in start.items()}
        self.inputs = inputs
        self.sink = sink
        self.token = secrets.token_hex(16)
        self._stopped = threading.Event()
        self._bus: Bus = open_bus(bus_url)
        self._lock = threading.Lock()  # the sink's counters and callbacks
        bridge = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                bridge._handle(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="eddy-bridge", daemon=True)
        self._reporter = threading.Thread(target=self._report_progress,
                                          name="eddy-bridge-progress", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        self._reporter.start()

    def _report_progress(self) -> None:
        """Commits :meth:`completed` as the group's progress (:func:`progress_consumer`)
        whenever it moved: Spark commits the group's position only when it checkpoints,
        every few minutes, and a source measures the group's lag on the bus
        (:mod:`eddy.io.lag`)."""
        consumer = progress_consumer(self.consumer)
        reported: Offsets = {}
        while not self._stopped.wait(PROGRESS_S):
            completed = self.completed()
            try:
                for topic, positions in completed.items():
                    for p, position in enumerate(positions):
                        if reported.get(topic, [None] * len(positions))[p] != position:
                            self._bus.commit(consumer, topic, p, position)
                reported = completed
            except Exception:  # the next round tries again
                log.warning("bridge: could not report %s's progress", consumer, exc_info=True)

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():  # shutdown() waits for a serve loop that never ran
            self._server.shutdown()
        self._server.server_close()
        if self._reporter.is_alive():
            self._reporter.join()
        self._bus.close()

    # -- connections ---------------------------------------------------------------------

    def _handle(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request, rest = _request(sock)
        if request is None or not hmac.compare_digest(str(request.get("token", "")),
                                                      self.token):
            log.warning("bridge: refused a connection without the group's token")
            return
        try:
            if request["op"] == "read":
                start = {str(t): [int(p) for p in ps] for t, ps in request["start"].items()}
                if not start.keys() <= self._completed.keys():
                    raise ValueError(f"not the group's topics: {sorted(start)}")
                self._serve_read(sock, start)
            elif request["op"] == "latest":
                latest = {topic: self._bus.end_offsets(topic) for _, topic in self.inputs.topics}
                sock.sendall(json.dumps(latest).encode() + b"\n")
            elif request["op"] == "write":
                self._serve_write(sock, rest, int(request["partition"]), int(request["epoch"]))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the task ended (its batch's time was up, or it failed): Spark retries
        except Exception:
            if self._stopped.is_set():
                return  # the group is stopping: its bus is closing under the connection
            log.exception("bridge: %s request failed", request.get("op"))

    def _serve_read(self, sock: socket.socket, start: Mapping[str, list[int]]) -> None:
        """Streams every (topic, partition) *slot* of the group from ``start`` on, each row
        with its slot's index in a last column (``BridgeReader.java``)."""
        layout = self.inputs.layout
        schema = layout.arrow_schema()
        wire = schema.append(pa.field(SLOT, pa.int32(), False))
        streams = {topic: stream for stream, topic in self.inputs.topics}
        slots = [(topic, p, self.inputs.stream_index(streams[topic]))
                 for topic, positions in start.items() for p in range(len(positions))]
        positions = [position for seqs in start.values() for position in seqs]
        out = sock.makefile("wb", buffering=1 << 16)
        quiet_since = time.monotonic()
        with pa.ipc.new_stream(out, wire) as stream:
            while not self._stopped.is_set():
                ends = {topic: self._bus.end_offsets(topic) for topic in start}
                sent = False
                for slot, (topic, p, index) in enumerate(slots):
                    if ends[topic][p] <= positions[slot]:
                        continue
                    events = self._bus.read_table(topic, p, positions[slot],
                                                  min(ends[topic][p],
                                                      positions[slot] + MAX_READ_ROWS))
                    rows = widen(events, layout, index, schema)
                    stream.write_table(rows.append_column(
                        wire.field(SLOT), pa.array(np.full(rows.num_rows, slot, np.int32))))
                    positions[slot] += events.num_rows
                    sent = True
                now = time.monotonic()
                if sent or now - quiet_since >= HEARTBEAT_S:
                    if not sent:
                        stream.write_batch(pa.RecordBatch.from_pylist([], schema=wire))
                    out.flush()
                    quiet_since = now
                else:
                    time.sleep(POLL_S)

    def _serve_write(self, sock: socket.socket, pending: bytes, task: int, epoch: int) -> None:
        """Stores a task's rows in appends of up to :data:`GATHER_S` worth of them: each
        append is a bus transaction, and one per millisecond would cost more than the
        rows."""
        appender = TaskAppender(self._bus, f"{self.sink.producer}/rt{task}", epoch)
        buffer, gathered, since, finished = bytearray(pending), bytearray(), 0.0, False
        while not finished:
            # (a zero timeout would make the socket non-blocking, not time out at once)
            sock.settimeout(max(0.0005, since + GATHER_S - time.monotonic()) if gathered
                            else None)
            try:
                data: bytes | None = sock.recv(1 << 20)
            except (TimeoutError, BlockingIOError):
                data = None
            if data == b"":
                return  # the task failed: its batch runs again, and appends deduplicate
            if data:
                buffer += data
                cut = buffer.rfind(b"\n") + 1
                if cut:
                    since = since if gathered else time.monotonic()
                    gathered += buffer[:cut]
                    del buffer[:cut]
                    if gathered == b"END\n" or gathered.endswith(b"\nEND\n"):
                        del gathered[-4:]
                        finished = True
            if gathered and (finished or data is None or len(gathered) >= GATHER_BYTES
                             or time.monotonic() - since >= GATHER_S):
                self._take(appender, epoch, bytes(gathered))
                gathered.clear()
        with self._lock:
            self.sink.stats.batches += 1
            self.sink.stats.last_batch_id = epoch
        sock.settimeout(None)
        sock.sendall(b"OK\n")

    def _take(self, appender: TaskAppender, epoch: int, lines: bytes) -> None:
        """Stores rows and notes the positions reported among them."""
        positions = _POSITION.findall(lines)
        if positions:
            lines = _POSITION.sub(b"", lines)
        if lines:
            self._store(appender, epoch, lines)
        with self._lock:
            for topic, partition, seq in positions:
                done = self._completed[topic.decode()]
                done[int(partition)] = max(done[int(partition)], int(seq))

    def completed(self) -> Offsets:
        """How far the group has processed its inputs with every output on the bus: each
        task reports its position with its rows (``BridgeWriter.java``)."""
        with self._lock:
            return {topic: list(positions) for topic, positions in self._completed.items()}

    def _store(self, appender: TaskAppender, epoch: int, lines: bytes) -> None:
        """Appends rows by input slot: within one slot a replay emits the same rows in the
        same order, across slots the interleaving depends on timing."""
        rows = parse_rows(lines)
        slot_of = rows.column(SLOT)
        slots = [int(slot) for slot in pc.unique(slot_of).to_pylist() if slot is not None]
        for slot in slots:
            mine = rows if len(slots) == 1 \
                else rows.filter(pc.equal(slot_of, pa.scalar(slot, pa.int32())))
            tables = self.sink.tables(mine)
            for stream in sorted(tables):
                appender.append(self.sink.outputs[stream].topic, slot, tables[stream])
            with self._lock:
                self.sink.count(mine, tables)
                if self.sink.on_output is not None and tables:
                    self.sink.on_output(epoch, tables)


class TaskAppender:
    """Appends one task attempt's rows so that a replay of the batch stores each row once
    (module docstring, "Exactly once"), counting the rows of each (output topic, input
    slot) apart."""

    def __init__(self, bus: Bus, producer: str, epoch: int) -> None:
        self.bus, self.producer, self.epoch = bus, producer, epoch
        self._next: dict[tuple[str, int], int] = {}
        self._stored: dict[tuple[str, int], int] = {}  # rows known on the bus from 0 on

    def append(self, topic: str, slot: int, table: pa.Table) -> None:
        key = (topic, slot)
        index = self._next.get(key, 0)
        self._next[key] = index + table.num_rows
        skip = min(table.num_rows, max(0, self._stored.get(key, 0) - index))
        table, index = table.slice(skip), index + skip
        while table.num_rows:
            ranges = self.bus.append(topic, table, producer=f"{self.producer}.{slot}",
                                     batch_id=(self.epoch << 32) | index)
            stored = sum(r.events for r in ranges)
            self._stored[key] = max(self._stored.get(key, 0), index + stored)
            if stored >= table.num_rows:
                return
            table, index = table.slice(stored), index + stored


def parse_rows(lines: bytes) -> pa.Table:
    """``BridgeWriter``'s tab-separated lines as output rows (:data:`OUTPUT_SCHEMA`), each
    after the input slot it came from (:data:`SLOT`)."""
    text = pa_csv.read_csv(
        io.BytesIO(lines),
        read_options=pa_csv.ReadOptions(column_names=_LINE_COLUMNS),
        parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False,
                                          escape_char=False),
        convert_options=pa_csv.ConvertOptions(column_types=_TEXT_TYPES,
                                              null_values=["\\N"],
                                              strings_can_be_null=True))
    order = pc.cast(pc.split_pattern(text.column("_order").combine_chunks(), pattern=","),
                    pa.list_(pa.int32()))
    expired = pc.equal(text.column("_expired"), pa.scalar("1"))
    return text.set_column(2, "_order", order).set_column(6, "_expired", expired)


def _request(sock: socket.socket) -> tuple[dict[str, Any] | None, bytes]:
    """The connection's first line as JSON, and what came after it."""
    received = b""
    while b"\n" not in received:
        data = sock.recv(4096)
        if not data or len(received) > MAX_REQUEST_BYTES:
            return None, b""
        received += data
    line, rest = received.split(b"\n", 1)
    try:
        request = json.loads(line)
    except ValueError:
        return None, b""
    return (request if isinstance(request, dict) else None), rest


# -- starting a group in real-time mode ----------------------------------------------------


def real_time_refusal(spark: SparkSession) -> str | None:
    """Why this session cannot run real-time queries, or None when it can."""
    reason = unavailable_reason()
    if reason is not None:
        return reason
    jar = str(bridge_jar())
    if jar not in spark.sparkContext.getConf().get("spark.driver.extraClassPath", ""):
        return "the Spark session was started without eddy's JVM classes"
    return None


class TaskSlots:
    """The session's task slots held by real-time queries. Each holds one for as long as it
    runs (one task reads all of a group's input), so they may take all but one slot: the
    session's micro-batch queries still get one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held = 0

    def reserve(self, spark: SparkSession) -> bool:
        with self._lock:
            if self.held + 1 >= spark.sparkContext.defaultParallelism:
                return False
            self.held += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.held = max(0, self.held - 1)


TASK_SLOTS = TaskSlots()


def bridge_source(spark: SparkSession, bridge: Bridge) -> DataFrame:
    """The group's input rows, read by real-time tasks from ``bridge``."""
    schema = bridge.inputs.layout.spark_schema()
    return (spark.readStream.format(BRIDGE_PROVIDER).schema(schema)
            .options(port=str(bridge.port), token=bridge.token, schema=schema.json(),
                     start=json.dumps(bridge.start_offsets)).load())


def start_real_time(outputs: DataFrame, bridge: Bridge, *, checkpoint: str, name: str,
                    batch_duration: str) -> StreamingQuery:
    """Starts ``outputs`` (the group's compiled plan over :func:`bridge_source`) as a
    real-time query whose rows go to ``bridge``. PySpark's writer has no ``foreach`` for a
    JVM writer, so the query is started through the JVM's own ``DataStreamWriter``."""
    spark = outputs.sparkSession
    outputs = outputs.select(*OUTPUT_SCHEMA.fieldNames())  # the order BridgeWriter reads
    jvm: Any = spark.sparkContext._jvm
    writer_class = jvm
    for name in BRIDGE_WRITER.split("."):
        writer_class = getattr(writer_class, name)
    writer = writer_class("127.0.0.1", bridge.port, bridge.token)
    trigger = jvm.org.apache.spark.sql.streaming.Trigger.RealTime(batch_duration)
    jquery = (outputs._jdf.writeStream().foreach(writer).outputMode("update")
              .trigger(trigger).option("checkpointLocation", checkpoint)
              .queryName(name).start())
    return StreamingQuery(jquery)

