"""What a window aggregate operator is told, as plain data: the window kinds, and the spec of
one query (its window, groups, selected outputs, ``having``, ordering, rate limit and
partition) that :mod:`.plan` derives from the app and the operators
(:mod:`.jvm`, :mod:`.sliding_time`, :mod:`.expiring`, :mod:`.time_batch`) run; pickled to
Spark's Python workers."""

from __future__ import annotations

from dataclasses import dataclass

from eddy.engine.operators.columnar_expressions import Node
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.semantic import QueryInfo
from eddy.plan.physical.rules.window_aggregate import on_the_group_clock

WINDOWS = ("time", "timeBatch", "length")
SLIDING = ("time", "length")
"""Windows whose expired events the operator can emit (:mod:`.expiring`)."""


BATCHES = ("lengthBatch", "timeBatch", "externalTimeBatch")
"""The batch windows: their flushes are emissions, with a reset the selector sees."""
HOLDING = (*BATCHES, "delay")
"""The windows whose events wait before they count: their outputs are emissions."""
TIMED = ("time", "timeBatch", "timeLength", "delay", "session")
"""The windows with timers on the group's clock."""
JVM_ONLY = ("externalTime", "externalTimeBatch", "lengthBatch", "timeLength", "sort", "delay",
            "session")
"""Windows only eddy's Java operator runs."""
JVM_WINDOWS = ("time", "length", "timeBatch", "none", *JVM_ONLY)
"""Windows eddy's Java operator runs (one state key; ``none``: no window): :mod:`.jvm`."""
PARTITIONED = ("length", "lengthBatch", "externalTime", "externalTimeBatch", "sort", "none",
               "time", "timeLength")
"""Windows eddy's Java operator runs inside a value partition, current events out: with no
timer and no clock of the app's (a partition's rows alone move them; hash buckets of the
partition value), or the ``time`` and ``timeLength`` windows, whose clock every row of the
group moves (one state key: :attr:`WindowSpec.shared_clock`)."""


@dataclass(frozen=True)
class Output:
    """One selected attribute: ``kind`` is ``var`` (an event's own value of ``column``),
    ``avg``/``sum`` or one of :data:`KEPT` (over argument number ``argument``; those only in
    the Java operator; ``distinctCount`` over ``column``) or ``count``."""

    name: str
    type: AttrType
    kind: str
    column: str | None = None
    argument: int = -1


@dataclass(frozen=True)
class Ordering:
    """A query's ``order by`` (per key: the selected attribute's index, ascending),
    ``offset`` and ``limit``; empty: none of them."""

    keys: tuple[tuple[int, bool], ...] = ()
    limit: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Rate:
    """A query's ``output <type> every <value> events|<time>`` (``unit`` ``events`` or
    ``time``, ms); ``scheduler`` the limiter's scheduler number in the app when a timer of
    its own flushes it (``all``/``last`` every ``<time>``), else -1."""

    type: str
    unit: str
    value: int
    scheduler: int = -1

    @property
    def scheduled(self) -> bool:
        return self.scheduler >= 0


@dataclass(frozen=True)
class WindowSpec:
    """What an operator needs, as plain data (it is pickled to Spark's Python workers).

    ``window`` is ``time``, ``length``, ``timeBatch``, ``externalTime``, ``lengthBatch``,
    ``timeLength`` or ``none`` (no window), ``span`` its length (ms, or events for
    ``length``); ``scheduler`` the window's scheduler number in the app (part of a timer-
    driven output's ``_order``); ``events`` what the query inserts: ``current``, ``expired``
    or ``all`` events (a batch window's expired events only in eddy's Java operator);
    ``having`` the condition over the selected attributes (column ``o<i>``: the i-th), only
    in eddy's Java operator; ``clock_column`` the timestamp attribute of an ``externalTime``
    window; ``partition_column`` the attribute of a value partition the query is in (each
    value has its own window: only in eddy's Java operator) and ``place`` the query's place
    among the partition's; ``size`` a ``timeLength``'s events; ``ordering`` its ``order by``,
    ``offset`` and ``limit`` (only in eddy's Java operator); ``sort_keys`` a ``sort``
    window's columns and directions (ascending); ``rate`` its output rate limit (only in
    eddy's Java operator); ``batch_start`` an ``externalTimeBatch``'s start time: a
    constant, or the column of the first event's that holds it; ``session_key`` a keyed
    ``session`` window's key column (``size``: its allowed latency)."""

    window: str
    span: int
    group_columns: tuple[str, ...]
    argument_columns: tuple[str, ...]
    outputs: tuple[Output, ...]
    scheduler: int = 0
    events: str = "current"
    having: Node | None = None
    clock_column: str | None = None
    partition_column: str | None = None
    place: int = 0
    size: int = 0
    ordering: Ordering = Ordering()
    sort_keys: tuple[tuple[str, bool], ...] = ()
    rate: Rate | None = None
    batch_start: int | str | None = None
    session_key: str | None = None

    @property
    def shared_clock(self) -> bool:
        """A partitioned ``time`` or ``timeLength`` window, or a partitioned query whose
        expired events are outputs: each value's window expires by (or stamps its expired
        events with) the group's clock, which every row moves, so all rows reach one state
        key."""
        return self.partition_column is not None and \
            on_the_group_clock(self.window, self.events)

    @property
    def plain_columns(self) -> list[str]:
        """The input columns whose own values the operator reads: the selected attributes',
        ``distinctCount``'s arguments and a ``sort`` window's attributes."""
        return sorted({*(o.column for o in self.outputs
                         if o.kind in ("var", "distinctCount") and o.column),
                       *(column for column, _ in self.sort_keys)})

    @property
    def expiring(self) -> bool:
        """Whether its outputs are emissions (``_i``, ``_x``, ``_timer``): expired events are
        outputs, or the window counts events. In NumPy :mod:`.expiring` runs those (else
        :mod:`.sliding_time` or :mod:`.time_batch`); eddy's Java operator emits a batch
        window's flushes and a rate limit's releases as emissions too."""
        return self.window in ("length", "lengthBatch", "externalTimeBatch", "delay") or \
            self.events != "current" or self.rate is not None

    @property
    def one_per_input(self) -> bool:
        """Whether the Java operator emits at most one current event per passing input and
        nothing else, at that input's place: no emission (a batch's flush, a delay's
        release, a rate limit's, expired events) and nothing on a timer."""
        return self.events == "current" and self.window not in HOLDING and self.rate is None

    @property
    def reads_no_clock(self) -> bool:
        """Whether the operator's outputs depend on its own rows alone, not on the group's
        clock: no timer, no expired event stamped with the clock, no timed rate limit (in a
        partition, then, each value's window reads only that value's rows)."""
        return self.window not in TIMED and self.events == "current" and \
            (self.rate is None or self.rate.unit == "events")


@dataclass(frozen=True)
class WindowPlan:
    """A query a vectorised operator runs, and how it reads the group's input; ``entry``
    is the order path at which an input's event reaches it (``(1,)``: straight from the
    input; a longer one through a filter: :mod:`eddy.plan.physical.heads`); ``derived``
    the columns computed for its expressions."""

    info: QueryInfo
    stream: str
    filters: tuple[ast.Expression, ...]
    spec: WindowSpec
    entry: tuple[int, ...] = (1,)
    derived: tuple[tuple[str, AttrType, ast.Expression], ...] = ()
    """Columns computed in Spark SQL for expressions the query reads (``avg(temp * 1.8 +
    32)``): name, type, expression."""
