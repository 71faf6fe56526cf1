"""Running one execution group continuously: bus topics in, Spark query, bus topics out.

:class:`GroupRunner` is what a worker deploys per execution group instance (DESIGN.md §2,
§4): an app without ``@dist``, or one child app of a ``@dist`` app
(:mod:`eddy.engine.run.app_groups` runs an app as its groups). It creates a topic for every
input and output stream of the group (:mod:`.group_topics`), reads the input topics through
:mod:`eddy.engine.spark.bus_source`, compiles the group with
:func:`~eddy.engine.compile.group_query.compile_group` and appends the outputs to their
topics through :mod:`eddy.engine.run.bus_sink` — one Spark streaming query with a
processing-time trigger and a checkpoint under ``checkpoint_dir`` (:mod:`.group_checkpoint`),
or a stateless group's real-time query (:mod:`.group_real_time`).

Around the query, the runner moves the group's bus position as each batch completes
(:mod:`.position_commits`), appends the wall-clock heartbeat of a group with timers
(:mod:`eddy.engine.run.heartbeat`), runs on-demand queries against the live state of a group
with tables, named windows or aggregations (:mod:`eddy.engine.run.store_requests`), and says
where the group stands (:mod:`.group_status`, :mod:`.group_metrics`).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.engine.compile.group_query import compile_group
from eddy.engine.run import group_checkpoint, group_real_time
from eddy.engine.run.bus_sink import BatchHook, BusSink, OutputCallback, sink_rows
from eddy.engine.run.group_metrics import GroupMetrics
from eddy.engine.run.group_status import RunnerStatus
from eddy.engine.run.group_topics import GroupTopics
from eddy.engine.run.heartbeat import Heartbeat, needs_heartbeat, tick_topic_spec
from eddy.engine.run.position_commits import PositionCommits
from eddy.engine.run.real_time import Bridge
from eddy.engine.run.store_requests import Records, StoreRequests
from eddy.engine.spark.bus_source import GroupInput, Offsets, read_group_input, selected
from eddy.engine.spark.query_progress import progress_listeners
from eddy.engine.spark.row_layout import STORE_STREAM, TICK_STREAM, input_layout
from eddy.engine.spark.session import get_spark
from eddy.lang import check
from eddy.lang.on_demand import check_on_demand
from eddy.plan.bus_binding import topic_of

log = logging.getLogger("eddy.engine.run.group_runner")
_POLL_S = 0.05
STORE_QUERY_TIMEOUT_S = 60.0


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
        self._positions: PositionCommits | None = None
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
        group_checkpoint.claim_checkpoint(self.checkpoint_dir, self.name, self.app_text)
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
                             stats=group_checkpoint.sink_stats(self.checkpoint_dir))
        self._query = None
        if self.real_time_batch_ms is not None:
            self._query = self._start_real_time(spark, inputs, self.real_time_batch_ms)
        if self._query is None:
            outputs = self._planned if self._planned is not None else self._plan(spark)
            self._planned = None  # used once: a later start plans afresh
            planned = time.monotonic()
            checkpoint = self.checkpoint_dir / group_checkpoint.MICRO_BATCH_CHECKPOINT
            rows = sink_rows(outputs, self._sink.query_names)
            self._query = (rows.writeStream.foreachBatch(self._sink)
                           .trigger(processingTime=self.trigger_interval)
                           .option("checkpointLocation", str(checkpoint))
                           .queryName(f"eddy:{self.name}").start())
            log.info("group %s: query started in %.2f s (bus topics %.2f s, plan %.2f s, "
                     "Spark start %.2f s)", self.name, time.monotonic() - began,
                     topics_ready - began, planned - topics_ready, time.monotonic() - planned)
        self._sink.bind(str(self._query.id))
        self._positions = PositionCommits(self.bus_url, self.name, started=began)
        progress_listeners(spark).add(str(self._query.id), self._positions.on_progress)
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
        """Why the group cannot run in real-time mode (:mod:`.group_real_time`), or None
        when it can: only groups whose queries are all stateless do."""
        return group_real_time.group_refusal(self.analyzed, self._layout, self.topics,
                                             ticking=self.tick_topic is not None, spark=spark)

    def _start_real_time(self, spark: SparkSession, inputs: GroupInput,
                         batch_ms: int) -> StreamingQuery | None:
        """Starts the group in real-time mode, or returns None when it runs in
        micro-batches (the log says why)."""
        assert self._bus is not None and self._sink is not None
        started = group_real_time.start_group(
            spark, self.real_time_refusal(spark), name=self.name, bus=self._bus,
            bus_url=self.bus_url, inputs=inputs, sink=self._sink,
            compile_outputs=lambda source: compile_group(self.app_text, source, self._layout,
                                                         typed=False),
            checkpoint_dir=self.checkpoint_dir, batch_ms=batch_ms)
        if started is None:
            return None
        query, self._bridge = started
        return query

    def stop(self) -> None:
        """Stops the query (a batch in flight is abandoned and replayed on the next start)
        and releases the bus."""
        self._passing = False
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if self._positions is not None and self._query is not None:
            # first: no progress reaches a closing listener
            progress_listeners(self._spark or get_spark()).remove(str(self._query.id))
            self._positions.close()
            self._positions = None
        if self._query is not None:
            self._query.stop()
        if self._bridge is not None:
            group_real_time.stop_group(self._bridge)
            self._bridge = None
        if self._bus is not None:
            self._bus.close()
            self._bus = None

    @staticmethod
    def prepare_restore(checkpoint_dir: str | Path) -> None:
        """Readies a copy of an earlier checkpoint of a group (a revision) to become its live
        checkpoint (:func:`.group_checkpoint.prepare_restore`)."""
        group_checkpoint.prepare_restore(checkpoint_dir)

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
