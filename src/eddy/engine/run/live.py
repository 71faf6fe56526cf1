"""``eddy run``: an app running continuously on local Spark, fed JSON lines.

Input lines are stamped (with their own ``timestamp`` under ``@app:playback``, else the
arrival time), appended to a spool that the app's streaming query reads, and every output
is printed the way Siddhi's log sink prints it. A status line on stderr shows events in
and out per second. Ctrl-C stops the query cleanly.
"""

from __future__ import annotations

import bisect
import json
import select
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType
from rich.console import Console

from eddy.engine.compile.app_check import check_app
from eddy.engine.compile.group_query import compile_group
from eddy.engine.run.cli_commands import log_line
from eddy.engine.spark.row_layout import InputLayout, input_layout, row_values
from eddy.engine.spark.session import get_spark
from eddy.engine.spark.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang.ast import find_annotation


class _Feeder:
    """Turns input lines into spooled events; counts what it accepted and rejected."""

    def __init__(self, layout: InputLayout, spool: Path, playback: bool, err: Console) -> None:
        self.layout, self.spool, self.playback, self.err = layout, spool, playback, err
        self.streams = [name for name, _ in layout.streams if not name.startswith("__")]
        self.sent = 0  # rows spooled, heartbeats included
        self.ticks: list[int] = []  # the heartbeats' seqs, rising
        self.rejected = 0
        self.done = threading.Event()
        self.lock = threading.Lock()  # the feeding and the ticking thread share ``sent``
        self.last_append = time.monotonic()

    def event(self, number: int, line: str) -> tuple[int, str, list[Any]] | None:
        try:
            item = json.loads(line)
            stream = item.get("stream") or (self.streams[0] if len(self.streams) == 1 else None)
            if stream not in self.streams:
                raise ValueError(f"unknown stream {stream!r}; the app reads "
                                 f"{', '.join(self.streams)}")
            attributes = self.layout.attributes(stream)
            data = item.get("data")
            if isinstance(data, dict):
                data = [data.get(a.name) for a in attributes]
            if not isinstance(data, list) or len(data) != len(attributes):
                raise ValueError(f"'{stream}' needs {len(attributes)} values in 'data'")
            now = int(time.time() * 1000)
            ts = int(item.get("timestamp", now)) if self.playback else now
            return ts, stream, data
        except (ValueError, AttributeError, TypeError) as error:
            self.rejected += 1
            self.err.print(f"[yellow]input line {number} rejected:[/] {error}")
            return None

    def feed(self, lines: Iterable[str]) -> None:
        pending: list[tuple[int, int, str, list[Any]]] = []
        last_flush = time.monotonic()
        for number, line in enumerate(lines, 1):
            if line.strip() and (parsed := self.event(number, line)) is not None:
                pending.append((self.sent + len(pending), *parsed))
            if pending and (len(pending) >= 10_000 or time.monotonic() - last_flush > 0.05
                            or not _more_waiting(lines)):
                self._flush(pending)
                pending, last_flush = [], time.monotonic()
        if pending:
            self._flush(pending)
        self.done.set()

    def _flush(self, events: list[tuple[int, int, str, list[Any]]]) -> None:
        with self.lock:  # numbered here: a heartbeat may have taken the next seq
            events = [(self.sent + i, *event[1:]) for i, event in enumerate(events)]
            append_chunk(self.spool, self.layout.to_arrow(events))
            self.sent += len(events)
            self.last_append = time.monotonic()

    def tick(self, interval_s: float, follow: bool) -> None:
        """Live mode's heartbeat (:data:`~eddy.engine.spark.row_layout.TICK_STREAM`): while no
        input arrives, a row with the wall-clock time every ``interval_s``, so that time windows,
        ``output every``, ``not … for`` and ``within`` fire on time (Siddhi's scheduler).
        Stops when the input ends, unless the run follows it."""
        while follow or not self.done.is_set():
            time.sleep(interval_s)
            with self.lock:
                if time.monotonic() - self.last_append < interval_s:
                    continue
                append_chunk(self.spool, self.layout.tick_rows([(self.sent,
                                                                  int(time.time() * 1000))]))
                self.ticks.append(self.sent)
                self.sent += 1
                self.last_append = time.monotonic()


def _more_waiting(lines: Iterable[str]) -> bool:
    """Whether more input is ready to read at once (a file always is): a line that arrives
    alone on a pipe is spooled now, not when the next one comes."""
    fileno = getattr(lines, "fileno", None)
    if fileno is None:  # not a file: an in-memory list of lines
        return True
    try:
        ready, _, _ = select.select([fileno()], [], [], 0)
    except (ValueError, OSError):
        return True
    return bool(ready)


TICK_INTERVAL_S = 0.5
"""How late a timer may fire while no input arrives (plus a micro-batch's time): every
heartbeat is a spool chunk, so this also bounds how many files an idle run writes."""


def source_schema(layout: InputLayout) -> StructType:
    """The columns ``eddy run`` reads: the worker's, so it runs the worker's plan."""
    return layout.spark_schema()


def run_app(app_text: str, filename: str, input_path: str, *, follow: bool = False,
            out: TextIO | None = None) -> int:
    """Runs the app until its input ends (or Ctrl-C with ``follow``); returns the exit code.

    Outputs go to ``out``, by default the ``sys.stdout`` of the moment of the call (not of
    the import: a caller that redirects stdout must get the lines)."""
    out = sys.stdout if out is None else out
    analyzed, _ = check_app(app_text, filename)
    layout = input_layout(analyzed)
    playback = find_annotation(analyzed.app.annotations, "app:playback") is not None
    err = Console(stderr=True)
    spark = get_spark()
    register_sources(spark)
    emitted = [0]
    stream_queries = {q.id: q.outputs for q in analyzed.queries if q.target_kind == "stream"}

    def print_batch(frame: DataFrame, batch_id: int) -> None:
        for row in sorted(frame.collect(), key=lambda r: (r["_seq"], list(r["_order"]))):
            if row["_query"] in stream_queries:
                event = {"timestamp": row["_ts"],
                         "data": row_values(row, stream_queries[row["_query"]])}
                out.write(log_line(row["_target"], event) + "\n")
                emitted[0] += 1
        out.flush()

    with tempfile.TemporaryDirectory(prefix="eddy-run-") as work:
        spool = Path(work) / "spool"
        spool.mkdir()
        source = (spark.readStream.format(FORMAT).schema(source_schema(layout))
                  .option("path", str(spool)).load())
        query = (compile_group(app_text, source, layout).writeStream
                 .foreachBatch(print_batch).option("checkpointLocation", f"{work}/checkpoint")
                 .queryName(f"run-{analyzed.name}").start())
        feeder = _Feeder(layout, spool, playback, err)
        stream: TextIO = sys.stdin if input_path == "-" else open(input_path, encoding="utf-8")
        threading.Thread(target=feeder.feed, args=(stream,), daemon=True).start()
        if not playback:  # playback apps keep event time: their timers fire on events
            threading.Thread(target=feeder.tick, args=(TICK_INTERVAL_S, follow),
                             daemon=True).start()
        err.print(f"[bold]{analyzed.name}[/] running on Spark {spark.version} "
                  f"({spark.sparkContext.master}); reading "
                  f"{'stdin' if input_path == '-' else input_path}")
        try:
            _watch(query, feeder, emitted, err, follow)
        except KeyboardInterrupt:
            err.print("stopping…")
        finally:
            query.stop()
            if stream is not sys.stdin:
                stream.close()
        if query.exception() is not None:
            err.print(f"[red]the app failed:[/] {query.exception()}")
            return 1
    return 0


def _watch(query: Any, feeder: _Feeder, emitted: list[int], err: Console, follow: bool) -> None:
    last = (time.monotonic(), 0, 0)
    while query.isActive:
        time.sleep(0.5)
        progress = query.lastProgress
        read = int(json.loads(progress["sources"][0]["endOffset"] or '{"offset": 0}')["offset"]) \
            if progress and progress.get("sources") else 0
        now = time.monotonic()
        rate_in = (read - last[1]) / (now - last[0])
        rate_out = (emitted[0] - last[2]) / (now - last[0])
        last = (now, read, emitted[0])
        err.print(f"in {read - bisect.bisect_left(feeder.ticks, read)} ({rate_in:,.0f}/s)  out {emitted[0]} ({rate_out:,.0f}/s)"
                  + (f"  rejected {feeder.rejected}" if feeder.rejected else ""),
                  highlight=False)
        if feeder.done.is_set() and read >= feeder.sent and not follow:
            query.processAllAvailable()
            return


# -- an app with its own sources and sinks ---------------------------------------------------

MAX_ROWS_PER_BATCH = 100_000
"""The most input events one micro-batch of ``eddy run`` takes (the driver holds a batch's
outputs; a million-event backlog in one batch exhausted its default heap)."""


def app_bus_url(bus_url: str | None, data_dir: Path, app: str) -> str:
    """The bus ``eddy run`` uses: ``bus_url`` (a NATS or Kafka URL without ``app=`` gets the
    app's name), else the SQLite bus under ``data_dir``."""
    from urllib.parse import parse_qsl, urlsplit

    from eddy.bus import default_url

    if bus_url is None:
        return default_url(data_dir)
    parts = urlsplit(bus_url)
    if parts.scheme in ("nats", "tls", "kafka") and "app" not in dict(parse_qsl(parts.query)):
        return bus_url + ("&" if parts.query else "?") + f"app={app}"
    return bus_url


def run_connected(app_text: str, filename: str, *, data_dir: Path | None = None,
                  bus_url: str | None = None, err: TextIO | None = None,
                  status_interval_s: float = 5.0,
                  max_rows_per_batch: int = MAX_ROWS_PER_BATCH,
                  real_time_batch_ms: int | None = None) -> int:
    """Runs the app with its own ``@source``s and ``@sink``s until Ctrl-C (or SIGTERM).

    State lives under ``data_dir`` (default ``eddy-data/run/<app>``): the SQLite bus (unless
    ``bus_url`` names another), the query's checkpoint and the sources' and sinks' positions,
    so the same command started again — also after ``kill -9`` — resumes exactly where the
    app was: nothing a source acknowledged is lost, and each sink continues from its
    committed position. Log-sink lines go to stdout, everything else to stderr.

    A micro-batch takes at most ``max_rows_per_batch`` input events, so a backlog (after a
    restart, or a burst) is worked off in bounded steps instead of one batch the driver
    cannot hold. With ``real_time_batch_ms`` a stateless app runs in Spark's real-time mode
    (:mod:`eddy.engine.run.real_time`), checkpointing every that many milliseconds.
    """
    import logging
    import signal

    from eddy.engine.run.app_groups import AppGroups
    from eddy.io import IoConfig
    from eddy.io.app_connectors import AppConnectors
    from eddy.io.sinks.log_sink import LOGGER

    err = sys.stderr if err is None else err
    analyzed, _ = check_app(app_text, filename)
    data = data_dir if data_dir is not None else Path("eddy-data") / "run" / analyzed.name
    data.mkdir(parents=True, exist_ok=True)
    url = app_bus_url(bus_url, data, analyzed.name)
    _log_to(err)
    runner = AppGroups(app_text, url, data / "checkpoint", topic_prefix=f"{analyzed.name}.",
                       filename=filename, max_rows_per_batch=max_rows_per_batch,
                       real_time_batch_ms=real_time_batch_ms)
    connectors = AppConnectors(analyzed, url, IoConfig(state_dir=data / "io"),
                               lag_consumer=runner.name)

    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    status = 0
    try:
        connectors.start()
        for source in connectors.sources:
            where = getattr(source, "url", None)
            print(f"{source.describe()}: {where or 'started'}", file=err, flush=True)
        runner.start()
        print(f"{analyzed.name} running on Spark ({runner.mode}; bus {url}, data {data}); "
              f"Ctrl-C stops",
              file=err, flush=True)
        last = None
        while True:
            time.sleep(status_interval_s if status_interval_s > 0 else 0.5)
            state = runner.status()
            if state.state == "failed":
                print(f"the app failed: {state.error}", file=err, flush=True)
                status = 1
                break
            out = sum(state.events_out.values())
            if status_interval_s > 0 and out != last:
                where = "" if state.last_batch_id is None else f"batch {state.last_batch_id}: "
                print(f"{where}{out} events out since start", file=err, flush=True)
                last = out
    except KeyboardInterrupt:
        print("stopping…", file=err, flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        connectors.stop()
        try:
            runner.stop()
        except Exception as error:  # the JVM went first (it got the signal too)
            print(f"the query did not stop cleanly: {str(error).splitlines()[0]}", file=err,
                  flush=True)
        logging.getLogger(LOGGER).handlers.clear()
    return status


def _log_to(err: TextIO) -> None:
    """Log-sink lines (only the line) on stdout; eddy's other log lines on ``err``."""
    import logging

    from eddy.io.sinks.log_sink import LOGGER

    sink_logger = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    sink_logger.handlers = [handler]
    sink_logger.setLevel(5)
    sink_logger.propagate = False
    root = logging.getLogger("eddy")
    if not root.handlers:
        other = logging.StreamHandler(err)
        other.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(name)s] %(message)s"))
        root.addHandler(other)
        root.setLevel(logging.INFO)
