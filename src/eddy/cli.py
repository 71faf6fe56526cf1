"""The ``eddy`` command.

Sub-commands that only read apps (``validate``, ``explain``, ``fmt``) never start Spark;
those that run apps import the engine on demand. Faults in an app are printed the way
compilers print them — ``file:line:col: error: message``, the line and a caret — and set
the exit status to 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from eddy.lang import check
from eddy.lang.errors import SiddhiAppError


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8")


def _read_app(path: str) -> str:
    """An app file's text with its ``${NAME}`` variables filled in from the environment."""
    from eddy.lang.variables import substitute

    return substitute(_read(path), path)


def _report(error: SiddhiAppError) -> None:
    print(error.render(), file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    """Checks every file; one ``file:line:col: error: …`` block per fault on stderr."""
    from eddy.plan import build_plan

    failed = 0
    for path in args.apps:
        try:
            build_plan(check(_read_app(path), path))
        except SiddhiAppError as error:
            failed += 1
            _report(error)
        except OSError as error:
            failed += 1
            print(f"{path}: error: {error.strerror or error}", file=sys.stderr)
        else:
            if not args.quiet:
                print(f"{path}: ok")
    return 1 if failed else 0


def cmd_explain(args: argparse.Namespace) -> int:
    from eddy.plan import build_plan
    from eddy.plan.explain import explain_json, explain_text

    try:
        analyzed = check(_read_app(args.app), args.app)
        plan = build_plan(analyzed)
    except SiddhiAppError as error:
        _report(error)
        return 1
    if args.json:
        print(json.dumps(explain_json(analyzed, plan), indent=2))
    else:
        sys.stdout.write(explain_text(analyzed, plan))
    return 0


def cmd_fmt(args: argparse.Namespace) -> int:
    from eddy.lang.formatter import format_app
    from eddy.lang.parser import parse

    status = 0
    for path in args.apps:
        text = _read(path)
        try:
            formatted = format_app(parse(text, path))
        except SiddhiAppError as error:
            _report(error.with_source(text, path))
            status = 1
            continue
        if args.write and path != "-":
            if formatted != text:
                Path(path).write_text(formatted, encoding="utf-8")
        elif args.check:
            if formatted != text:
                print(f"{path}: would be reformatted", file=sys.stderr)
                status = 1
        else:
            sys.stdout.write(formatted)
    return status


def cmd_worker(args: argparse.Namespace) -> int:
    """Runs a worker: the REST API, the deployment folder and every app on one SparkSession."""
    from eddy.api.server import serve_api
    from eddy.node.worker import run_worker

    return run_worker(args.config, serve_api)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eddy", description="Run Siddhi streaming-SQL apps on Apache Spark.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check apps; exit 1 if any is faulty")
    validate.add_argument("apps", nargs="+", metavar="APP.siddhi")
    validate.add_argument("-q", "--quiet", action="store_true", help="print faults only")
    validate.set_defaults(func=cmd_validate)

    explain = commands.add_parser("explain", help="show streams, queries and execution groups")
    explain.add_argument("app", metavar="APP.siddhi")
    explain.add_argument("--json", action="store_true", help="machine-readable output")
    explain.set_defaults(func=cmd_explain)

    fmt = commands.add_parser("fmt", help="print apps in the canonical layout")
    fmt.add_argument("apps", nargs="+", metavar="APP.siddhi")
    mode = fmt.add_mutually_exclusive_group()
    mode.add_argument("-w", "--write", action="store_true", help="rewrite the files in place")
    mode.add_argument("--check", action="store_true", help="exit 1 if a file would change")
    fmt.set_defaults(func=cmd_fmt)

    worker = commands.add_parser("worker", help="run a worker node (REST API, deployment "
                                                "folder, apps on Spark)")
    worker.add_argument("--config", metavar="deployment.yaml",
                        help="WSO2 SP-style configuration (default: embedded defaults)")
    worker.set_defaults(func=cmd_worker)
    _add_engine_commands(commands)
    return parser


def _add_engine_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Commands that run apps on Spark, when the engine is present."""
    try:
        from eddy.engine.commands import add_commands
    except ImportError:
        return
    add_commands(commands)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
