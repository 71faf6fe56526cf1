"""SiddhiQL formatter: AST → text in one canonical layout (``eddy fmt``).

The defining property is ``parse(format_app(parse(x))) == parse(x)`` (spans ignored) and
idempotence, ``format_app(parse(format_app(a))) == format_app(a)``. Comments, spacing and the
order of definitions among queries are not in the AST, so they are not kept. What no SiddhiQL
text can spell raises :class:`ValueError`: NaN or infinity, a negative time, a name holding a
back-quote, a string that holds ``'`` or a line break and also ends in ``"`` or holds three
``"`` in a row, a one-element sequence.

Layout
------
* App annotations first, one per line, then a blank line. Definitions follow, one per line;
  a definition that carries annotations (each on its own line above it, nested ones inline:
  ``@source(type='http', @map(type='json'))``) or spans several lines (aggregations,
  functions) is set off by blank lines. A blank line separates the definitions from the
  execution elements and each execution element from the next. The text ends with a newline.
* Annotation elements print as ``key='value'`` (no spaces round ``=``; a key that is not
  dotted names, as in ``topic.list``, is quoted), elements in written order, nested
  annotations after them; ``@name`` alone when it has no content.
* A query is one clause per line: annotations, ``from``, ``select`` (always written, ``*``
  when the selector has no list), ``group by``, ``having``, ``order by`` (``desc`` shown,
  ``asc`` omitted), ``limit``, ``offset``, the output rate, the output, then ``;``. A whole
  ``from`` clause (a join with ``on``/``within``/``per``, a pattern with ``within``) stays on
  one line; an anonymous inner query is written inline: ``from (from S select a return)``.
* ``partition with (…)`` / ``begin`` / the queries, indented four spaces and separated by
  blank lines / ``end;``. A range condition that is an ``or`` is parenthesised.
* ``define aggregation A`` / ``from S`` / ``select …`` / ``group by …`` /
  ``aggregate [by ts] every sec ... year;`` (a range with `` ... ``, a list with ``, ``).
  ``define window W (a int) time(1 min) output all events;``; a function body is kept
  verbatim between its braces.
* Keywords, types and units are lower case. Defaults are left out: ``current events``,
  ``for current events``, ``output all every``. Names that are keywords (time units such as
  ``second`` included) or are not plain ``[A-Za-z_][A-Za-z0-9_]*`` are back-quoted.
* Expressions carry the fewest parentheses Siddhi's precedence allows (``not``/unary minus >
  ``* / %`` > ``+ -`` > ``< <= > >=`` > ``== !=`` > ``in`` > ``and`` > ``or``, all
  left-associative), one space round binary operators. ``Negate`` of a number prints as
  ``-(5)``, as ``-5`` is the literal. Literals keep their type: ``5``, ``5L``, ``5.0``
  (``repr`` of the float), ``5.0f``, ``true``, ``null``. Strings use ``'…'``; else ``"…"``
  when they hold ``'``; else triple double quotes (any ``"`` or control character); else,
  for eddy's parser only, ``'…'`` holding ``"``.
* Time values use the fewest terms, largest unit first (``1 hour 30 min``, ``1 sec 500
  millisec``); a week, month (30 days) or year (365 days, as in Siddhi's Expression.Time)
  is used when it saves a term or ties: 30 days is ``1 month``, 31 days ``31 day``.
* Pattern and sequence states use the fewest parentheses: ``->`` (or ``,``) binds loosest,
  then ``and``/``or``, then ``every``; ``every`` over a chain or a logical pair is written
  ``every (…)``. Counts print as ``<n>``, ``<n:>``, ``<:m>``, ``<n:m>`` or ``*``/``+``/``?``.
  A one-element pattern without ``within`` is parenthesised (``from (S)``), since a bare
  ``from S`` is a plain stream.
* ``format_query`` ends with ``;``; ``format_on_demand`` does not (a store query stands alone)
  and writes ``select`` only after ``from``, before ``insert``/``update or insert``, or when
  it is not ``select *``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable

from eddy.lang.ast import (
    AbsentStreamStateElement, AggregationDefinition, AllAttributes, AnonymousInputStream,
    Annotation,
    AnnotationElement, Attribute, BinaryOperation, Constant, CountStateElement, AttrType,
    Definition, DeleteStream, EveryStateElement, Expression, Filter, FunctionCall,
    FunctionDefinition, In, InputStream, InsertIntoStream, IsNull, IsNullStream,
    JoinInputStream, LogicalStateElement, Negate, NextStateElement, Not, OnDemandQuery,
    OutputAttribute, OutputRate, OutputStream, Partition, PartitionType, Query, ReturnStream,
    Selector, SetAssignment, SiddhiApp, SingleInputStream, StateElement, StateInputStream,
    StoreInput, StreamDefinition, StreamHandler, StreamStateElement, TableDefinition,
    TimeConstant, TriggerDefinition, UpdateOrInsertStream, UpdateStream, ValuePartitionType,
    Variable, Window, WindowDefinition,
)
from eddy.lang.errors import SiddhiAppError

__all__ = ["format_annotation", "format_app", "format_expression", "format_input",
           "format_on_demand", "format_query", "format_selector_tail", "format_time"]

INDENT = "    "

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ANNOTATION_NAME = re.compile(r"(?i:app:)?[A-Za-z_][A-Za-z0-9_]*\Z")
_PROPERTY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*([.:-][A-Za-z_][A-Za-z0-9_]*)*\Z")

# Every keyword token of SiddhiQL.g4, with each spelling the lexer accepts for time units.
KEYWORDS = frozenset("""
    app stream define table from partition window select group by order asc desc limit
    having insert delete update return events into output expired current snapshot for raw
    of as or and on is not within with begin end null every last all first join inner outer
    right left full unidirectional false true string int long float double bool object
    function trigger offset set at in aggregation aggregate per
    year years month months week weeks day days hour hours min minute minutes
    sec second seconds millisec millisecond milliseconds
""".split())

_DAY = 86_400_000
# (keyword, milliseconds) largest first; Siddhi's Expression.Time makes a month 30 days and a
# year 365 days.
_TIME_UNITS: tuple[tuple[str, int], ...] = (
    ("year", 365 * _DAY), ("month", 30 * _DAY), ("week", 7 * _DAY), ("day", _DAY),
    ("hour", 3_600_000), ("min", 60_000), ("sec", 1_000), ("millisec", 1),
)
_CALENDAR_UNITS = ("year", "month", "week")

_DURATION_KEYWORDS = {"SECONDS": "sec", "MINUTES": "min", "HOURS": "hour", "DAYS": "day",
                      "WEEKS": "week", "MONTHS": "month", "YEARS": "year"}

# Binding strength of expression forms; higher binds tighter.
_OR, _AND, _IN, _EQUALITY, _COMPARISON, _ADDITIVE, _MULTIPLICATIVE, _UNARY, _ATOM = range(1, 10)
_BINARY_PRECEDENCE: dict[str, int] = {
    "or": _OR, "and": _AND, "==": _EQUALITY, "!=": _EQUALITY,
    "<": _COMPARISON, "<=": _COMPARISON, ">": _COMPARISON, ">=": _COMPARISON,
    "+": _ADDITIVE, "-": _ADDITIVE, "*": _MULTIPLICATIVE, "/": _MULTIPLICATIVE,
    "%": _MULTIPLICATIVE,
}

# Binding strength of pattern/sequence state forms.
_STATE_NEXT, _STATE_LOGICAL, _STATE_EVERY, _STATE_ATOM = range(4)


# ---------------------------------------------------------------------------------------------
# Lexical pieces
# ---------------------------------------------------------------------------------------------

def _name(name: str) -> str:
    """A name as written: bare when plain and not a keyword, else back-quoted."""
    if _PLAIN_NAME.match(name) and name.lower() not in KEYWORDS:
        return name
    if not name or "`" in name:
        raise ValueError(f"name {name!r} cannot be written in SiddhiQL")
    return f"`{name}`"


def _string(value: str) -> str:
    """A string literal; SiddhiQL has no escapes, so the quote style is chosen to fit."""
    plain = not any(ord(c) < 0x20 for c in value)
    if plain and "'" not in value and '"' not in value:
        return f"'{value}'"
    if plain and '"' not in value:
        return f'"{value}"'
    if '"""' not in value and not value.endswith('"'):
        return f'"""{value}"""'
    if not any(c in value for c in "'\r\n"):
        return f"'{value}'"  # eddy's parser (not Siddhi's) also takes '"' and tabs in '…'
    raise ValueError(f"string {value!r} cannot be written as a SiddhiQL literal")


def _source(stream: str, inner: bool = False, fault: bool = False) -> str:
    return ("#" if inner else "!" if fault else "") + _name(stream)


def _time_terms(millis: int, units: Iterable[tuple[str, int]]) -> list[str]:
    terms: list[str] = []
    for keyword, size in units:
        count, millis = divmod(millis, size)
        if count:
            terms.append(f"{count} {keyword}")
    return terms


def format_time(millis: int) -> str:
    """A time value (``1 hour 30 min``): fewest terms, larger units preferred on a tie."""
    if millis < 0:
        raise ValueError(f"time value {millis} ms is negative")
    if millis == 0:
        return "0 millisec"
    best: list[str] | None = None
    for mask in range(7, -1, -1):  # every subset of the calendar units, larger ones first
        skipped = {u for i, u in enumerate(_CALENDAR_UNITS) if not mask & (4 >> i)}
        terms = _time_terms(millis, (u for u in _TIME_UNITS if u[0] not in skipped))
        if best is None or len(terms) < len(best):
            best = terms
    assert best is not None
    return " ".join(best)


def _literal(constant: Constant) -> str:
    value, kind = constant.value, constant.type
    if kind is AttrType.STRING and isinstance(value, str):
        return _string(value)
    if kind is AttrType.BOOL and isinstance(value, bool):
        return "true" if value else "false"
    if kind is AttrType.OBJECT and value is None:
        return "null"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        raise ValueError(f"constant {value!r} does not fit type {kind.value}")
    if kind is AttrType.INT and isinstance(value, int):
        return str(value)
    if kind is AttrType.LONG and isinstance(value, int):
        return f"{value}L"
    if kind in (AttrType.DOUBLE, AttrType.FLOAT):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"{number} cannot be written as a SiddhiQL literal")
        return repr(number) + ("f" if kind is AttrType.FLOAT else "")
    raise ValueError(f"constant {value!r} does not fit type {kind.value}")


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------

def format_expression(e: Expression) -> str:
    """An expression with the fewest parentheses Siddhi's precedence allows."""
    return _expression(e, 0)


def _expression(e: Expression, context: int) -> str:
    """``e`` as an operand of a form that binds with strength ``context``."""
    text, strength = _expression_form(e)
    return f"({text})" if strength < context else text


def _expression_form(e: Expression) -> tuple[str, int]:
    if isinstance(e, BinaryOperation):
        p = _BINARY_PRECEDENCE[e.op]
        return f"{_expression(e.left, p)} {e.op} {_expression(e.right, p + 1)}", p
    if isinstance(e, Not):
        return f"not {_expression(e.expression, _UNARY)}", _UNARY
    if isinstance(e, Negate):
        operand = _expression(e.expression, _ATOM)
        if operand[0].isdigit() or operand[0] == "-":
            operand = f"({operand})"  # ``-5`` would read back as the literal -5
        return f"-{operand}", _UNARY
    if isinstance(e, In):
        return f"{_expression(e.expression, _IN)} in {_name(e.source)}", _IN
    if isinstance(e, IsNull):
        return f"{_expression(e.expression, _ATOM)} is null", _ATOM
    if isinstance(e, IsNullStream):
        return f"{_source(e.stream, e.inner, e.fault)}{_index(e.stream_index)} is null", _ATOM
    return _atom(e), _ATOM


def _atom(e: Expression) -> str:
    if isinstance(e, Constant):
        return _literal(e)
    if isinstance(e, TimeConstant):
        return format_time(e.millis)
    if isinstance(e, Variable):
        return _variable(e)
    if isinstance(e, FunctionCall):
        return _call(e.namespace, e.name, e.args)
    if isinstance(e, AllAttributes):
        return "*"
    raise TypeError(f"not an expression: {e!r}")


def _index(index: int | None) -> str:
    if index is None:
        return ""
    if index >= 0:
        return f"[{index}]"
    return "[last]" if index == -1 else f"[last-{-index - 1}]"


def _variable(v: Variable) -> str:
    if v.stream is None:
        return _name(v.attribute)
    return f"{_source(v.stream, v.inner, v.fault)}{_index(v.stream_index)}.{_name(v.attribute)}"


def _call(namespace: str | None, name: str, args: Iterable[Expression]) -> str:
    prefix = f"{_name(namespace)}:" if namespace else ""
    callee = name if _bare_callee(name) else _name(name)
    return f"{prefix}{callee}({', '.join(format_expression(a) for a in args)})"


@functools.lru_cache(maxsize=256)
def _bare_callee(name: str) -> bool:
    """Whether ``name(…)`` reads back as a call of ``name`` although ``name`` is a keyword.

    Aggregates such as ``and(…)`` and ``or(…)`` are keywords the grammar also accepts as
    function names; writing them bare keeps formatted apps looking like the ones people
    write. The parser itself decides, so the formatter cannot drift from the grammar."""
    if not _PLAIN_NAME.match(name) or name.lower() not in KEYWORDS:
        return False
    from eddy.lang.parser import parse_expression

    try:
        parsed = parse_expression(f"{name}(x)")
    except SiddhiAppError:
        return False
    return isinstance(parsed, FunctionCall) and parsed.name == name and parsed.namespace is None


# ---------------------------------------------------------------------------------------------
# Annotations
# ---------------------------------------------------------------------------------------------

def format_annotation(a: Annotation) -> str:
    """``@name(key='value', 'bare', @nested(…))``, or ``@name`` when it has no content."""
    name = a.name if _ANNOTATION_NAME.match(a.name) else _name(a.name)
    parts = [_annotation_element(e) for e in a.elements]
    parts += [format_annotation(n) for n in a.annotations]
    return f"@{name}({', '.join(parts)})" if parts else f"@{name}"


def _annotation_element(e: AnnotationElement) -> str:
    if e.key is None:
        return _string(e.value)
    key = e.key if _PROPERTY_NAME.match(e.key) else _string(e.key)
    return f"{key}={_string(e.value)}"


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def _handler(h: StreamHandler) -> str:
    if isinstance(h, Filter):
        return f"[{format_expression(h.expression)}]"
    if isinstance(h, Window):
        return "#window." + _call(h.namespace, h.name, h.args)
    return "#" + _call(h.namespace, h.name, h.args)


def _single_input(s: SingleInputStream) -> str:
    text = _source(s.stream, s.inner, s.fault) + "".join(_handler(h) for h in s.handlers)
    return f"{text} as {_name(s.alias)}" if s.alias is not None else text


def _within_per(within: tuple[Expression, ...], per: Expression | None) -> str:
    text = f" within {', '.join(format_expression(w) for w in within)}" if within else ""
    return text + (f" per {format_expression(per)}" if per is not None else "")


def _join_input(j: JoinInputStream) -> str:
    left = _single_input(j.left) + (" unidirectional" if j.unidirectional == "left" else "")
    right = _single_input(j.right) + (" unidirectional" if j.unidirectional == "right" else "")
    on = f" on {format_expression(j.on)}" if j.on is not None else ""
    return f"{left} {j.join_type} {right}{on}{_within_per(j.within, j.per)}"


def _state(e: StateElement, separator: str, context: int) -> str:
    text, strength = _state_form(e, separator)
    return f"({text})" if strength < context else text


def _state_form(e: StateElement, separator: str) -> tuple[str, int]:
    if isinstance(e, NextStateElement):
        left = _state(e.element, separator, _STATE_LOGICAL)
        return f"{left}{separator}{_state(e.next, separator, _STATE_NEXT)}", _STATE_NEXT
    if isinstance(e, LogicalStateElement):
        left = _state(e.left, separator, _STATE_ATOM)
        return f"{left} {e.op} {_state(e.right, separator, _STATE_ATOM)}", _STATE_LOGICAL
    if isinstance(e, EveryStateElement):
        return f"every {_state(e.element, separator, _STATE_ATOM)}", _STATE_EVERY
    if isinstance(e, StreamStateElement):
        return _stream_state(e), _STATE_ATOM
    if isinstance(e, CountStateElement):
        return _stream_state(e.element) + _count(e), _STATE_ATOM
    if isinstance(e, AbsentStreamStateElement):
        wait = f" for {format_time(e.waiting_time.millis)}" if e.waiting_time else ""
        return f"not {_single_input(e.stream)}{wait}", _STATE_ATOM
    raise TypeError(f"not a pattern state: {e!r}")


def _stream_state(e: StreamStateElement) -> str:
    ref = f"{_name(e.ref)}=" if e.ref is not None else ""
    return ref + _single_input(e.stream)


def _count(e: CountStateElement) -> str:
    low, high = e.min_count, e.max_count
    if e.notation != "collect":
        return e.notation
    if high is None:
        return f"<{low}:>"
    if low == high:
        return f"<{low}>"
    return f"<:{high}>" if low == 0 else f"<{low}:{high}>"


def _state_input(s: StateInputStream) -> str:
    if s.kind == "sequence" and not isinstance(s.state, NextStateElement):
        raise ValueError("a sequence needs at least two elements")
    text = _state(s.state, " -> " if s.kind == "pattern" else ", ", _STATE_NEXT)
    if s.within is not None:
        return f"{text} within {format_time(s.within.millis)}"
    if isinstance(s.state, StreamStateElement) and s.state.ref is None:
        return f"({text})"  # a bare `from S` would be a plain stream, not a pattern
    return text


def format_input(i: InputStream) -> str:
    """A query's input as its ``from`` clause writes it, without the ``from``."""
    if isinstance(i, SingleInputStream):
        return _single_input(i)
    if isinstance(i, JoinInputStream):
        return _join_input(i)
    if isinstance(i, StateInputStream):
        return _state_input(i)
    if isinstance(i, AnonymousInputStream):
        if i.query.annotations:
            raise ValueError("an anonymous inner query cannot carry annotations")
        return "(" + " ".join(_query_clauses(i.query)) + ")"
    raise TypeError(f"not an input stream: {i!r}")


# ---------------------------------------------------------------------------------------------
# Selection, output rate and output
# ---------------------------------------------------------------------------------------------

def _output_attribute(a: OutputAttribute) -> str:
    text = format_expression(a.expression)
    return f"{text} as {_name(a.rename)}" if a.rename is not None else text


def _selector_clauses(s: Selector) -> list[str]:
    if s.attributes is None:
        select = "select *"
    elif not s.attributes:
        raise ValueError("a selector needs at least one attribute (or None for '*')")
    else:
        select = "select " + ", ".join(_output_attribute(a) for a in s.attributes)
    return [select, *format_selector_tail(s)]


def format_selector_tail(s: Selector) -> list[str]:
    """The clauses after the select list, those present of ``group by``, ``having``,
    ``order by``, ``limit`` and ``offset``; ``eddy explain`` shows them as query steps."""
    clauses: list[str] = []
    if s.group_by:
        clauses.append("group by " + ", ".join(_variable(v) for v in s.group_by))
    if s.having is not None:
        clauses.append(f"having {format_expression(s.having)}")
    if s.order_by:
        clauses.append("order by " + ", ".join(
            _variable(o.variable) + (" desc" if o.descending else "") for o in s.order_by))
    if s.limit is not None:
        clauses.append(f"limit {format_expression(s.limit)}")
    if s.offset is not None:
        clauses.append(f"offset {format_expression(s.offset)}")
    return clauses


def _output_rate(r: OutputRate) -> str:
    if r.unit == "snapshot":
        return f"output snapshot every {format_time(r.value)}"
    kind = "" if r.type == "all" else f"{r.type} "
    every = f"{r.value} events" if r.unit == "events" else format_time(r.value)
    return f"output {kind}every {every}"


def _set_clause(assignments: tuple[SetAssignment, ...] | None) -> str:
    if not assignments:
        return ""
    return " set " + ", ".join(
        f"{_variable(a.variable)} = {format_expression(a.value)}" for a in assignments)


def _output(o: OutputStream) -> str:
    events = "" if o.event_type == "current" else f"{o.event_type} events"
    for_events = f" for {events}" if events else ""
    if isinstance(o, InsertIntoStream):
        return f"insert {events + ' ' if events else ''}into {_source(o.target, o.inner, o.fault)}"
    if isinstance(o, ReturnStream):
        return f"return {events}" if events else "return"
    if isinstance(o, DeleteStream):
        on = f" on {format_expression(o.on)}" if o.on is not None else ""
        return f"delete {_name(o.target)}{for_events}{on}"
    if isinstance(o, (UpdateStream, UpdateOrInsertStream)):
        on = f" on {format_expression(o.on)}" if o.on is not None else ""
        verb = "update" if isinstance(o, UpdateStream) else "update or insert into"
        return f"{verb} {_name(o.target)}{for_events}{_set_clause(o.set)}{on}"
    raise TypeError(f"not a query output: {o!r}")


# ---------------------------------------------------------------------------------------------
# Queries and partitions
# ---------------------------------------------------------------------------------------------

def _query_clauses(q: Query) -> list[str]:
    """The clauses of a query, one per line; a clause holds a newline only inside a string."""
    clauses = [format_annotation(a) for a in q.annotations]
    clauses.append(f"from {format_input(q.input)}")
    clauses += _selector_clauses(q.selector)
    if q.output_rate is not None:
        clauses.append(_output_rate(q.output_rate))
    clauses.append(_output(q.output))
    return clauses


def format_query(q: Query) -> str:
    """A query, one clause per line, ending with ``;``."""
    return "\n".join(_query_clauses(q)) + ";"


def _partition_type(t: PartitionType) -> str:
    if isinstance(t, ValuePartitionType):
        return f"{format_expression(t.expression)} of {_name(t.stream)}"
    ranges = " or ".join(f"{_expression(r.condition, _AND)} as {_string(r.key)}"
                         for r in t.ranges)
    return f"{ranges} of {_name(t.stream)}"


def _partition(p: Partition) -> str:
    lines = [format_annotation(a) for a in p.annotations]
    lines.append(f"partition with ({', '.join(_partition_type(t) for t in p.partition_types)})")
    lines.append("begin")
    for i, query in enumerate(p.queries):
        if i:
            lines.append("")
        lines += [INDENT + c for c in _query_clauses(query)]
        lines[-1] += ";"
    lines.append("end;")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Definitions and the app
# ---------------------------------------------------------------------------------------------

def _attributes(attributes: tuple[Attribute, ...]) -> str:
    return "(" + ", ".join(f"{_name(a.name)} {a.type.siddhi_name}" for a in attributes) + ")"


def _definition_body(d: Definition) -> str:
    name = _name(d.name)
    if isinstance(d, StreamDefinition):
        return f"define stream {name} {_attributes(d.attributes)};"
    if isinstance(d, TableDefinition):
        return f"define table {name} {_attributes(d.attributes)};"
    if isinstance(d, WindowDefinition):
        if d.window is None:
            raise ValueError(f"window {d.name!r} has no window function")
        window = _call(d.window.namespace, d.window.name, d.window.args)
        output = f" output {d.output_event_type} events" if d.output_event_type else ""
        return f"define window {name} {_attributes(d.attributes)} {window}{output};"
    if isinstance(d, TriggerDefinition):
        if d.at_every is not None:
            return f"define trigger {name} at every {format_time(d.at_every.millis)};"
        if d.at is None:
            raise ValueError(f"trigger {d.name!r} has neither 'at every' nor 'at'")
        return f"define trigger {name} at {_string(d.at)};"
    if isinstance(d, FunctionDefinition):
        kind = d.return_type.siddhi_name
        return f"define function {name}[{_name(d.language)}] return {kind} {{{d.body}}};"
    if isinstance(d, AggregationDefinition):
        return _aggregation(d)
    raise TypeError(f"not a definition: {d!r}")


def _aggregation(d: AggregationDefinition) -> str:
    if d.input is None:
        raise ValueError(f"aggregation {d.name!r} has no input stream")
    by = f"by {_variable(d.aggregate_by)} " if d.aggregate_by is not None else ""
    durations = (" ... " if d.is_range else ", ").join(_DURATION_KEYWORDS[u] for u in d.durations)
    lines = [f"define aggregation {_name(d.name)}", f"from {_single_input(d.input)}"]
    lines += _selector_clauses(d.selector)
    lines.append(f"aggregate {by}every {durations};")
    return "\n".join(lines)


def _definition(d: Definition) -> str:
    return "\n".join([format_annotation(a) for a in d.annotations] + [_definition_body(d)])


def format_app(app: SiddhiApp) -> str:
    """A whole app in the canonical layout, ending with a newline."""
    sections: list[str] = []
    if app.annotations:
        sections.append("\n".join(format_annotation(a) for a in app.annotations))
    if app.definitions:
        texts = [_definition(d) for d in app.definitions]
        block = texts[0]
        for previous, text in zip(texts, texts[1:]):
            block += "\n\n" + text if "\n" in previous or "\n" in text else "\n" + text
        sections.append(block)
    for element in app.elements:
        sections.append(format_query(element) if isinstance(element, Query)
                        else _partition(element))
    return "\n\n".join(sections) + "\n"


# ---------------------------------------------------------------------------------------------
# On-demand queries
# ---------------------------------------------------------------------------------------------

def _store_input(s: StoreInput) -> str:
    alias = f" as {_name(s.alias)}" if s.alias is not None else ""
    on = f" on {format_expression(s.on)}" if s.on is not None else ""
    return f"{_name(s.source)}{alias}{on}{_within_per(s.within, s.per)}"


def format_on_demand(q: OnDemandQuery) -> str:
    """An on-demand (store) query, one clause per line, without a trailing ``;``."""
    clauses: list[str] = []
    if q.input is not None:
        clauses.append(f"from {_store_input(q.input)}")
    needs_selector = isinstance(q.output, (InsertIntoStream, UpdateOrInsertStream))
    if q.input is not None or needs_selector or q.selector != Selector():
        clauses += _selector_clauses(q.selector)
    if q.output is not None and not isinstance(q.output, ReturnStream):
        clauses.append(_output(q.output))
    return "\n".join(clauses)
