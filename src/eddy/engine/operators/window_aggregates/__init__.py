"""Sliding and batch windows with ``avg``/``sum``/``count`` per group, vectorised.

The per-event runtime pays microseconds of Python per event for queries such as
``from S#window.time(1 min) select k, avg(v) as a group by k insert into O``. Their outputs
are functions of a few running sums, so a micro-batch can be computed with numpy
(DESIGN.md §4) — if the sums are added in exactly the order the runtime adds them, the
clock moves as the runtime's does, and each output carries the runtime's ``(_seq, _order)``.
:mod:`.sliding_time` (``#window.time``), :mod:`.expiring` (``#window.time`` and
``#window.length`` when expired events are outputs too, ``insert all``/``expired events``, and
``#window.length`` for current events) and :mod:`.time_batch` (``#window.timeBatch``) say
how; ``tests/engine/test_window_aggregates.py`` compares them with the runtime on random
inputs (timestamps that go back and tie, nulls, NaN, infinities). :mod:`.plan` decides
which queries qualify (into a :mod:`.spec`); :mod:`.spark` builds the Spark plan around them.
"""

from eddy.engine.operators.window_aggregates.plan import plan_window_aggregate
from eddy.engine.operators.window_aggregates.spark import (
    compile_window_aggregate,
    window_aggregate_part,
)
from eddy.engine.operators.window_aggregates.spec import WindowPlan, WindowSpec

__all__ = ["WindowPlan", "WindowSpec", "compile_window_aggregate", "plan_window_aggregate",
           "window_aggregate_part"]
