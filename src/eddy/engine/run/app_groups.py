"""Running an app as its execution groups, each a streaming query, connected by bus topics.

The engine runs execution groups, not apps: :func:`~eddy.plan.children.split_app` turns an
app into its group instances as child apps (an app without ``@dist`` is its own single
child), and :class:`AppGroups` runs one :class:`~eddy.engine.run.group_runner.GroupRunner` per
child — the same child text a worker of a distributed cluster would be given, so a single
worker running a ``@dist`` app runs exactly the plan a cluster runs, its groups talking
through the parent's topics ``<app>.<stream>`` on the worker's bus.

Each child keeps its checkpoint in ``<checkpoint_dir>/<child name>`` and its bus consumer
and producer names from the child's name, so the group instance resumes exactly where it
stopped, whichever process runs it next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from eddy.engine.run.group_runner import GroupRunner
from eddy.engine.run.group_status import RunnerStatus
from eddy.plan.children import ChildApp, split_app

START_S = 60.0
"""The longest one group's start waits for its source before the next group starts."""


def group_runner(child: ChildApp, bus_url: str, checkpoint_dir: str | Path,
                 **options: Any) -> GroupRunner:
    """The runner of one group instance (a child app), its own topics (heartbeat,
    on-demand queries) prefixed by the child's name."""
    return GroupRunner(child.text, bus_url, checkpoint_dir, topic_prefix=f"{child.name}.",
                       filename=f"{child.name}.siddhi", **options)


class AppGroups:
    """Runs ``app_text`` as its execution groups; the :class:`GroupRunner` interface over
    them (see the module docstring). ``options`` go to every group's runner."""

    def __init__(self, app_text: str, bus_url: str, checkpoint_dir: str | Path, *,
                 topic_prefix: str = "", filename: str | None = None, **options: Any) -> None:
        # One receiver per source here: the instances a nested @dist(parallel) asks for
        # each open the same source (port), which needs as many receiver nodes.
        self.children = tuple(c for c in split_app(app_text, filename or "<app>")
                              if not (c.receiver and c.instance > 1))
        self.checkpoint_dir = Path(checkpoint_dir)
        if len(self.children) == 1 and self.children[0].text == app_text:
            self.runners = [GroupRunner(app_text, bus_url, checkpoint_dir,
                                        topic_prefix=topic_prefix, filename=filename,
                                        **options)]
        else:
            self.runners = [group_runner(c, bus_url, self.checkpoint_dir / c.name, **options)
                            for c in self.children]

    @property
    def name(self) -> str:
        """The bus consumer name of the first group that runs a query (the app's own group
        when it has one): whose lag an app's sources watch."""
        return next((r.name for r in self.runners if not r.passthrough), self.runners[0].name)

    @property
    def mode(self) -> Literal["micro-batch", "real-time"]:
        """How the groups run: real-time only when the app's one group does."""
        return self.runners[0].mode if len(self.runners) == 1 else "micro-batch"

    def start(self) -> None:
        """Starts every group; if one cannot start, stops those already started."""
        started: list[GroupRunner] = []
        try:
            for runner in self.runners:
                runner.start()
                started.append(runner)
                runner.await_started(START_S)  # the worker deploys apps one at a time too
        except BaseException:
            for runner in reversed(started):
                runner.stop()
            raise

    def plan(self) -> None:
        """Plans every group's query ahead of :meth:`start` (:meth:`GroupRunner.plan`)."""
        for runner in self.runners:
            runner.plan()

    def stop(self) -> None:
        """Stops every group, consumers of a topic before its producers."""
        for runner in reversed(self.runners):
            runner.stop()

    def await_idle(self, timeout: float) -> bool:
        """Waits until every group caught up with its inputs, in dataflow order (a group's
        outputs are the next one's inputs). False on timeout."""
        import time

        deadline = time.monotonic() + timeout
        for _ in range(len(self.runners)):  # groups feed each other along an acyclic graph
            for runner in self.runners:       # in any order: one pass per link covers it
                if not runner.await_idle(max(0.0, deadline - time.monotonic())):
                    return False
        return True

    def status(self) -> RunnerStatus:
        """The first failed (else stopped, else running) group's status; ``events_out``
        summed over the groups."""
        statuses = [r.status() for r in self.runners]
        if len(statuses) == 1:
            return statuses[0]
        order = {"failed": 0, "stopped": 1, "created": 2, "running": 3}
        worst = min(statuses, key=lambda s: order[s.state])
        events: dict[str, int] = {}
        queries: dict[str, int] = {}
        for status in statuses:
            for key, value in status.events_out.items():
                events[key] = events.get(key, 0) + value
            for key, value in status.query_events.items():
                queries[key] = queries.get(key, 0) + value
        batches = [s.last_batch_id for s in statuses if s.last_batch_id is not None]
        return RunnerStatus(worst.state, worst.query_id, max(batches) if batches else None,
                            worst.input_offsets, events, queries,
                            sum(s.failed_queries for s in statuses),
                            busy=any(s.busy for s in statuses), error=worst.error,
                            mode=worst.mode)

    def metrics(self) -> dict[str, float]:
        """The groups' figures, summed where two groups report the same one."""
        figures: dict[str, float] = {}
        for runner in self.runners:
            for key, value in runner.metrics().items():
                figures[key] = figures.get(key, 0.0) + value
        return figures

    def store_query(self, text: str, *args: Any) -> list[list[Any]]:
        """Runs an on-demand query in the group that holds its store."""
        if len(self.runners) == 1:
            return self.runners[0].store_query(text, *args)
        errors: list[Exception] = []
        for runner in self.runners:
            if runner.topics.store is None:
                continue
            try:
                return runner.store_query(text, *args)
            except Exception as error:  # not this group's store: try the next
                errors.append(error)
        if errors:
            raise errors[0]
        raise RuntimeError("no execution group of the app has tables, windows or aggregations")

    @staticmethod
    def prepare_restore(checkpoint_dir: str | Path) -> None:
        """:meth:`GroupRunner.prepare_restore` for the app's checkpoint and its groups'."""
        root = Path(checkpoint_dir)
        GroupRunner.prepare_restore(root)
        if root.is_dir():
            for child in root.iterdir():
                if child.is_dir() and (child / "group.json").exists():
                    GroupRunner.prepare_restore(child)
