"""``eddy run``: an app running continuously on local Spark, fed JSON lines.

Input lines are stamped (with their own ``timestamp`` under ``@app:playback``, else the
arrival time), appended to a spool that the app's streaming query reads, and every output
is printed the way Siddhi's log sink prints it. A status line on stderr shows events in
and out per second. Ctrl-C stops the query cleanly.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import DataFrame
from rich.console import Console

from eddy.engine.commands import log_line
from eddy.engine.group_query import compile_group
from eddy.engine.layout import InputLayout, decode_data, input_layout
from eddy.engine.session import get_spark
from eddy.engine.spool_source import FORMAT, append_chunk, register_sources
from eddy.lang import check
from eddy.lang.ast import find_annotation


class _Feeder:
    """Turns input lines into spooled events; counts what it accepted and rejected."""

    def __init__(self, layout: InputLayout, spool: Path, playback: bool, err: Console) -> None:
        self.layout, self.spool, self.playback, self.err = layout, spool, playback, err
        self.streams = [name for name, _ in layout.streams if not name.startswith("__")]
        self.sent = 0
        self.rejected = 0
        self.done = threading.Event()

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
            if pending and (len(pending) >= 10_000 or time.monotonic() - last_flush > 0.05):
                self._flush(pending)
                pending, last_flush = [], time.monotonic()
        if pending:
            self._flush(pending)
        self.done.set()

    def _flush(self, events: list[tuple[int, int, str, list[Any]]]) -> None:
        append_chunk(self.spool, self.layout.to_arrow(events))
        self.sent += len(events)


def run_app(app_text: str, filename: str, input_path: str, *, follow: bool = False,
            out: TextIO = sys.stdout) -> int:
    """Runs the app until its input ends (or Ctrl-C with ``follow``); returns the exit code."""
    analyzed = check(app_text, filename)
    layout = input_layout(analyzed)
    playback = find_annotation(analyzed.app.annotations, "app:playback") is not None
    err = Console(stderr=True)
    spark = get_spark()
    register_sources(spark)
    emitted = [0]
    stream_queries = {q.id: q.target for q in analyzed.queries if q.target_kind == "stream"}

    def print_batch(frame: DataFrame, batch_id: int) -> None:
        for row in sorted(frame.collect(), key=lambda r: (r["_seq"], list(r["_order"]))):
            if row["_query"] in stream_queries:
                event = {"timestamp": row["_ts"], "data": decode_data(row["_data"])}
                out.write(log_line(row["_target"], event) + "\n")
                emitted[0] += 1
        out.flush()

    with tempfile.TemporaryDirectory(prefix="eddy-run-") as work:
        spool = Path(work) / "spool"
        spool.mkdir()
        source = (spark.readStream.format(FORMAT).schema(layout.spark_schema())
                  .option("path", str(spool)).load())
        query = (compile_group(app_text, source, layout).writeStream
                 .foreachBatch(print_batch).option("checkpointLocation", f"{work}/checkpoint")
                 .queryName(f"run-{analyzed.name}").start())
        feeder = _Feeder(layout, spool, playback, err)
        stream: TextIO = sys.stdin if input_path == "-" else open(input_path, encoding="utf-8")
        threading.Thread(target=feeder.feed, args=(stream,), daemon=True).start()
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
        err.print(f"in {read} ({rate_in:,.0f}/s)  out {emitted[0]} ({rate_out:,.0f}/s)"
                  + (f"  rejected {feeder.rejected}" if feeder.rejected else ""),
                  highlight=False)
        if feeder.done.is_set() and read >= feeder.sent and not follow:
            query.processAllAvailable()
            return
