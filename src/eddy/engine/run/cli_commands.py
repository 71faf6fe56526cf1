"""``eddy replay`` and ``eddy run``: the CLI commands that run apps on Spark."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from eddy.lang.errors import SiddhiAppError
from eddy.lang.variables import substitute


def _read_events(path: str) -> list[dict[str, Any]]:
    """JSON lines (one event or on-demand query per line), or one JSON array of them."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        loaded = json.loads(stripped)
        return list(loaded)
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not a JSON event: {error.msg}") from None
    return events


def log_line(stream: str, event: dict[str, Any]) -> str:
    """An output event the way Siddhi's log sink prints it."""
    data = ", ".join("null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                     for v in event["data"])
    expired = "true" if event.get("expired") else "false"
    return f"{stream} : Event{{timestamp={event['timestamp']}, data=[{data}], isExpired={expired}}}"


def cmd_replay(args: argparse.Namespace) -> int:
    from eddy.engine.run.replay import replay

    app_text = Path(args.app).read_text(encoding="utf-8")
    try:
        app_text = substitute(app_text, args.app)
        inputs = _read_events(args.input)
        result = replay(app_text, inputs, batch_size=args.batch_size)
    except SiddhiAppError as error:
        print(error.with_source(app_text, args.app).render(), file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"{args.input}: error: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"streams": result.streams, "queries": result.queries,
                          "store": result.store}, indent=2))
        return 0
    for stream, events in result.streams.items():
        for event in events:
            print(log_line(stream, event))
    for index, rows in enumerate(result.store):
        print(f"on-demand query {index + 1}: {json.dumps(rows)}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from eddy.engine.run.live import run_app, run_connected

    app_text = Path(args.app).read_text(encoding="utf-8")
    try:
        app_text = substitute(app_text, args.app)
        if args.input is None:
            return run_connected(app_text, args.app, bus_url=args.bus,
                                 data_dir=Path(args.data_dir) if args.data_dir else None,
                                 real_time_batch_ms=_batch_ms(args.real_time))
        return run_app(app_text, args.app, args.input, follow=args.follow)
    except SiddhiAppError as error:
        print(error.with_source(app_text, args.app).render(), file=sys.stderr)
        return 1


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = commands.add_parser("replay", help="run an app over timestamped events on Spark")
    replay.add_argument("app", metavar="APP.siddhi")
    replay.add_argument("--input", required=True, metavar="EVENTS.jsonl",
                        help="events as JSON lines: {\"stream\", \"timestamp\", \"data\"} "
                             "(or {\"store_query\": …}); - for stdin")
    replay.add_argument("--json", action="store_true", help="print the result as JSON")
    replay.add_argument("--batch-size", type=int, default=0, metavar="N",
                        help="cut the input into micro-batches of N events (default: all)")
    replay.set_defaults(func=cmd_replay)

    run = commands.add_parser(
        "run", help="run an app continuously on local Spark",
        description="Without --input the app runs with its own @source and @sink "
                    "annotations until Ctrl-C, its bus, checkpoint and positions under "
                    "--data-dir (started again, it resumes exactly). With --input it is fed "
                    "JSON lines and its outputs are printed.")
    run.add_argument("app", metavar="APP.siddhi")
    run.add_argument("--input", default=None, metavar="FILE",
                     help="JSON-lines events to send instead of the app's sources (- for "
                          "stdin)")
    run.add_argument("--follow", action="store_true",
                     help="with --input: keep running after the input ends (Ctrl-C stops)")
    run.add_argument("--data-dir", default=None, metavar="DIR",
                     help="without --input: where the bus, checkpoint and positions live "
                          "(default eddy-data/run/<app>)")
    run.add_argument("--bus", default=None, metavar="URL",
                     help="without --input: the bus (default: SQLite under --data-dir; "
                          "nats://127.0.0.1:4222 for NATS JetStream)")
    run.add_argument("--real-time", type=float, default=None, metavar="SECONDS",
                     help="without --input: run an app whose queries are all stateless in "
                          "Spark's real-time mode (each event processed as it arrives, "
                          "milliseconds instead of micro-batches), checkpointing every "
                          "SECONDS (e.g. 300); other apps keep running in micro-batches")
    run.set_defaults(func=cmd_run)


def _batch_ms(seconds: float | None) -> int | None:
    if seconds is None:
        return None
    if seconds <= 0:
        raise SystemExit("eddy run: --real-time takes a positive number of seconds")
    return max(1, round(seconds * 1000))
