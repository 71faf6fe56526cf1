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
from typing import TYPE_CHECKING

from eddy.lang.errors import SiddhiAppError

if TYPE_CHECKING:
    from eddy.lang.semantic import AnalyzedApp
    from eddy.plan.model import AppPlan
    from eddy.plan.physical import GroupPhysicalPlan


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
    from eddy.engine.compile.app_check import check_app

    failed = 0
    for path in args.apps:
        try:
            check_app(_read_app(path), path)
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
    from eddy.engine.compile.app_check import check_app
    from eddy.plan.children import split_app
    from eddy.plan.explain import explain_json, explain_text

    try:
        text = _read_app(args.app)
        analyzed, plan = check_app(text, args.app)
        children = split_app(text, args.app) if plan.distributed else None
        physical = _physical_plan(analyzed, plan)
    except SiddhiAppError as error:
        _report(error)
        return 1
    if args.json:
        print(json.dumps(explain_json(analyzed, plan, physical, children), indent=2))
    else:
        sys.stdout.write(explain_text(analyzed, plan, physical, children))
    return 0


def _physical_plan(analyzed: AnalyzedApp, plan: AppPlan) -> GroupPhysicalPlan | None:
    """The physical plan the engine builds for the app (None without the engine). The
    engine runs the whole app as one Spark query, even an app of several ``@dist`` groups
    (issue 16, item 7), so that is the group planned; no Spark is started."""
    try:
        from eddy.engine.compile.operator_facts import physical_plan
        from eddy.engine.spark.row_layout import input_layout
    except ImportError:
        return None
    name = plan.groups[0].name if len(plan.groups) == 1 else \
        f"the whole app ({', '.join(g.name for g in plan.groups)} as one Spark query)"
    return physical_plan(analyzed, input_layout(analyzed), clock=False, group=name)


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


def cmd_manager(args: argparse.Namespace) -> int:
    """Runs a manager of the fully distributed deployment: its API and the scheduler."""
    from eddy.api.server import serve_manager
    from eddy.cluster.run import run_manager

    return run_manager(args.config, serve_manager)


def cmd_ha_status(args: argparse.Namespace) -> int:
    """Prints a minimum-HA group's lease, nodes and apps, read from its databases."""
    import json

    from sqlalchemy.exc import SQLAlchemyError

    from eddy.config import ConfigError, load_config
    from eddy.node.ha_status import group_status, render

    try:
        status = group_status(load_config(args.config))
    except ConfigError as error:
        for fault in error.faults:
            print(f"eddy ha status: {fault}", file=sys.stderr)
        return 2
    except (ValueError, SQLAlchemyError) as error:
        print(f"eddy ha status: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(status, indent=2) if args.json else render(status))
    return 0

def cmd_dashboard(args: argparse.Namespace) -> int:
    """Runs the status dashboard: a web UI over the nodes' HTTP APIs."""
    import logging

    from eddy.config import ConfigError, load_config
    from eddy.dashboard.nodes import NodeError
    from eddy.dashboard.server import serve_dashboard

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                                                   "%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll otherwise
    try:
        config = load_config(args.config)
        config.check_exposure()
        return serve_dashboard(config, args.node)
    except (ConfigError, NodeError) as error:
        print(f"eddy dashboard: {error}", file=sys.stderr)
        return 2


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

    manager = commands.add_parser("manager", help="run a manager of the fully distributed "
                                                  "deployment (HTTPS 9543): split apps, "
                                                  "place them on workers")
    manager.add_argument("--config", metavar="deployment.yaml",
                         help="WSO2 SP manager configuration (default: embedded defaults)")
    manager.set_defaults(func=cmd_manager)

    ha = commands.add_parser("ha", help="minimum HA: the state of an active/passive pair")
    ha_commands = ha.add_subparsers(dest="ha_command", required=True, metavar="COMMAND")
    ha_status = ha_commands.add_parser("status", help="who is active, the epoch, the last "
                                                      "renewal and the passive's lag")
    ha_status.add_argument("--config", metavar="deployment.yaml", required=True,
                           help="either node's configuration (it names the databases)")
    ha_status.add_argument("--json", action="store_true", help="machine-readable output")
    ha_status.set_defaults(func=cmd_ha_status)

    dashboard = commands.add_parser("dashboard", help="run the status dashboard (web UI, "
                                                      "HTTPS on 127.0.0.1:9643)")
    dashboard.add_argument("--config", metavar="deployment.yaml",
                           help="WSO2 SP-style configuration: users, listener, datasources")
    dashboard.add_argument("--node", action="append", metavar="HOST:PORT",
                           help="watch this node too (added once, with the "
                                "workerAccessCredentials of wso2.status.dashboard)")
    dashboard.set_defaults(func=cmd_dashboard)
    _add_engine_commands(commands)
    return parser


def _add_engine_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Commands that run apps on Spark, when the engine is present."""
    try:
        from eddy.engine.run.cli_commands import add_commands
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
