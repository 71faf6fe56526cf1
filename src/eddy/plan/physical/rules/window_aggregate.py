"""Rule 2 — the vectorised window aggregate, one operator per query it takes.

Applies to each query left after rule 1 that stands alone in its group (it reads only the
group's input streams and no query of the group but its tails reads its output:
:meth:`~eddy.plan.physical.planner.Planning.standalone`: it reads no table, named window or
aggregation, which stay with the runtime, and on-demand queries do not reach it), and the
query (outside any partition; in the Java operator also the
query of a value partition with a ``length``, ``lengthBatch``, ``externalTime``, ``sort``,
``time`` or ``timeLength`` window or none, into current events, or with one of those
without timers into expired or all events) is ``from S[f]#window.time(t)``,
``#window.length(n)`` or ``#window.timeBatch(t)`` selecting plain attributes, ``avg``,
``sum`` of a double and ``count()`` (optionally ``group by`` non-double attributes) into a
stream — current events, or for ``time``/``length`` also all or expired events — with no
``having``, ``order by``, ``limit`` or rate limit; in the Java operator also
``#window.externalTime(a, t)``, ``#window.externalTimeBatch(a, t)``,
``#window.timeLength(t, n)``, ``#window.sort(n, a, ...)``, ``#window.lengthBatch(n)``,
``#window.delay(t)``, ``#window.session(gap [, key [, latency]])`` (no rate limit) or no
window, a ``timeBatch`` into all or expired events, ``max``/``min``,
``maxForever``/``minForever``, ``stdDev``, ``and``/``or``, ``distinctCount``, ``sum`` of
ints, a ``having`` over the selected attributes and ``order by`` them, ``offset`` and
``limit``, and an ``output all|first|last every N events`` rate limit (outside partitions
also ``every <time>``) (:mod:`eddy.engine.operators.window_aggregates` builds the kernel and
says whether it can).

A query reading only what a stateful query of the group inserts runs here too when that
query's Java operator emits at most one current event per input row and this one reads no
clock (no timer, current events only, outside partitions): it reads the producer's
operator's outputs in the same micro-batch
(:meth:`~eddy.plan.physical.planner.Planning.producer_of`), so a chain such as "averages,
then a window over them" leaves the runtime; so does a followed-by's.

A query whose input a filter of the group fills (``from S[f] select … insert into X; from
X#window…``) is taken too, reading ``X``'s events computed on the input rows
(:mod:`eddy.plan.physical.heads`: exact because the filter keeps no state and emits each
event at its input's place; the outputs' order paths keep the filter's step); so by the
followed-by and the window join. Inside a value partition the filter may fill an inner
stream ``#X`` from the stream the partition splits: each ``#X`` event keeps the key of the
event that caused it, the value the query's state is bucketed by.

Exact because the kernel computes the same running sums over the same window contents, in
input order, with the same group clock, and a standalone query's outputs depend on the
group's input rows alone (other queries in other operators do not change them). A ``time``
or ``length`` window (or a ``timeBatch``) on one key runs in eddy's Java operator
(:mod:`eddy.engine.operators.window_aggregates.jvm`: the same steps, and no crossing into a
Python worker) when eddy's JVM classes are built on this machine (the engine's facts say
so); what only that operator keeps is taken only then. Its state is one
key, except a ``time`` window with ``group by``, current events only and no filter when
every row carries its stream's clock: then hash buckets of the ``group by`` values, each
bucket expiring by the stream's clock, not its own. (Expired events that are outputs leave
when the window's timer fires, and one group's event sets the timer that expires every
group's: one key.) A partitioned query's state is hash buckets of the partition value, each
value's window apart in its bucket, as Siddhi gives each key its own; those windows have no
timer and read no clock but their own rows', so a bucket needs no other rows. A partitioned
``time`` or ``timeLength`` window is one key: its values' windows expire by the group's
clock, which every row of the group moves (and its timers only expire earlier what an
arrival would, before the arrival's own length eviction); so is a partitioned query whose
expired events are outputs, stamped with that clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from eddy.lang import ast
from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.heads import inner_key
from eddy.plan.physical.model import ONE_KEY, QueryChoice, StateKey
from eddy.plan.physical.planner import Planning

NAME = "window-aggregate"
BUCKETS = 16
"""State keys of a split window: a few per core; fixed, since a checkpoint's state is keyed
by them."""
CLOCKED = ("time", "timeLength")
"""The windows a value partition's query expires by the group's clock."""


def on_the_group_clock(window: str, events: str) -> bool:
    """Whether a value partition's query needs the group's clock, so every row on one
    state key: its window expires by it, or its expired events (outputs) are stamped with
    it."""
    return window in CLOCKED or events != "current"


def takes(planning: Planning, info: QueryInfo, streams: Sequence[str]) -> bool:
    """Whether the window aggregate runs ``info`` reading ``streams``."""
    return planning.facts.jvm_window_aggregate(planning.analyzed, info, streams) or \
        planning.facts.window_aggregate(planning.analyzed, info, streams)


def apply(planning: Planning) -> None:
    """Places every standalone query the window aggregate runs, each in its own operator."""
    for info in planning.pending:
        if not planning.standalone(info):
            continue
        streams = planning.streams_of(info)
        if planning.facts.jvm_window_aggregate(planning.analyzed, info, streams):
            _place_in_jvm(planning, info)
        elif planning.facts.window_aggregate(planning.analyzed, info, streams):
            _place(planning, info)


def _place_in_jvm(planning: Planning, info: QueryInfo) -> None:
    through = planning.through(info)
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    window = source.handlers[-1] if source.handlers else None
    what = f"a #window.{window.name}" if isinstance(window, ast.Window) else "the events"
    output = info.query.output
    events = output.event_type if isinstance(output, ast.InsertIntoStream) else "current"
    key = ONE_KEY
    rate = info.query.output_rate
    limited = "" if rate is None else f" {rate.type} every {rate.value} " + \
        ("events" if rate.unit == "events" else "ms")
    why = f"it aggregates {what} of {info.inputs[0]} into {events} events" + \
        (f", output{limited}" if limited else "") + through + \
        ": eddy's Java operator, no crossing into Python"
    if info.partition is not None and isinstance(window, ast.Window) and \
            on_the_group_clock(window.name, events):
        why += " (one key: each partition value's window expires by, or stamps its expired " \
            "events with, the group's clock)"
    elif info.partition is not None:  # each partition value has its own window
        fed = planning.fed_through(info)  # an inner stream's events have their head's key
        stream = fed.source if source.inner and fed is not None else \
            info.inputs[0] if planning.producer_of(info) is not None else source.stream
        attribute = inner_key(planning.analyzed, info, stream) or \
            next((p.expression.attribute for p in
                  planning.analyzed.partition(info.partition).partition.partition_types
                  if p.stream == stream and isinstance(p, ast.ValuePartitionType)
                  and isinstance(p.expression, ast.Variable)), None)
        assert attribute is not None, "the engine's facts keyed this window (a bug in eddy)"
        key = StateKey("buckets", ((stream, attribute),), BUCKETS)
    planning.choose(QueryChoice(info.id, "jvm-window-aggregate", key, NAME, why,
                                planning.producer_id(info)))


def _place(planning: Planning, info: QueryInfo) -> None:
    through = planning.through(info)
    source = info.query.input
    assert isinstance(source, ast.SingleInputStream)
    window = source.handlers[-1]
    assert isinstance(window, ast.Window)
    group_by = info.query.selector.group_by
    output = info.query.output
    current = isinstance(output, ast.InsertIntoStream) and output.event_type == "current"
    # (a fed stream's rows are a filter's outputs: as with a filter in front, one key)
    split = (window.name == "time" and bool(group_by) and len(source.handlers) == 1
             and current and planning.sources.clock and not through)
    key = StateKey("buckets", tuple((source.stream, v.attribute) for v in group_by),
                   BUCKETS) if split else ONE_KEY
    why = f"it aggregates a #window.{window.name} of {source.stream}{through}"
    if not split and window.name == "time" and group_by:
        why += (" (one key: the window's timer expires every group's events)" if not current
                else " (one key: without each row's stream clock a bucket's own clock would "
                "expire late)")
    planning.choose(QueryChoice(info.id, "window-aggregate", key, NAME, why))
