"""Minimum HA, the passive node's apps: ready to take over in as little time as possible.

A takeover has to start each app's Spark query from the old active's last checkpoint, and
a cold start costs seconds to tens of seconds. The passive therefore readies what does not
depend on that checkpoint ahead of time, in three steps of increasing cost and commitment:

* **Warmed up** (:meth:`Standby.warm`): the app runs once on scratch inputs when it is
  deployed, so Spark's code generation, Python workers and operators are warm.
* **Planned** (:meth:`Standby.plan`): its runner is built and its queries planned (the bus
  source instantiated, the operators compiled); a takeover only starts them.
* **Armed** (:meth:`Standby.arm`): when the active misses a renewal, the planned queries are
  started on the active's newest checkpoint — Spark starts a new Python process for every
  streaming source, which alone takes one to three seconds — and their first micro-batch
  waits in ``before_write`` until the role keeper either holds the lease (and releases it)
  or sees the active renew after all (and refuses it: the batch raises, nothing of it is
  written, and the armed queries are stopped and planned again). The sources and sinks of
  the app stay closed while it is armed; it is still ``passive``.

Only apps without ``@store`` tables or aggregations are warmed, planned or armed: their
queries write to databases, which a passive node must not touch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from eddy.lang import AnalyzedApp
from eddy.node.runner import AppRunner, AppSpec, RunnerFactory

log = logging.getLogger("eddy.node.standby")

WarmUp = Callable[[AppSpec, AnalyzedApp], str | None]
"""Runs an app once on scratch inputs; returns why it was skipped, None when it ran."""


def warmable(analyzed: AnalyzedApp | None) -> bool:
    """Whether the passive warms the app up, plans and arms it: not with tables or
    aggregations, whose queries write to databases (see the runner's ``warm_up``)."""
    return analyzed is not None and not {d.kind for d in analyzed.streams.values()} \
        & {"table", "aggregation"}


class Standby:
    """The passive node's planned and armed runners, by app. Used only on the registry's
    lifecycle thread (so no lock)."""

    def __init__(self, factory: RunnerFactory, spec: Callable[[str, str], AppSpec]) -> None:
        self.warm_up: WarmUp | None = None
        self._factory = factory
        self._spec = spec
        self._planned: dict[str, AppRunner] = {}
        self._armed: dict[str, AppRunner] = {}

    def planned(self, name: str) -> bool:
        """Whether the app's queries are planned ahead."""
        return name in self._planned

    def armable(self) -> bool:
        """Whether any app is planned, i.e. arming would start something."""
        return bool(self._planned)

    def planned_names(self) -> list[str]:
        """The apps whose queries are planned ahead, sorted (read from other threads: a
        copy of the keys, made without running Python code, so it is one consistent
        snapshot)."""
        return sorted(self._planned)

    def warm(self, name: str, text: str, analyzed: AnalyzedApp) -> bool:
        """Runs the passive's warm-up of the app; whether it ran."""
        if self.warm_up is None or not warmable(analyzed):
            return False
        began = time.monotonic()
        try:
            skipped = self.warm_up(self._spec(name, text), analyzed)
        except Exception as error:  # a takeover then only starts cold
            log.warning("app %s: the passive's warm-up run failed: %s", name, _first_line(error))
            return False
        if skipped is not None:
            log.info("app %s: not warmed up on the passive: %s", name, skipped)
            return False
        log.info("app %s: warmed up on the passive in %.1f s", name, time.monotonic() - began)
        return True

    def plan(self, name: str, text: str) -> None:
        """Builds the app's runner and plans its queries, so that a takeover only starts
        them (planning instantiates the bus source in a Spark worker of its own). Only for
        apps the warm-up ran, whose queries are known to plan without touching anything
        outside the node."""
        if self.warm_up is None:
            return
        try:
            runner = self._factory(self._spec(name, text))
            plan = getattr(runner, "plan", None)
            if plan is None:
                return
            began = time.monotonic()
            plan()
        except Exception as error:  # the takeover plans it then
            log.warning("app %s: could not plan its queries ahead: %s", name, _first_line(error))
            return
        self._planned[name] = runner
        log.info("app %s: queries planned ahead on the passive in %.1f s", name,
                 time.monotonic() - began)

    def arm(self, name: str, ready: Callable[[str], bool]) -> None:
        """Starts the app's planned queries after ``ready(app)`` brought its checkpoint to
        the active's newest (their first batch then waits for the role keeper); not when
        ``ready`` says the arming is called off."""
        began = time.monotonic()
        try:
            if name not in self._planned or not ready(name):
                return
        except Exception as error:  # the takeover readies it the usual way
            log.warning("app %s: could not ready its checkpoint ahead: %s", name,
                        _first_line(error))
            return
        runner = self._planned.pop(name)
        try:
            runner.start()
        except Exception as error:  # the takeover starts it the usual way
            log.warning("app %s: could not start its queries ahead: %s", name,
                        _first_line(error))
            _stop(name, runner)
            return
        self._armed[name] = runner
        log.info("app %s: queries started ahead in %.1f s; their first micro-batch waits "
                 "for the lease", name, time.monotonic() - began)

    def take(self, name: str, keep_armed: Callable[[str], bool]
             ) -> tuple[AppRunner | None, bool]:
        """The runner a takeover starts the app with, and whether it runs already: the
        armed one when it still runs and ``keep_armed(app)`` says its checkpoint is still
        the newest; else the planned one (not started); else None."""
        runner = self._armed.pop(name, None)
        if runner is not None:
            if runner.status().running and keep_armed(name):
                return runner, True
            log.info("app %s: the queries started ahead are stopped; it starts from the "
                     "newest checkpoint", name)
            _stop(name, runner)
        return self._planned.pop(name, None), False

    def disarm(self) -> list[str]:
        """Stops every armed query (their batches were refused); returns their apps, to be
        planned again."""
        names = sorted(self._armed)
        for name in names:
            _stop(name, self._armed.pop(name))
        return names

    def forget(self, name: str) -> None:
        """Drops what was readied for the app (stopping its armed queries)."""
        self._planned.pop(name, None)
        runner = self._armed.pop(name, None)
        if runner is not None:
            _stop(name, runner)

    def clear(self) -> None:
        """Drops everything readied (the node stops)."""
        for name in list(self._armed) + list(self._planned):
            self.forget(name)


def _stop(name: str, runner: AppRunner) -> None:
    try:
        runner.stop()
    except Exception:
        log.exception("app %s: the queries started ahead did not stop cleanly", name)


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0][:300] if str(error) else repr(error)
