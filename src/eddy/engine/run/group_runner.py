"""Running one execution group continuously: bus topics in, Spark query, bus topics out.

:class:`GroupRunner` is what a worker deploys per execution group instance (DESIGN.md §2,
§4): an app without ``@dist``, or one child app of a ``@dist`` app
(:mod:`eddy.engine.run.app_groups` runs an app as its groups). It creates a topic for every
input and output stream of the group — a child's ``@bus`` streams are its parent's topics,
of which a parallel instance keeps its share (:mod:`eddy.plan.bus_binding`) —
reads the input topics through :mod:`eddy.engine.spark.bus_source`, compiles the group with
:func:`~eddy.engine.compile.group_query.compile_group` and appends the outputs to their topics
through :mod:`eddy.engine.run.bus_sink` — one Spark streaming query with a processing-time
trigger and a checkpoint under ``checkpoint_dir``.

A runner stopped (or crashed) and started again on the same checkpoint resumes exactly:
Spark replays a batch it had not committed with the same offsets, the source gives its
events the same ``_seq``, the state store gives back the state before the batch, and the
bus drops the outputs of the batch that were already appended. A copy of an earlier
checkpoint (a revision) becomes the live one through :meth:`GroupRunner.prepare_restore`.

The group's consumer position on the bus moves as soon as a batch completes (a listener of
the query's progress commits the batch's end), not only when Spark plans the next batch: an
idle group would otherwise look a batch behind for as long as no event arrives, and a
source that refuses events while the app lags (the HTTP source's 503) would never see it
catch up.

A group with tables, named windows or aggregations also reads a store-query topic, through
which :meth:`GroupRunner.store_query` runs on-demand queries against its live state
(:mod:`eddy.engine.run.store_requests`).

Which streams are topics: an *input* is a defined stream that no query of the group
inserts into (events reach it from outside: a source, another group); an *output* is every
stream a query inserts into. A stream that is both (inserted into here and also fed from
outside) is treated as an output only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.engine.compile.group_query import compile_group, stateless_group
from eddy.engine.run.bus_sink import BatchHook, BusSink, OutputCallback, OutputStream, SinkStats
from eddy.engine.run.group_metrics import GroupMetrics
from eddy.engine.run.heartbeat import Heartbeat, needs_heartbeat, tick_topic_spec
from eddy.engine.run.real_time import (
    TASK_SLOTS,
    Bridge,
    bridge_source,
    real_time_refusal,
    start_real_time,
)
from eddy.engine.run.store_requests import Records, StoreRequests
from eddy.engine.spark.bus_source import (
    GroupInput,
    Offsets,
    Selection,
    initial_positions,
    read_group_input,
    selected,
)
from eddy.engine.spark.row_layout import STORE_STREAM, TICK_STREAM, InputLayout, input_layout
from eddy.engine.spark.session import get_spark
from eddy.lang import AnalyzedApp, check
from eddy.lang.on_demand import check_on_demand
from eddy.plan.bus_binding import BusBinding, bus_bindings, topic_of

log = logging.getLogger("eddy.engine.run.group_runner")
_POLL_S = 0.05
REAL_TIME_CHECKPOINT = "spark-rt"
"""The checkpoint of the group's real-time query, apart from its micro-batch query's: the
two run different sources, and switching between them resumes from the bus positions."""
MIN_BATCH_MS = "spark.sql.streaming.realTimeMode.minBatchDuration"
SPARK_MIN_BATCH_MS = 5000
STORE_QUERY_TIMEOUT_S = 60.0
LOG_FIRST_PROGRESS = 3
"""Batches after a start whose progress is logged with the time since the start (where a
restart, e.g. an HA takeover, spends its time)."""
# The sink's counters per checkpoint, so a group's figures grow across the restarts of its
# query in this process (a backup or restore restarts it) instead of falling back to zero.
_stats: dict[Path, SinkStats] = {}


@dataclass(frozen=True)
class GroupTopics:
    """The streams of a group that are bus topics, and where each query's events go."""

    inputs: tuple[str, ...]
    outputs: tuple[OutputStream, ...]
    queries: dict[str, str] = field(hash=False)  # query id → output stream
    store: str | None = None
    """The topic of on-demand queries, when the group has stores to query."""

    bindings: dict[str, BusBinding] = field(default_factory=dict, hash=False)
    """The ``@bus`` bindings of a child app's streams (:mod:`eddy.plan.bus_binding`)."""

    @classmethod
    def of(cls, analyzed: AnalyzedApp, *, prefix: str = "") -> GroupTopics:
        """The topics of ``analyzed`` run as one group: a stream's ``@bus`` topic (a child
        app's crossing streams), else ``prefix`` + stream name."""
        bindings = bus_bindings(analyzed.app)
        queries = {q.id: q.target for q in analyzed.queries
                   if q.target_kind == "stream" and q.target is not None}
        targets = set(queries.values())
        inputs = tuple(name for name, info in analyzed.streams.items()
                       if info.kind == "stream" and not info.implicit and name not in targets)
        outputs = tuple(OutputStream(name, topic_of(bindings, prefix, name),
                                     analyzed.streams[name].attributes)
                        for name in analyzed.streams if name in targets)
        stores = any(info.kind in ("table", "window", "aggregation")
                     for info in analyzed.streams.values())
        return cls(inputs, outputs, queries, prefix + STORE_STREAM if stores else None,
                   bindings)

    def input(self, layout: InputLayout, topics: list[tuple[str, str]]) -> GroupInput:
        """What the group's source reads: ``topics`` and the parts of them it keeps."""
        selections = tuple(Selection(b.topic, b.strategy, b.key, b.partitions, b.read)
                           for s, b in self.bindings.items() if s in self.inputs and b.selects)
        return GroupInput(layout, tuple(topics), selections)


@dataclass(frozen=True)
class RunnerStatus:
    """A snapshot of a runner: its state, the last completed batch, what it wrote."""

    state: Literal["created", "running", "stopped", "failed"]
    query_id: str | None
    last_batch_id: int | None
    input_offsets: Offsets | None
    """End offsets (per input topic and partition) of the last completed micro-batch."""
    events_out: dict[str, int]
    """Events appended per output stream since a runner first started on this checkpoint
    in this process."""
    query_events: dict[str, int] = field(default_factory=dict)
    """Rows each query emitted (into streams, tables, …), counted as ``events_out``."""
    failed_queries: int = 0
    """On-demand queries that failed while running, counted as ``events_out``."""
    busy: bool = False
    """Whether a micro-batch with new data is being run right now."""
    error: str | None = None
    mode: Literal["micro-batch", "real-time"] = "micro-batch"


class GroupRunner:
    """Runs ``app_text`` as one execution group between bus topics; see the module docstring.

    ``trigger_interval`` is Spark's processing-time trigger ("0 seconds": a new micro-batch as
    soon as the last one ends and data is waiting). ``max_rows_per_batch`` bounds a batch
    (0 = everything available). ``on_output`` is called in the driver after each batch's
    outputs are on the bus (at-least-once: a replayed batch is reported again).
    ``heartbeat=False`` keeps the wall clock out (:mod:`eddy.engine.run.heartbeat`): timers then
    move only with the events' own timestamps, as when recorded events are fed whose times
    are event time although the app is not ``@app:playback``.
    """

    def __init__(self, app_text: str, bus_url: str, checkpoint_dir: str | Path, *,
                 group: str = "main", spark: SparkSession | None = None,
                 trigger_interval: str = "0 seconds", max_rows_per_batch: int = 0,
                 topic_partitions: int = 1, topic_prefix: str = "",
                 on_output: OutputCallback | None = None, filename: str | None = None,
                 heartbeat: bool = True, real_time_batch_ms: int | None = None,
                 before_write: BatchHook | None = None) -> None:
        self.app_text = app_text
        self.analyzed = check(app_text, filename)
        self.bus_url = bus_url
        self.checkpoint_dir = Path(checkpoint_dir)
        self.group = group
        self.trigger_interval = trigger_interval
        self.max_rows_per_batch = max_rows_per_batch
        self.topic_partitions = topic_partitions
        self.topics = GroupTopics.of(self.analyzed, prefix=topic_prefix)
        self.topic_prefix = topic_prefix
        self.on_output = on_output
        self.before_write = before_write
        self._spark = spark
        self._bus: Bus | None = None
        self._query: StreamingQuery | None = None
        self._positions: _CommitPositions | None = None
        self._sink: BusSink | None = None
        self._requests = StoreRequests()
        self._layout = input_layout(self.analyzed)
        self.tick_topic = topic_prefix + TICK_STREAM \
            if heartbeat and needs_heartbeat(self.analyzed, self._layout) else None
        """The topic of the group's wall-clock heartbeat (:mod:`eddy.engine.run.heartbeat`),
        None when the group has no timers to fire without input."""
        self._heartbeat: Heartbeat | None = None
        self.real_time_batch_ms = real_time_batch_ms
        self._bridge: Bridge | None = None
        self._passing = False  # a passthrough group is started (it has no query)
        self._planned: DataFrame | None = None  # the micro-batch query's plan, see plan()
        self._metrics = GroupMetrics(self.analyzed,
                                     {s: self.input_topic(s) for s in self.topics.inputs})

    @property
    def passthrough(self) -> bool:
        """Whether the group computes nothing: a receiver child app whose sources write
        straight into their streams' topics. It runs no query; starting it creates the
        topics."""
        return not self.analyzed.queries and not any(
            i.kind == "aggregation" for i in self.analyzed.streams.values())

    @property
    def name(self) -> str:
        """``<app>/<group>``: the bus consumer of the group's inputs and its producer prefix."""
        return f"{self.analyzed.name}/{self.group}"

    def input_topic(self, stream: str) -> str:
        """The topic holding input stream ``stream``."""
        if stream not in self.topics.inputs:
            raise KeyError(f"'{stream}' is not an input stream of the group "
                           f"(inputs: {', '.join(self.topics.inputs)})")
        return topic_of(self.topics.bindings, self.topic_prefix, stream)

    def output_topic(self, stream: str) -> str:
        """The topic output stream ``stream`` is written to."""
        for output in self.topics.outputs:
            if output.stream == stream:
                return output.topic
        raise KeyError(f"'{stream}' is not an output stream of the group")

    # -- lifecycle -----------------------------------------------------------------------

    def create_topics(self, bus: Bus) -> None:
        """Creates the group's topics on ``bus`` (creating an existing one does nothing)."""
        for stream in self.topics.inputs:
            bus.create_topic(TopicSpec(self.input_topic(stream),
                                       self.analyzed.streams[stream].attributes,
                                       partitions=self.topic_partitions))
        for output in self.topics.outputs:
            bus.create_topic(TopicSpec(output.topic, output.attributes,
                                       partitions=self.topic_partitions))
        if self.topics.store is not None:  # one partition: queries run in the order sent
            bus.create_topic(TopicSpec(self.topics.store,
                                       self._layout.attributes(STORE_STREAM)))
        if self.tick_topic is not None:
            bus.create_topic(tick_topic_spec(self.tick_topic))

    def start(self) -> None:
        """Creates the topics and starts the streaming query (resuming its checkpoint)."""
        if self._query is not None and self._query.isActive:
            raise RuntimeError(f"group {self.name} is already running")
        began = time.monotonic()
        self._claim_checkpoint()
        self._bus = self._bus or open_bus(self.bus_url)
        self.create_topics(self._bus)
        topics_ready = time.monotonic()
        if self.passthrough:
            self._passing = True
            return
        spark = self._spark or get_spark()
        inputs = self._inputs()
        self._sink = BusSink(self._bus, self.topics.outputs, self.topics.queries, self.name,
                             on_output=self.on_output, on_answers=self._requests.resolve,
                             before_write=self.before_write,
                             stats=_stats.setdefault(self.checkpoint_dir.resolve(),
                                                     SinkStats()))
        self._query = None
        if self.real_time_batch_ms is not None:
            self._query = self._try_real_time(spark, inputs, self.real_time_batch_ms)
        if self._query is None:
            outputs = self._planned if self._planned is not None else self._plan(spark)
            self._planned = None  # used once: a later start plans afresh
            planned = time.monotonic()
            self._query = (outputs.writeStream.foreachBatch(self._sink)
                           .trigger(processingTime=self.trigger_interval)
                           .option("checkpointLocation", str(self.checkpoint_dir / "spark"))
                           .queryName(f"eddy:{self.name}").start())
            log.info("group %s: query started in %.2f s (bus topics %.2f s, plan %.2f s, "
                     "Spark start %.2f s)", self.name, time.monotonic() - began,
                     topics_ready - began, planned - topics_ready, time.monotonic() - planned)
        self._sink.bind(str(self._query.id))
        self._positions = _CommitPositions(self.bus_url, self.name, str(self._query.id),
                                           started=began)
        spark.streams.addListener(self._positions)
        if self.tick_topic is not None:
            self._heartbeat = Heartbeat(self._bus, self.tick_topic,
                                        [self.input_topic(s) for s in self.topics.inputs])
            self._heartbeat.start()

    def plan(self) -> None:
        """Builds the group's micro-batch query (its source over the bus and the compiled
        operators) ahead of :meth:`start`, which then only starts it: Spark instantiates the
        Python data source in a worker of its own, a good part of a start (an HA passive
        plans its apps so, and its takeover starts sooner). The plan holds no position and
        no state: the query resumes from the checkpoint as it is when it starts, and a plan
        may be started again after a stop."""
        if self.passthrough or self.real_time_batch_ms is not None:
            return  # nothing to plan / a real-time query plans its own source
        self._planned = self._plan(self._spark or get_spark())

    def _inputs(self) -> GroupInput:
        topics = [(s, self.input_topic(s)) for s in self.topics.inputs]
        if self.topics.store is not None:
            topics.append((STORE_STREAM, self.topics.store))
        if self.tick_topic is not None:
            topics.append((TICK_STREAM, self.tick_topic))
        return self.topics.input(self._layout, topics)

    def _plan(self, spark: SparkSession) -> DataFrame:
        inputs = self._inputs()
        source = selected(read_group_input(spark, self.bus_url, inputs, self.name,
                                           max_rows_per_batch=self.max_rows_per_batch),
                          inputs)
        return compile_group(self.app_text, source, self._layout)

    def real_time_refusal(self, spark: SparkSession) -> str | None:
        """Why the group cannot run in real-time mode (:mod:`eddy.engine.run.real_time`), or None
        when it can: only groups whose queries are all stateless do."""
        if any(b.selects for s, b in self.topics.bindings.items() if s in self.topics.inputs):
            return "it reads a share of a topic (a parallel child app)"
        if self.tick_topic is not None or self.topics.store is not None \
                or not stateless_group(self.analyzed, self._layout):
            return "it has stateful queries (windows, patterns, joins, tables, aggregations)"
        return real_time_refusal(spark)

    def _try_real_time(self, spark: SparkSession, inputs: GroupInput,
                       batch_ms: int) -> StreamingQuery | None:
        """Starts the group in real-time mode, or says in the log why it runs in
        micro-batches instead and returns None."""
        assert self._bus is not None and self._sink is not None
        refusal = self.real_time_refusal(spark)
        if refusal is None and not TASK_SLOTS.reserve(spark):
            refusal = ("its long-running task would take the session's last task slot, "
                       "which its other queries need (raise the slots with spark.master "
                       "local[N])")
        if refusal is not None:
            log.info("group %s runs in micro-batches, not in real time: %s", self.name, refusal)
            return None
        if batch_ms < SPARK_MIN_BATCH_MS:  # Spark's lower bound guards production, no more
            spark.conf.set(MIN_BATCH_MS, f"{batch_ms}ms")
        self._bridge = Bridge(self.bus_url, inputs, self._sink, self.name,
                              initial_positions(self._bus, inputs, self.name))
        try:
            self._bridge.start()
            source = bridge_source(spark, self._bridge)
            outputs = compile_group(self.app_text, source, self._layout)
            query = start_real_time(outputs, self._bridge,
                                    checkpoint=str(self.checkpoint_dir / REAL_TIME_CHECKPOINT),
                                    name=f"eddy:{self.name}",
                                    batch_duration=f"{batch_ms} milliseconds")
        except BaseException:
            self._bridge.stop()
            self._bridge = None
            TASK_SLOTS.release()
            raise
        log.info("group %s runs in real-time mode, checkpointing every %.1f s", self.name,
                 batch_ms / 1000)
        return query

    def _claim_checkpoint(self) -> None:
        """Refuses a checkpoint written for another app or group: its offsets and state
        would be silently misread."""
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        marker = self.checkpoint_dir / "group.json"
        mine = {"group": self.name,
                "app_sha256": hashlib.sha256(self.app_text.encode()).hexdigest()}
        if marker.exists():
            theirs = json.loads(marker.read_text())
            if theirs != mine:
                raise ValueError(f"checkpoint {self.checkpoint_dir} belongs to group "
                                 f"{theirs.get('group')} with another app text; use a new "
                                 f"checkpoint directory for a changed app")
        else:
            marker.write_text(json.dumps(mine))

    def stop(self) -> None:
        """Stops the query (a batch in flight is abandoned and replayed on the next start)
        and releases the bus."""
        self._passing = False
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if self._positions is not None:  # first: no progress reaches a closing listener
            (self._spark or get_spark()).streams.removeListener(self._positions)
            self._positions.close()
            self._positions = None
        if self._query is not None:
            self._query.stop()
        if self._bridge is not None:
            self._bridge.stop()
            self._bridge = None
            TASK_SLOTS.release()
        if self._bus is not None:
            self._bus.close()
            self._bus = None

    @staticmethod
    def prepare_restore(checkpoint_dir: str | Path) -> None:
        """Readies a copy of an earlier checkpoint of a group (a revision) to become its live
        checkpoint, before the runner starts on it.

        The bus sink deduplicates outputs by (Spark query id, batch id). After a restore,
        Spark plans new batches from the revision's offsets with batch ids the abandoned run
        already used, for other events; under the old id the bus would drop their outputs
        as duplicates. So the restored checkpoint gets a new query id: Spark keeps it in
        ``spark/metadata`` (JSON with ``id``), which exists whenever the offset log does.
        """
        for spark_dir in ("spark", REAL_TIME_CHECKPOINT):
            path = Path(checkpoint_dir) / spark_dir / "metadata"
            if path.is_file():
                metadata = json.loads(path.read_text(encoding="utf-8"))
                metadata["id"] = str(uuid.uuid4())
                path.write_text(json.dumps(metadata), encoding="utf-8")
                # Hadoop's checksum of the old text would fail the read (a missing one is fine)
                path.with_name(f".{path.name}.crc").unlink(missing_ok=True)

    # -- on-demand queries ---------------------------------------------------------------

    def store_query(self, text: str, timeout: float = STORE_QUERY_TIMEOUT_S) -> Records:
        """Runs an on-demand query against the group's live state; returns its records.

        Raises :class:`~eddy.lang.errors.SiddhiAppError` (positions in ``text``) for a faulty
        query, :class:`~eddy.engine.run.store_requests.StoreQueryFailed` when it fails while
        running, TimeoutError without an answer in ``timeout`` s, RuntimeError when the
        group is not running.
        """
        check_on_demand(self.analyzed, text)
        if self._query is None or self._bus is None:
            raise RuntimeError(f"group {self.name} is not running")
        self._raise_if_failed()
        if self.topics.store is None:  # check_on_demand finds no store to query first
            raise RuntimeError(f"group {self.name} has no tables, windows or aggregations")
        return self._requests.ask(self._bus, self.topics.store, text, timeout,
                                  self._raise_if_failed)

    def __enter__(self) -> GroupRunner:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- observing -----------------------------------------------------------------------

    def await_idle(self, timeout: float) -> bool:
        """Waits until every event on the input topics now has been processed and its
        outputs written; False on timeout. Raises if the query failed."""
        if self._passing:
            return True
        if self._query is None or self._bus is None:
            raise RuntimeError(f"group {self.name} is not running")
        bus = self._bus
        target = {self.input_topic(s): bus.end_offsets(self.input_topic(s))
                  for s in self.topics.inputs}
        if not target:
            self._raise_if_failed()
            return True
        deadline = time.monotonic() + timeout
        while True:
            self._raise_if_failed()
            done = self._completed_offsets()
            if done is not None and all(
                    all(d >= t for d, t in zip(done.get(topic, []), ends))
                    and len(done.get(topic, [])) == len(ends)
                    for topic, ends in target.items()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)

    def await_started(self, timeout: float) -> None:
        """Waits (at most ``timeout`` s) until the query has initialised its source — started
        its Python source worker, which Spark allows only 10 s to connect back — so that
        an app's groups start their workers one after another, not all at once."""
        began = time.monotonic()
        deadline = began + timeout
        while self._query is not None and self._query.isActive and \
                self._query.lastProgress is None and time.monotonic() < deadline and \
                "Initializing" in str(self._query.status.get("message", "")):
            time.sleep(_POLL_S)
        log.info("group %s: source initialised after %.2f s more", self.name,
                 time.monotonic() - began)

    def _raise_if_failed(self) -> None:
        assert self._query is not None
        active = self._query.isActive  # first: a query that failed is inactive once its
        error = self._query.exception()  # error is set, so an inactive one shows it here
        if error is not None:
            raise RuntimeError(f"group {self.name} failed: {error}")
        if not active:
            raise RuntimeError(f"group {self.name} was stopped")

    def _completed_offsets(self) -> Offsets | None:
        if self._bridge is not None:  # real time: batches end only every few minutes
            return self._bridge.completed()
        progress: Any = self._query.lastProgress if self._query is not None else None
        if not progress or not progress["sources"]:
            return None
        end = progress["sources"][0]["endOffset"]
        offsets: Offsets = json.loads(end) if isinstance(end, str) else dict(end or {})
        offsets.pop(self.tick_topic or "", None)  # heartbeats are not events of the app
        return offsets

    def status(self) -> RunnerStatus:
        """Where the group stands now."""
        query, sink = self._query, self._sink
        if self._passing:
            return RunnerStatus("running", None, None, None, {})
        if query is None:
            return RunnerStatus("created", None, None, None, {})
        error = query.exception()
        state: Literal["running", "stopped", "failed"] = (
            "failed" if error is not None else "running" if query.isActive else "stopped")
        return RunnerStatus(
            state, str(query.id), sink.stats.last_batch_id if sink else None,
            self._completed_offsets(), dict(sink.stats.events) if sink else {},
            dict(sink.stats.query_events) if sink else {},
            sink.stats.failed_queries if sink else 0,
            busy=bool(query.isActive and query.status["isTriggerActive"]
                      and query.status["isDataAvailable"]),
            error=None if error is None else str(error), mode=self.mode)

    @property
    def mode(self) -> Literal["micro-batch", "real-time"]:
        """How the group's query runs now (:mod:`eddy.engine.run.real_time`)."""
        return "real-time" if self._bridge is not None else "micro-batch"

    def metrics(self) -> dict[str, float]:
        """The group's figures now, per app and per query (:mod:`.group_metrics`)."""
        status = self.status()
        # A real-time batch is a checkpoint interval, not a latency: no batch figures.
        progress: list[Any] = list(self._query.recentProgress) \
            if self._query is not None and self._bridge is None else []
        offsets = status.input_offsets or self._committed_offsets()
        return self._metrics.read(offsets, status.events_out, status.query_events, progress,
                                  status.failed_queries)

    def _committed_offsets(self) -> Offsets | None:
        """The group's positions on its input topics as last committed on the bus (what a
        restarted query resumes from, until its first batch completes)."""
        bus = self._bus
        if bus is None:
            return None
        offsets: Offsets = {}
        for stream in self.topics.inputs:
            topic = self.input_topic(stream)
            offsets[topic] = [bus.committed(self.name, topic, p) or 0
                              for p in range(len(bus.end_offsets(topic)))]
        return offsets


class _CommitPositions(StreamingQueryListener):
    """Commits the end of each completed batch of one query as its group's consumer
    position (see the module docstring). Spark's own commit of that position, when it plans
    the next batch, writes the same numbers. Runs on Spark's listener thread with a bus of
    its own, opened on the first progress."""

    def __init__(self, bus_url: str, consumer: str, query_id: str,
                 started: float | None = None) -> None:
        self.bus_url, self.consumer, self.query_id = bus_url, consumer, query_id
        self._started = time.monotonic() if started is None else started
        self._logged = 0
        self._bus: Bus | None = None
        self._lock = threading.Lock()
        self._closed = False

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if str(progress.id) != self.query_id or not progress.sources:
            return
        if self._logged < LOG_FIRST_PROGRESS:
            self._logged += 1
            log.info("%s: batch %s (%d rows) done %.2f s after the start; its steps in ms: %s",
                     self.consumer, progress.batchId, progress.numInputRows,
                     time.monotonic() - self._started, dict(progress.durationMs))
        end = progress.sources[0].endOffset
        offsets: Offsets = json.loads(end) if isinstance(end, str) else dict(end or {})
        with self._lock:
            if self._closed or not offsets:
                return
            try:
                self._bus = self._bus or open_bus(self.bus_url)
                for topic, positions in offsets.items():
                    for p, position in enumerate(positions):
                        self._bus.commit(self.consumer, topic, p, position)
            except Exception:  # the next batch's commit (by Spark) writes the same
                log.warning("could not commit %s's position", self.consumer, exc_info=True)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._bus is not None:
                self._bus.close()
                self._bus = None


def output_events(bus: Bus, topic: str) -> list[dict[str, Any]]:
    """Every retained event of ``topic``, partition by partition, as ``{"timestamp", "data"}``
    (for tests and tools)."""
    events: list[dict[str, Any]] = []
    starts, ends = bus.start_offsets(topic), bus.end_offsets(topic)
    names = [a.name for a in bus.topic(topic).attributes]
    for p, (start, end) in enumerate(zip(starts, ends)):
        table = bus.read_table(topic, p, start, end)
        columns: Mapping[str, list[Any]] = table.to_pydict()
        for i in range(table.num_rows):
            events.append({"timestamp": columns["_ts"][i],
                           "data": [columns[n][i] for n in names]})
    return events
