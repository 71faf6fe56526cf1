"""Which queries the vectorised window operators run, and what they need to know.

A group qualifies when its one stateful query is ``from S[f]#window.time(t)``,
``#window.length(n)`` (``n`` >= 1) or ``#window.timeBatch(t)`` with a selection of plain
attributes, ``avg`` (of a number), ``sum`` (of a double) and ``count()``, optionally
``group by`` plain attributes that are not doubles, inserting into a stream — current
events, or for the sliding windows also ``all events`` or ``expired events`` — with no
``having``, ``order by``, ``limit``/``offset`` or rate limiting, reading no table (the app's
tables, named windows and aggregations stay in the runtime; on-demand queries, which read
only those, do not reach the operator). eddy's Java operator also runs
``#window.externalTime(a, t)``, ``#window.externalTimeBatch(a, t [, start])``,
``#window.lengthBatch(n)``, ``#window.timeLength(t, n)``, ``#window.sort(n, a, ...)``,
``#window.delay(t)``, ``#window.session(gap [, key] [, latency])`` (no rate limit) and
queries without a window, a ``timeBatch`` into expired or all
events or selecting only plain attributes, and keeps
``max``/``min``/``maxForever``/``minForever`` of an int or double, ``stdDev`` of a number,
``and``/``or`` of a bool, ``distinctCount`` of a plain attribute, ``sum`` of an int or long
(a long, as the runtime sums it), a ``having`` over the selected attributes and ``order by``
them, ``offset`` and ``limit``; and the query of a value partition (each value its own
window) with a ``length``, ``lengthBatch``, ``externalTime``, ``externalTimeBatch``,
``sort``, ``time`` or ``timeLength`` window or none, inserting current events (the windows
without timers also expired or all events); and an
``output [all|first|last] every N events`` rate limit (outside partitions also
``every <time>``). Everything else stays in the per-event runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from eddy.engine.operators.columnar_expressions import Node, NotColumnar, compile_columnar
from eddy.engine.operators.window_aggregates.spec import (
    BATCHES,
    JVM_ONLY,
    JVM_WINDOWS,
    PARTITIONED,
    SLIDING,
    TIMED,
    WINDOWS,
    Ordering,
    Output,
    Rate,
    WindowPlan,
    WindowSpec,
)
from eddy.engine.spark.row_layout import InputLayout
from eddy.lang import ast
from eddy.lang.ast import AttrType
from eddy.lang.formatter import format_expression
from eddy.lang.semantic import AnalyzedApp, QueryInfo
from eddy.lang.typecheck import constant_value
from eddy.lang.walk import walk_expression
from eddy.plan.physical.heads import fed_stream, inner_key
from eddy.plan.physical.rules.window_aggregate import CLOCKED

_PLAIN_TYPES = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE, AttrType.STRING, AttrType.BOOL)
_NUMERIC = (AttrType.INT, AttrType.LONG, AttrType.DOUBLE)
_FILTER_NODES = (ast.Variable, ast.Constant, ast.BinaryOperation, ast.Not, ast.Negate,
                 ast.IsNull)
_PARTITION_TYPES = (AttrType.INT, AttrType.LONG, AttrType.STRING, AttrType.BOOL)
_EXTREME_TYPES = (AttrType.INT, AttrType.DOUBLE)
"""Argument types of ``max``/``min`` the Java operator keeps exactly (as doubles)."""
KEPT = {"max": _EXTREME_TYPES, "min": _EXTREME_TYPES, "maxForever": _EXTREME_TYPES,
        "minForever": _EXTREME_TYPES, "stdDev": _NUMERIC, "and": (AttrType.BOOL,),
        "or": (AttrType.BOOL,), "distinctCount": _PLAIN_TYPES}
"""The aggregates only the Java operator keeps, and the argument types it keeps exactly
(an argument crosses as a double; ``distinctCount`` reads the event's own value)."""
_KEPT_TYPES = {"stdDev": AttrType.DOUBLE, "and": AttrType.BOOL, "or": AttrType.BOOL,
               "distinctCount": AttrType.LONG}
"""The output type of a kept aggregate when it is not its argument's."""


def plan_window_aggregate(analyzed: AnalyzedApp, rest: Sequence[QueryInfo],
                          layout: InputLayout, *, jvm: bool = False) -> WindowPlan | None:
    """The plan when ``rest`` (the group's queries that are not native) is one query of the
    shape above, else None. ``jvm``: eddy's Java operator is there, so the shapes only
    it runs (above) are taken too."""
    if len(rest) != 1:
        return None
    info = rest[0]
    query, selector = info.query, info.query.selector
    source = query.input
    if not (isinstance(source, ast.SingleInputStream) and not source.fault
            and isinstance(query.output, ast.InsertIntoStream)
            and info.target_kind in ("stream", "inner")
            and query.output.event_type in ("current", "expired", "all")
            and (query.output_rate is None or jvm)
            and selector.attributes is not None):
        return None
    stream = info.inputs[0]  # ``#T`` for an inner stream, which a head fills (``layout``)
    if stream not in dict(layout.streams):
        return None
    filters = list(source.handlers)
    last = filters[-1] if filters else None
    window = last if isinstance(last, ast.Window) else None
    if window is not None:
        filters.pop()
    if not all(isinstance(f, ast.Filter) and _plain_filter(f.expression) for f in filters):
        return None
    columns = dict(zip((a.name for a in layout.attributes(stream)), layout.columns(stream)))
    types = {c: a.type for c, a in zip(layout.columns(stream), layout.attributes(stream))}

    derived: dict[str, tuple[str, AttrType, ast.Expression]] = {}  # by expression text

    def column_of(var: ast.Expression) -> str | None:
        if not isinstance(var, ast.Variable):
            return derive(var)
        if var.stream_index is not None:
            return None
        try:
            name = info.scope.resolve(var).attribute.name
        except Exception:  # noqa: BLE001 - anything unusual: leave it to the runtime
            return None
        column = columns.get(name)
        return column if column is not None and types[column] in _PLAIN_TYPES else None

    def derive(expr: ast.Expression) -> str | None:
        """A column Spark SQL computes on each of the stream's rows for an expression of
        its attributes, literals and operators (evaluated as the runtime evaluates it)."""
        kind = analyzed.type_of(expr)
        if kind not in _PLAIN_TYPES or not _plain_filter(expr) or any(
                isinstance(v, ast.Variable) and column_of(v) is None
                for v in walk_expression(expr)):
            return None
        text = format_expression(expr)
        if text not in derived:
            derived[text] = (f"_d{len(derived)}", kind, expr)
            types[derived[text][0]] = kind
        return derived[text][0]

    shape = _window_shape(window, query.output.event_type, column_of, types, jvm)
    if shape is None:
        return None
    name, span, events, clock_column, size, sort_keys, batch_start, _ = shape
    partition = None
    if info.partition is not None:
        partition = _partition(analyzed, info, stream, column_of, types, layout)
        if not (jvm and partition is not None and name in PARTITIONED and
                (events == "current" or name not in CLOCKED)):
            return None

    group_columns = [column_of(v) for v in selector.group_by]
    if any(c is None or types[c] is AttrType.DOUBLE for c in group_columns):
        return None  # double keys group by Double.equals (NaN, -0.0): left to the runtime
    arguments: list[str] = []
    outputs: list[Output] = []
    in_jvm = jvm and name in JVM_WINDOWS
    for item, attribute in zip(selector.attributes, info.outputs):
        output = selected_output(item.expression, attribute.name, column_of, types,
                                 arguments, in_jvm)
        if output is None or output.type is not attribute.type:
            return None
        outputs.append(output)
    having = None
    if selector.having is not None:
        having = _having(analyzed, info, selector.having) if in_jvm else None
        if having is None:
            return None
    ordering = _ordering(info, selector) if in_jvm else Ordering()
    if ordering is None or (ordering != Ordering() and not in_jvm):
        return None
    aggregates = any(o.kind != "var" for o in outputs)
    if name == "timeBatch" and not (aggregates or group_columns or in_jvm):
        return None  # every event of a batch goes out: a different selector path
    from eddy.runtime.group import scheduler_order

    schedulers = scheduler_order(analyzed)
    rate = None
    if query.output_rate is not None:
        rate = _rate(query.output_rate, schedulers.get(f"limiter:{info.id}", -1))
        if rate is None or not in_jvm or \
                (info.partition is not None and rate.unit != "events") or \
                (name in BATCHES and not (aggregates or group_columns)) or name == "session":
            return None  # (a batch's reset events reach a limiter of every event; a timed
            # limit in a partition reads the group's clock and timers; a session's expiry
            # order is the runtime's)
    scheduler = 0
    if name in TIMED:
        scheduler = schedulers[f"window:{info.id}"]
    spec = WindowSpec(name, span, tuple(c for c in group_columns if c is not None),
                      tuple(arguments), tuple(outputs), scheduler, events, having,
                      clock_column, partition[0] if partition else None,
                      partition[1] if partition else 0, size, ordering, sort_keys, rate,
                      batch_start, shape.session_key)
    return WindowPlan(info, stream, tuple(f.expression for f in filters
                                          if isinstance(f, ast.Filter)), spec,
                      derived=tuple(derived.values()))


class _Shape(NamedTuple):
    """A window an operator runs: ``size`` a ``timeLength``'s events, ``sort_keys`` a
    ``sort``'s attributes (columns) and directions (ascending), ``batch_start`` an
    ``externalTimeBatch``'s start (a constant or a column), ``session_key`` a keyed
    ``session``'s key column (``size``: its allowed latency)."""

    name: str
    span: int
    events: str
    clock_column: str | None = None
    size: int = 0
    sort_keys: tuple[tuple[str, bool], ...] = ()
    batch_start: int | str | None = None
    session_key: str | None = None


def _window_shape(window: ast.Window | None, events: str,
                  column_of: Callable[[ast.Expression], str | None],
                  types: dict[str, AttrType], jvm: bool) -> _Shape | None:
    """The window's shape when an operator runs it (``none`` and events ``current`` for no
    window: nothing ever expires), or None."""
    if window is None:
        return _Shape("none", 0, "current") if jvm and events != "expired" else None
    if window.namespace is not None or window.name not in WINDOWS + (JVM_ONLY if jvm else ()):
        return None
    if window.name == "timeLength":
        time, count = (constant_value(a) for a in window.args) if len(window.args) == 2 \
            else (None, None)
        if not (_positive(time) and _positive(count)):
            return None  # (a window of no time or no events: every event leaves at once)
        assert isinstance(time, int) and isinstance(count, int)
        return _Shape(window.name, time, events, size=count)
    if window.name == "session":
        return _session_shape(window, events, column_of, types)
    if window.name == "sort":
        count = constant_value(window.args[0]) if window.args else None
        keys = _sort_keys(window.args[1:], column_of)
        if not _positive(count) or not keys:
            return None
        assert isinstance(count, int)
        return _Shape(window.name, count, events, sort_keys=keys)
    clock_column = None
    batch_start: int | str | None = None
    if window.name in ("externalTime", "externalTimeBatch"):
        arity = 3 if window.name == "externalTimeBatch" else 2  # (a timeout: the runtime's)
        if not 2 <= len(window.args) <= arity:
            return None
        clock_column = column_of(window.args[0])
        if clock_column is None or types[clock_column] is not AttrType.LONG:
            return None
        if len(window.args) == 3:
            batch_start = _batch_start(window.args[2], column_of, types)
            if batch_start is None:
                return None
    elif len(window.args) != 1:
        return None
    if events != "current" and window.name not in SLIDING + JVM_ONLY + \
            (("timeBatch",) if jvm else ()):
        return None
    span = constant_value(window.args[1 if clock_column else 0])
    if not isinstance(span, int) or isinstance(span, bool) or \
            (window.name in ("length", "timeBatch", "lengthBatch", "externalTimeBatch")
             and span <= 0):
        return None  # a length(0) window resets the aggregates on every event
    return _Shape(window.name, span, events, clock_column, batch_start=batch_start)


def _session_shape(window: ast.Window, events: str,
                   column_of: Callable[[ast.Expression], str | None],
                   types: dict[str, AttrType]) -> _Shape | None:
    """``session(gap [, key [, latency]])``, the key a string attribute."""
    args = list(window.args)
    if not 1 <= len(args) <= 3:
        return None
    key = column_of(args[1]) if len(args) > 1 else None
    if len(args) > 1 and (key is None or types[key] is not AttrType.STRING):
        return None
    latency = constant_value(args[2]) if len(args) == 3 else 0
    gap = constant_value(args[0])
    if not (isinstance(gap, int) and _positive(gap) and isinstance(latency, int)
            and not isinstance(latency, bool) and 0 <= latency <= gap):
        return None  # (a latency above the gap: the runtime's error)
    return _Shape("session", gap, events, size=latency, session_key=key)


def _batch_start(arg: ast.Expression, column_of: Callable[[ast.Expression], str | None],
                 types: dict[str, AttrType]) -> int | str | None:
    """An ``externalTimeBatch``'s start: a constant, or a long attribute's column (read
    from the first event), else None."""
    if isinstance(arg, ast.Constant):
        value = constant_value(arg)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    column = column_of(arg)
    return column if column is not None and types[column] is AttrType.LONG else None


def _rate(rate: ast.OutputRate, scheduler: int) -> Rate | None:
    """The limit eddy's Java operator keeps, or None (``snapshot``: the runtime's)."""
    if rate.unit == "snapshot":
        return None
    return Rate(rate.type, rate.unit, rate.value, scheduler)


def _sort_keys(args: Sequence[ast.Expression],
               column_of: Callable[[ast.Expression], str | None]
               ) -> tuple[tuple[str, bool], ...] | None:
    """A ``sort`` window's attributes, each optionally followed by ``'asc'``/``'desc'``."""
    keys: list[tuple[str, bool]] = []
    for arg in args:
        order = constant_value(arg) if isinstance(arg, ast.Constant) else None
        if isinstance(order, str) and keys and order.lower() in ("asc", "desc"):
            keys[-1] = (keys[-1][0], order.lower() == "asc")
            continue
        column = column_of(arg)
        if column is None:
            return None
        keys.append((column, True))
    return tuple(keys)


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _partition(analyzed: AnalyzedApp, info: QueryInfo, stream: str,
               column_of: Callable[[ast.Expression], str | None],
               types: dict[str, AttrType], layout: InputLayout) -> tuple[str, int] | None:
    """``(column, place)`` of the value partition ``info`` is in, when it partitions
    ``stream`` by a plain int, long, string or bool attribute (whose values are equal
    exactly when their Java ``toString``s, Siddhi's partition keys, are), else None. An
    inner stream ``#T`` that a head of the partition fills from such a stream
    (:mod:`eddy.plan.physical.heads`) has its input event's key: the row's column of it; one
    that a link of a chain reads alone (:mod:`eddy.engine.operators.chain`), the attribute
    of ``#T`` its producer selected the key into (:func:`~eddy.plan.physical.heads.
    inner_key`)."""
    assert info.partition is not None
    partition = analyzed.partition(info.partition)
    place = [q.id for q in partition.queries].index(info.id)
    if stream.startswith("#") and stream in dict(layout.streams) and \
            len(layout.streams) == 1:  # a link of a chain reads its producer's #T alone
        key = inner_key(analyzed, info, stream)
        held = None if key is None else column_of(ast.Variable(key))
        return (held, place) if held is not None and types[held] in _PARTITION_TYPES else None
    if stream.startswith("#"):
        fed = fed_stream(analyzed, info)
        if fed is None or fed.stream != stream:
            return None
        stream = fed.source
        columns = dict(zip((a.name for a in layout.attributes(stream)), layout.columns(stream)))
        types = dict(zip(layout.columns(stream), (a.type for a in layout.attributes(stream))))
        column_of = lambda var: (  # noqa: E731 - the head's input's attributes
            columns.get(var.attribute) if isinstance(var, ast.Variable) else None)
    for ptype in partition.partition.partition_types:
        if ptype.stream == stream:
            if not isinstance(ptype, ast.ValuePartitionType):
                return None
            column = column_of(ptype.expression)
            if column is None or types[column] not in _PARTITION_TYPES:
                return None
            return column, place
    return None  # a stream the partition does not split goes to every key


def runs_in_jvm(plan: WindowPlan) -> bool:
    """Whether eddy's Java operator takes ``plan``: a sliding ``time``, ``length`` or
    ``externalTime`` window, a ``lengthBatch`` or ``timeBatch`` or none (on one state key:
    :mod:`.jvm`)."""
    return plan.spec.window in JVM_WINDOWS


def _having(analyzed: AnalyzedApp, info: QueryInfo, having: ast.Expression) -> Node | None:
    """``having`` as a tree over the selected attributes (``o<i>``), or None when it reads
    anything else (an input attribute that is not selected, an aggregate of its own, a
    function): those the runtime keeps."""
    selected = info.scope.with_outputs(info.outputs)
    names = [attribute.name for attribute in info.outputs]

    def column_of(var: ast.Variable) -> str | None:
        try:
            resolved = selected.resolve(var)
        except Exception:  # noqa: BLE001 - anything unusual: leave it to the runtime
            return None
        if resolved.source.kind != "output":
            return None
        return f"o{names.index(resolved.attribute.name)}"

    try:
        return compile_columnar(having, analyzed.type_of, column_of)
    except (NotColumnar, KeyError):
        return None


def _ordering(info: QueryInfo, selector: ast.Selector) -> Ordering | None:
    """The selector's ordering, or None when it orders by an attribute it does not select
    (the runtime orders by the input's hidden value) or a limit or offset is not a count."""
    selected = info.scope.with_outputs(info.outputs)
    names = [attribute.name for attribute in info.outputs]
    keys = []
    for order in selector.order_by:
        try:
            resolved = selected.resolve(order.variable)
        except Exception:  # noqa: BLE001 - anything unusual: leave it to the runtime
            return None
        if resolved.source.kind != "output":
            return None
        keys.append((names.index(resolved.attribute.name), not order.descending))
    counts: list[int | None] = []
    for expression in (selector.limit, selector.offset):
        value = None if expression is None else constant_value(expression)
        if expression is None or (isinstance(value, int) and not isinstance(value, bool)
                                  and value >= 0):
            counts.append(value if isinstance(value, int) else None)
        else:
            return None
    return Ordering(tuple(keys), counts[0], counts[1])


def selected_output(expr: ast.Expression, name: str, column_of: object,
                    types: dict[str, AttrType], arguments: list[str], in_jvm: bool = False
                    ) -> Output | None:
    """The :class:`Output` of selecting ``expr`` as ``name``: ``column_of`` gives (or
    derives) the column of an expression, ``types`` their types, ``arguments`` collects the
    aggregates' argument columns; None when no vectorised operator computes it (``in_jvm``:
    eddy's Java operator takes more)."""
    assert callable(column_of)
    if not isinstance(expr, ast.FunctionCall):  # an attribute, or an expression computed
        column = column_of(expr)
        return None if column is None else Output(name, types[column], "var", column)
    if expr.namespace is not None:
        return None
    if expr.name == "count" and len(expr.args) <= 1:
        if expr.args and column_of(expr.args[0]) is None:
            return None
        return Output(name, AttrType.LONG, "count")
    if in_jvm and expr.name in KEPT and len(expr.args) == 1:
        column = column_of(expr.args[0])
        if column is None or types[column] not in KEPT[expr.name]:
            return None
        kind = _KEPT_TYPES.get(expr.name, types[column])
        if expr.name == "distinctCount":
            return Output(name, kind, expr.name, column)
        if column not in arguments:
            arguments.append(column)
        return Output(name, kind, expr.name, column, arguments.index(column))
    if expr.name not in ("avg", "sum") or len(expr.args) != 1:
        return None
    column = column_of(expr.args[0])
    if column is None:
        return None
    integral = expr.name == "sum" and types[column] in (AttrType.INT, AttrType.LONG)
    if integral and not in_jvm:
        return None  # a wrapping long removed in doubles: the Java operator's, or the runtime's
    if types[column] not in _NUMERIC:
        return None
    if column not in arguments:
        arguments.append(column)
    return Output(name, AttrType.LONG if integral else AttrType.DOUBLE, expr.name, column,
                  arguments.index(column))


def _plain_filter(expr: ast.Expression) -> bool:
    """Only attributes, literals and operators: Spark SQL evaluates those as the runtime
    does (the native path relies on the same); no functions, no clock."""
    if not isinstance(expr, _FILTER_NODES):
        return False
    if isinstance(expr, ast.Variable):
        return expr.stream_index is None and not expr.inner and not expr.fault
    children = [getattr(expr, name) for name in ("left", "right", "expression")
                if isinstance(getattr(expr, name, None), ast.Expression)]
    return all(_plain_filter(c) for c in children)
