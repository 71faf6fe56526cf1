"""Map lark's parse tree of SiddhiQL onto the AST of :mod:`eddy.lang.ast`.

The grammar (``siddhiql.lark``) accepts a slight superset where that keeps it LALR(1): a
window is one of a stream's handlers, patterns and sequences share one element grammar. The
checks that narrow it back to Siddhi's language live here and are reported as syntax issues
at the offending text, so an app is either well formed or rejected with every such fault.

Normalisations, so that equal apps give equal ASTs: an unparenthesised chain ``A -> B -> C``
is right-nested (``Next(A, Next(B, C))``) and parentheses keep their grouping; names lose
their back-quotes; keywords are lower-cased; literals get their Siddhi type and ``-1`` is a
:class:`~eddy.lang.ast.Constant` (but ``-(1)`` is a :class:`~eddy.lang.ast.Negate`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeVar, cast

from lark import Token, Transformer, v_args
from lark.tree import Meta

from eddy.lang import ast
from eddy.lang.errors import AppIssue, Span

_N = TypeVar("_N", bound=ast.OutputStream)
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1
_DAY = 86_400_000
# Time units, largest first: (spellings, milliseconds). Siddhi's Expression.Time makes a month
# 30 days and a year 365 days (siddhi-query-api, 5.1.x).
_UNITS: tuple[tuple[tuple[str, ...], int, ast.Duration | None], ...] = (
    (("year", "years"), 365 * _DAY, "YEARS"),
    (("month", "months"), 30 * _DAY, "MONTHS"),
    (("week", "weeks"), 7 * _DAY, "WEEKS"),
    (("day", "days"), _DAY, "DAYS"),
    (("hour", "hours"), 3_600_000, "HOURS"),
    (("min", "minute", "minutes"), 60_000, "MINUTES"),
    (("sec", "second", "seconds"), 1_000, "SECONDS"),
    (("millisec", "millisecond", "milliseconds"), 1, None),
)
_UNIT_BY_SPELLING = {spelling: (rank, millis, duration)
                     for rank, (spellings, millis, duration) in enumerate(_UNITS)
                     for spelling in spellings}
_OPERATORS: dict[str, ast.BinaryOperator] = {
    "or_op": "or", "and_op": "and", "eq_op": "==", "ne_op": "!=", "ge_op": ">=", "le_op": "<=",
    "gt_op": ">", "lt_op": "<", "add_op": "+", "sub_op": "-", "mul_op": "*", "div_op": "/",
    "mod_op": "%",
}
_CLAUSES = {"group_by": "group_by", "having": "having", "order_by": "order_by",
            "limit": "limit", "offset": "offset"}


def meta_span(meta: Meta) -> Span:
    """A lark rule position (1-based columns) as a :class:`Span` (0-based, end exclusive)."""
    return Span(meta.line, meta.column - 1, meta.end_line, meta.end_column - 1)


def token_span(token: Token) -> Span:
    """A lark token position as a :class:`Span`."""
    return Span(token.line or 0, (token.column or 1) - 1, token.end_line or 0,
                (token.end_column or 1) - 1)


def unquote(text: str) -> str:
    """The value of a '…', "…" or \"\"\"…\"\"\" literal (SiddhiQL has no escapes)."""
    if text.startswith('"""') and len(text) >= 6:
        return text[3:-3]
    return text[1:-1]


def _is_name(item: Any) -> bool:
    return isinstance(item, Token) and item.type == "ID"


# Values that rules hand to their parents when they are not AST nodes themselves.

class _Annotations(NamedTuple):
    items: tuple[ast.Annotation, ...]


class _Source(NamedTuple):
    name: str
    inner: bool
    fault: bool


class _EventType(NamedTuple):
    value: ast.EventType


class _SetClause(NamedTuple):
    assignments: tuple[ast.SetAssignment, ...]


class _WithinRange(NamedTuple):
    within: tuple[ast.Expression, ...]
    per: ast.Expression


class _SelectList(NamedTuple):
    attributes: tuple[ast.OutputAttribute, ...] | None


class _Clause(NamedTuple):
    """One of ``group by``, ``having``, ``order by``, ``limit``, ``offset``."""

    kind: str
    value: Any


class _Durations(NamedTuple):
    durations: tuple[ast.Duration, ...]
    is_range: bool


class _Count(NamedTuple):
    min_count: int
    max_count: int | None
    notation: Literal["collect", "*", "+", "?"]
    span: Span


class _StreamRef(NamedTuple):
    name: str
    index: int | None
    inner: bool
    fault: bool


class _TimePart(NamedTuple):
    rank: int
    millis: int
    span: Span


@dataclass(frozen=True)
class _State:
    """A pattern/sequence element with the facts its enclosing stream must check."""

    element: ast.StateElement
    separators: frozenset[str] = frozenset()  # '->' and ',' used in parenthesised groups
    starred: tuple[Span, ...] = ()            # where '*', '+' or '?' counts are
    untimed_absent: bool = False              # `not S` without `for`: only in `X and not S`


def _split_annotations(children: list[Any]) -> tuple[tuple[ast.Annotation, ...], list[Any]]:
    if children and isinstance(children[0], _Annotations):
        return children[0].items, children[1:]
    return (), children


def _first(items: list[Any], kind: type[Any]) -> Any:
    return next((i for i in items if isinstance(i, kind)), None)


def _prefixed(children: list[Any]) -> tuple[bool, bool, list[Any]]:
    """Splits a leading ``#`` (inner) or ``!`` (fault) token off ``children``."""
    head = children[0]
    if isinstance(head, Token) and head.type != "ID":
        return head == "#", head == "!", children[1:]
    return False, False, children


@v_args(meta=True)
class AstBuilder(Transformer[Token, Any]):
    """Turns the tree of one parse into AST nodes; ``issues`` collects structural faults."""

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.issues: list[AppIssue] = []
        self._edge_literals: dict[tuple[int, int], Span] = {}  # 2147483648 is fine only as -…

    def _fault(self, message: str, span: Span, hint: str | None = None) -> None:
        self.issues.append(AppIssue("syntax", message, span, hint))

    def finish(self) -> None:
        """Reports the integer literals one past the maximum that no minus sign claimed."""
        for span in self._edge_literals.values():
            self._fault("integer literal out of range", span, "use a long literal such as 1L")
        self._edge_literals.clear()

    def __default__(self, data: Any, children: list[Any], meta: Meta) -> Any:
        """The binary operators, which differ only in their symbol."""
        op = _OPERATORS.get(str(data))
        if op is None:
            raise AssertionError(f"grammar rule {data!r} has no AST mapping")
        return ast.BinaryOperation(op, children[0], children[1], span=meta_span(meta))

    # -- names and annotations ----------------------------------------------------------------

    def name(self, meta: Meta, children: list[Token]) -> Token:
        token = children[0]
        if token.type == "QUOTED_ID":
            return Token.new_borrow_pos("ID", token[1:-1], token)
        return token

    def app_word(self, meta: Meta, children: list[Token]) -> Token:
        return Token.new_borrow_pos("ID", str(children[0]), children[0])

    def app_annotation(self, meta: Meta, children: list[Any]) -> ast.Annotation:
        app, name, *elements = children
        return ast.Annotation(f"{app}:{name}", tuple(elements), span=meta_span(meta))

    def annotations(self, meta: Meta, children: list[ast.Annotation]) -> _Annotations:
        return _Annotations(tuple(children))

    def annotation(self, meta: Meta, children: list[Any]) -> ast.Annotation:
        name, *items = children
        elements = tuple(i for i in items if isinstance(i, ast.AnnotationElement))
        nested = tuple(i for i in items if isinstance(i, ast.Annotation))
        return ast.Annotation(str(name), elements, nested, span=meta_span(meta))

    def annotation_element(self, meta: Meta, children: list[Any]) -> ast.AnnotationElement:
        key = children[0] if len(children) == 2 else None
        return ast.AnnotationElement(key, unquote(children[-1]), span=meta_span(meta))

    def property_name(self, meta: Meta, children: list[Token]) -> str:
        if children[0].type == "STRING":
            return unquote(children[0])
        return "".join(children)  # names and the '.', '-', ':' between them

    # -- definitions --------------------------------------------------------------------------

    def attribute_type(self, meta: Meta, children: list[Token]) -> ast.AttrType:
        return ast.AttrType[children[0].upper()]

    def attribute(self, meta: Meta, children: list[Any]) -> ast.Attribute:
        return ast.Attribute(str(children[0]), children[1], span=meta_span(meta))

    def attribute_list(self, meta: Meta, children: list[ast.Attribute]) -> tuple[ast.Attribute, ...]:
        return tuple(children)

    def stream_definition(self, meta: Meta, children: list[Any]) -> ast.StreamDefinition:
        annotations, (name, attributes) = _split_annotations(children)
        return ast.StreamDefinition(str(name), annotations, attributes, span=meta_span(meta))

    def table_definition(self, meta: Meta, children: list[Any]) -> ast.TableDefinition:
        annotations, (name, attributes) = _split_annotations(children)
        return ast.TableDefinition(str(name), annotations, attributes, span=meta_span(meta))

    def window_definition(self, meta: Meta, children: list[Any]) -> ast.WindowDefinition:
        annotations, (name, attributes, call, *output) = _split_annotations(children)
        window = ast.Window(call.namespace, call.name, call.args, span=call.span)
        return ast.WindowDefinition(str(name), annotations, attributes, window,
                                    output[0].value if output else None, span=meta_span(meta))

    def trigger_definition(self, meta: Meta, children: list[Any]) -> ast.TriggerDefinition:
        annotations, (name, at) = _split_annotations(children)
        if isinstance(at, ast.TimeConstant):
            return ast.TriggerDefinition(str(name), annotations, at_every=at, span=meta_span(meta))
        return ast.TriggerDefinition(str(name), annotations, at=unquote(at), span=meta_span(meta))

    def function_definition(self, meta: Meta, children: list[Any]) -> ast.FunctionDefinition:
        annotations, (name, language, return_type, body) = _split_annotations(children)
        return ast.FunctionDefinition(str(name), annotations, str(language), return_type,
                                      str(body)[1:-1], span=meta_span(meta))

    def duration(self, meta: Meta, children: list[Token]) -> ast.Duration:
        return cast(ast.Duration, _UNIT_BY_SPELLING[children[0].lower()][2])

    def duration_range(self, meta: Meta, children: list[ast.Duration]) -> _Durations:
        return _Durations(tuple(children), True)

    def duration_list(self, meta: Meta, children: list[ast.Duration]) -> _Durations:
        return _Durations(tuple(children), False)

    def aggregation_selection(self, meta: Meta, children: list[Any]) -> ast.Selector:
        return self.query_section(meta, children)

    def aggregation_definition(self, meta: Meta, children: list[Any]) -> ast.AggregationDefinition:
        annotations, (name, stream, selector, *rest) = _split_annotations(children)
        durations: _Durations = rest[-1]
        return ast.AggregationDefinition(
            str(name), annotations, stream, selector, _first(rest, ast.Variable),
            durations.durations, durations.is_range, span=meta_span(meta))

    # -- single and joined streams ------------------------------------------------------------

    def source(self, meta: Meta, children: list[Token]) -> _Source:
        inner, fault, rest = _prefixed(children)
        return _Source(str(rest[0]), inner, fault)

    def handlers(self, meta: Meta, children: list[ast.StreamHandler]) -> tuple[ast.StreamHandler, ...]:
        for extra in [h for h in children if isinstance(h, ast.Window)][1:]:
            self._fault("a stream can have only one window", extra.span)
        return tuple(children)

    def filter(self, meta: Meta, children: list[ast.Expression]) -> ast.Filter:
        return ast.Filter(children[0], span=meta_span(meta))

    def stream_function(self, meta: Meta, children: list[ast.FunctionCall]) -> ast.StreamFunction:
        call = children[0]
        return ast.StreamFunction(call.namespace, call.name, call.args, span=meta_span(meta))

    def window(self, meta: Meta, children: list[ast.FunctionCall]) -> ast.Window:
        call = children[0]
        return ast.Window(call.namespace, call.name, call.args, span=meta_span(meta))

    def basic_source(self, meta: Meta, children: list[Any]) -> ast.SingleInputStream:
        source: _Source = children[0]
        handlers = children[1] if len(children) > 1 else ()
        return ast.SingleInputStream(source.name, handlers, inner=source.inner,
                                     fault=source.fault, span=meta_span(meta))

    def single_stream(self, meta: Meta, children: list[Any]) -> ast.SingleInputStream:
        alias = str(children[1]) if len(children) > 1 else None
        return dataclasses.replace(children[0], alias=alias, span=meta_span(meta))

    def join_type(self, meta: Meta, children: list[Token]) -> ast.JoinType:
        return cast(ast.JoinType, " ".join(c.lower() for c in children))

    def within_range(self, meta: Meta, children: list[ast.Expression]) -> _WithinRange:
        return _WithinRange(tuple(children[:-1]), children[-1])

    def join(self, meta: Meta, children: list[Any],
             unidirectional: Literal["left", "right"] | None = None) -> ast.JoinInputStream:
        left, join_type, right, *tail = children
        for side in (left, right):
            window = side.window
            if window is not None and side.handlers[-1] is not window:
                after = side.handlers[side.handlers.index(window) + 1]
                self._fault("a joined stream cannot have handlers after its window", after.span)
        within: _WithinRange | None = _first(tail, _WithinRange)
        return ast.JoinInputStream(
            left, join_type, right, _first(tail, ast.Expression), unidirectional,
            within.within if within else (), within.per if within else None,
            span=meta_span(meta))

    def join_left_uni(self, meta: Meta, children: list[Any]) -> ast.JoinInputStream:
        return self.join(meta, children, "left")

    def join_right_uni(self, meta: Meta, children: list[Any]) -> ast.JoinInputStream:
        return self.join(meta, children, "right")

    def anonymous_query(self, meta: Meta, children: list[Any]) -> ast.Query:
        return self._query(meta, (), children)

    def anonymous_stream(self, meta: Meta, children: list[Any]) -> ast.AnonymousInputStream:
        inner = children[0]
        query = inner.query if isinstance(inner, ast.AnonymousInputStream) else inner
        return ast.AnonymousInputStream(query, span=meta_span(meta))

    # -- patterns and sequences ---------------------------------------------------------------

    def _state(self, item: Any) -> _State:
        """An element as a :class:`_State`; a plain source becomes an unnamed stream state."""
        if isinstance(item, _State):
            return item
        self._check_no_window(item)
        return _State(ast.StreamStateElement(item, None, span=item.span))

    def _check_no_window(self, stream: ast.SingleInputStream) -> None:
        if stream.window is not None:
            self._fault("a pattern or sequence input cannot have a window", stream.window.span)

    def _chain(self, items: list[Any], separator: str) -> _State:
        """``A sep B sep C`` as ``Next(A, Next(B, C))``."""
        states = [self._state(i) for i in items]
        result = states[-1].element
        for state in reversed(states[:-1]):
            result = ast.NextStateElement(state.element, result,
                                          span=state.element.span.cover(result.span))
        return _State(result, frozenset({separator}).union(*(s.separators for s in states)),
                      tuple(span for s in states for span in s.starred),
                      any(s.untimed_absent for s in states))

    def named_source(self, meta: Meta, children: list[Any]) -> _State:
        ref, stream = children
        self._check_no_window(stream)
        return _State(ast.StreamStateElement(stream, str(ref), span=meta_span(meta)))

    def collect(self, meta: Meta, children: list[Token]) -> _Count:
        text = "".join(children)
        low, colon, high = text.partition(":")
        if not colon:
            return _Count(int(low), int(low), "collect", meta_span(meta))
        return _Count(int(low or 0), int(high) if high else None, "collect", meta_span(meta))

    def sequence_count(self, meta: Meta, children: list[Token]) -> _Count:
        symbol = cast(Literal["*", "+", "?"], str(children[0]))
        low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[symbol]
        return _Count(low, high, symbol, meta_span(meta))

    def counted_state(self, meta: Meta, children: list[Any]) -> _State:
        state, count = self._state(children[0]), children[1]
        element = cast(ast.StreamStateElement, state.element)
        counted = ast.CountStateElement(element, count.min_count, count.max_count,
                                        count.notation, span=meta_span(meta))
        starred = (count.span,) if count.notation != "collect" else ()
        return _State(counted, starred=starred)

    def every_state(self, meta: Meta, children: list[Any]) -> _State:
        state = self._state(children[0])
        every = ast.EveryStateElement(state.element, span=meta_span(meta))
        return dataclasses.replace(state, element=every)

    def absent_state(self, meta: Meta, children: list[Any]) -> _State:
        self._check_no_window(children[0])
        return _State(ast.AbsentStreamStateElement(children[0], children[1],
                                                   span=meta_span(meta)))

    def absent_operand(self, meta: Meta, children: list[Any]) -> _State:
        self._check_no_window(children[0])
        element = ast.AbsentStreamStateElement(children[0], None, span=meta_span(meta))
        return _State(element, untimed_absent=True)

    def _logical(self, meta: Meta, children: list[Any], op: Literal["and", "or"]) -> _State:
        left, right = self._state(children[0]), self._state(children[1])
        untimed = [s for s in (left, right) if s.untimed_absent]
        absent = [s for s in (left, right) if isinstance(s.element, ast.AbsentStreamStateElement)]
        if untimed and (op == "or" or len(absent) == 2):
            self._fault(f"'not' in '{op}' needs a waiting time here ('not S for 5 sec')",
                        untimed[0].element.span)
        element = ast.LogicalStateElement(left.element, op, right.element, span=meta_span(meta))
        return _State(element, starred=left.starred + right.starred)

    def logical_and(self, meta: Meta, children: list[Any]) -> _State:
        return self._logical(meta, children, "and")

    def logical_or(self, meta: Meta, children: list[Any]) -> _State:
        return self._logical(meta, children, "or")

    def lone_group(self, meta: Meta, children: list[Any]) -> _State:
        return self._state(children[0])

    def pattern_group(self, meta: Meta, children: list[Any]) -> _State:
        return self._chain(children, "->")

    def sequence_group(self, meta: Meta, children: list[Any]) -> _State:
        return self._chain(children, ",")

    def _state_stream(self, meta: Meta, children: list[Any],
                      kind: Literal["pattern", "sequence"]) -> ast.StateInputStream:
        within = children[-1] if isinstance(children[-1], ast.TimeConstant) else None
        items = children[:-1] if within is not None else children
        separator = "->" if kind == "pattern" else ","
        state = self._chain(items, separator)
        if len(state.separators) > 1:
            self._fault(f"a {kind} separates its elements with '{separator}' only",
                        meta_span(meta))
        if kind == "pattern":
            for span in state.starred:
                self._fault("'*', '+' and '?' are for sequences; a pattern counts with <n:m>",
                            span)
        if state.untimed_absent:
            self._fault("'not S' needs a waiting time here ('not S for 5 sec')",
                        state.element.span)
        return ast.StateInputStream(kind, state.element, within, span=meta_span(meta))

    def pattern_stream(self, meta: Meta, children: list[Any]) -> ast.StateInputStream:
        return self._state_stream(meta, children, "pattern")

    def sequence_stream(self, meta: Meta, children: list[Any]) -> ast.StateInputStream:
        return self._state_stream(meta, children, "sequence")

    # -- selection, output rate, outputs ------------------------------------------------------

    def select_all(self, meta: Meta, children: list[Any]) -> _SelectList:
        return _SelectList(None)

    def select_list(self, meta: Meta, children: list[ast.OutputAttribute]) -> _SelectList:
        return _SelectList(tuple(children))

    def output_attribute(self, meta: Meta, children: list[ast.Variable]) -> ast.OutputAttribute:
        return ast.OutputAttribute(children[0], None, span=meta_span(meta))

    def renamed_attribute(self, meta: Meta, children: list[Any]) -> ast.OutputAttribute:
        return ast.OutputAttribute(children[0], str(children[1]), span=meta_span(meta))

    def group_by(self, meta: Meta, children: list[ast.Variable]) -> _Clause:
        return _Clause("group_by", tuple(children))

    def having(self, meta: Meta, children: list[ast.Expression]) -> _Clause:
        return _Clause("having", children[0])

    def order_by(self, meta: Meta, children: list[ast.OrderByAttribute]) -> _Clause:
        return _Clause("order_by", tuple(children))

    def order_by_item(self, meta: Meta, children: list[Any]) -> ast.OrderByAttribute:
        order = children[1].lower() if len(children) > 1 else None
        return ast.OrderByAttribute(children[0], order == "desc", order is not None,
                                    span=meta_span(meta))

    def limit(self, meta: Meta, children: list[ast.Expression]) -> _Clause:
        return _Clause("limit", children[0])

    def offset(self, meta: Meta, children: list[ast.Expression]) -> _Clause:
        return _Clause("offset", children[0])

    def query_section(self, meta: Meta, children: list[Any]) -> ast.Selector:
        select: _SelectList = children[0]
        clauses = {c.kind: c.value for c in children[1:]}
        return ast.Selector(select.attributes, clauses.get("group_by", ()),
                            clauses.get("having"), clauses.get("order_by", ()),
                            clauses.get("limit"), clauses.get("offset"), span=meta_span(meta))

    def rate_type(self, meta: Meta, children: list[Token]) -> str:
        return children[0].lower()

    def _rate(self, meta: Meta, children: list[Any],
              unit: Literal["events", "time", "snapshot"], value: int) -> ast.OutputRate:
        kind = cast(Literal["all", "first", "last"], children[0] if len(children) > 1 else "all")
        return ast.OutputRate(unit, value, kind, span=meta_span(meta))

    def output_rate_time(self, meta: Meta, children: list[Any]) -> ast.OutputRate:
        return self._rate(meta, children, "time", children[-1].millis)

    def output_rate_events(self, meta: Meta, children: list[Any]) -> ast.OutputRate:
        return self._rate(meta, children, "events", int(children[-1]))

    def output_rate_snapshot(self, meta: Meta, children: list[ast.TimeConstant]) -> ast.OutputRate:
        return self._rate(meta, children, "snapshot", children[0].millis)

    def event_type(self, meta: Meta, children: list[Token]) -> _EventType:
        word = children[0].lower()
        return _EventType(cast(ast.EventType, "current" if word == "events" else word))

    def target(self, meta: Meta, children: list[Token]) -> _Source:
        inner, fault, rest = _prefixed(children)
        return _Source(str(rest[0]), inner, fault)

    def insert_into(self, meta: Meta, children: list[Any]) -> ast.InsertIntoStream:
        event_type = children[0].value if len(children) > 1 else "current"
        target: _Source = children[-1]
        return ast.InsertIntoStream(event_type, target.name, target.inner, target.fault,
                                    span=meta_span(meta))

    def set_assignment(self, meta: Meta, children: list[Any]) -> ast.SetAssignment:
        return ast.SetAssignment(children[0], children[1], span=meta_span(meta))

    def set_clause(self, meta: Meta, children: list[ast.SetAssignment]) -> _SetClause:
        return _SetClause(tuple(children))

    def _table_output(self, meta: Meta, children: list[Any], cls: type[_N]) -> _N:
        """``delete``/``update``/``update or insert into``: target, [for …], [set …], [on …]."""
        target, *rest = children
        event_type: _EventType | None = _first(rest, _EventType)
        fields: dict[str, Any] = {"target": str(target), "on": _first(rest, ast.Expression),
                                  "event_type": event_type.value if event_type else "current"}
        if cls is not ast.DeleteStream:
            clause: _SetClause | None = _first(rest, _SetClause)
            fields["set"] = clause.assignments if clause else None
        return cls(**fields, span=meta_span(meta))

    def delete_output(self, meta: Meta, children: list[Any]) -> ast.DeleteStream:
        return self._table_output(meta, children, ast.DeleteStream)

    def update_output(self, meta: Meta, children: list[Any]) -> ast.UpdateStream:
        return self._table_output(meta, children, ast.UpdateStream)

    def update_or_insert_output(self, meta: Meta, children: list[Any]) -> ast.UpdateOrInsertStream:
        return self._table_output(meta, children, ast.UpdateOrInsertStream)

    def return_output(self, meta: Meta, children: list[_EventType]) -> ast.ReturnStream:
        return ast.ReturnStream(children[0].value if children else "current",
                                span=meta_span(meta))

    # -- execution elements and the app -------------------------------------------------------

    def _query(self, meta: Meta, annotations: tuple[ast.Annotation, ...],
               children: list[Any]) -> ast.Query:
        stream: ast.InputStream = children[0]
        selector: ast.Selector | None = _first(children, ast.Selector)
        if selector is None:  # no select clause means `select *`; it sits after the input
            end = stream.span
            selector = ast.Selector(span=Span(end.end_line, end.end_column, end.end_line,
                                              end.end_column))
        return ast.Query(annotations, stream, selector, children[-1],
                         _first(children, ast.OutputRate), span=meta_span(meta))

    def query(self, meta: Meta, children: list[Any]) -> ast.Query:
        annotations, rest = _split_annotations(children)
        return self._query(meta, annotations, rest)

    def value_partition(self, meta: Meta, children: list[Any]) -> ast.ValuePartitionType:
        return ast.ValuePartitionType(children[0], str(children[1]), span=meta_span(meta))

    def range_condition(self, meta: Meta, children: list[Any]) -> ast.RangePartitionCondition:
        return ast.RangePartitionCondition(children[0], unquote(children[1]),
                                           span=meta_span(meta))

    def range_partition(self, meta: Meta, children: list[Any]) -> ast.RangePartitionType:
        return ast.RangePartitionType(tuple(children[:-1]), str(children[-1]),
                                      span=meta_span(meta))

    def partition(self, meta: Meta, children: list[Any]) -> ast.Partition:
        annotations, rest = _split_annotations(children)
        types = tuple(c for c in rest if not isinstance(c, ast.Query))
        queries = tuple(c for c in rest if isinstance(c, ast.Query))
        return ast.Partition(annotations, types, queries, span=meta_span(meta))

    def siddhi_app(self, meta: Meta, children: list[Any]) -> ast.SiddhiApp:
        return ast.SiddhiApp(
            tuple(c for c in children if isinstance(c, ast.Annotation)),
            tuple(c for c in children if isinstance(c, ast.Definition)),
            tuple(c for c in children if isinstance(c, (ast.Query, ast.Partition))),
            span=meta_span(meta) if not meta.empty else Span(1, 0, 1, 0))

    # -- on-demand queries --------------------------------------------------------------------

    def store_input(self, meta: Meta, children: list[Any]) -> ast.StoreInput:
        names = [c for c in children if _is_name(c)]
        within: _WithinRange | None = _first(children, _WithinRange)
        return ast.StoreInput(str(names[0]), str(names[1]) if len(names) > 1 else None,
                              _first(children, ast.Expression), within.within if within else (),
                              within.per if within else None, span=meta_span(meta))

    def store_insert(self, meta: Meta, children: list[Token]) -> ast.InsertIntoStream:
        return ast.InsertIntoStream(target=str(children[0]), span=meta_span(meta))

    def store_upsert(self, meta: Meta, children: list[Any]) -> ast.UpdateOrInsertStream:
        return self._table_output(meta, children, ast.UpdateOrInsertStream)

    def store_delete(self, meta: Meta, children: list[Any]) -> ast.DeleteStream:
        return self._table_output(meta, children, ast.DeleteStream)

    def store_update(self, meta: Meta, children: list[Any]) -> ast.UpdateStream:
        return self._table_output(meta, children, ast.UpdateStream)

    def find_query(self, meta: Meta, children: list[Any]) -> ast.OnDemandQuery:
        selector = children[1] if len(children) > 1 else ast.Selector(span=children[0].span)
        return ast.OnDemandQuery(children[0], selector, None, span=meta_span(meta))

    def modify_query(self, meta: Meta, children: list[Any]) -> ast.OnDemandQuery:
        output: ast.OutputStream = children[-1]
        selector = children[0] if len(children) > 1 else ast.Selector(span=output.span)
        return ast.OnDemandQuery(None, selector, output, span=meta_span(meta))

    # -- expressions --------------------------------------------------------------------------

    def in_op(self, meta: Meta, children: list[Any]) -> ast.In:
        return ast.In(children[0], str(children[1]), span=meta_span(meta))

    def not_op(self, meta: Meta, children: list[ast.Expression]) -> ast.Not:
        return ast.Not(children[0], span=meta_span(meta))

    def neg_op(self, meta: Meta, children: list[ast.Expression]) -> ast.Expression:
        operand, span = children[0], meta_span(meta)
        unparenthesised = (span.end_line, span.end_column) == (operand.span.end_line,
                                                               operand.span.end_column)
        if isinstance(operand, ast.Constant) and operand.type.is_numeric and unparenthesised:
            self._edge_literals.pop((operand.span.line, operand.span.column), None)
            return ast.Constant(-cast(float, operand.value), operand.type, span=span)
        return ast.Negate(operand, span=span)

    def pos_op(self, meta: Meta, children: list[ast.Expression]) -> ast.Expression:
        operand = children[0]
        if isinstance(operand, ast.Constant) and operand.type.is_numeric:
            return dataclasses.replace(operand, span=meta_span(meta))
        return operand

    def literal(self, meta: Meta, children: list[Token]) -> ast.Constant:
        token, span = children[0], meta_span(meta)
        kind = token.type
        if kind == "INT":
            return self._integer(int(token), _INT_MAX, ast.AttrType.INT, span)
        if kind == "LONG":
            return self._integer(int(token[:-1]), _LONG_MAX, ast.AttrType.LONG, span)
        if kind == "FLOAT":
            return ast.Constant(float(token[:-1]), ast.AttrType.FLOAT, span=span)
        if kind == "DOUBLE":
            return ast.Constant(float(token.rstrip("dD")), ast.AttrType.DOUBLE, span=span)
        if kind == "STRING":
            return ast.Constant(unquote(token), ast.AttrType.STRING, span=span)
        word = token.lower()
        if word == "null":
            return ast.Constant(None, ast.AttrType.OBJECT, span=span)
        return ast.Constant(word == "true", ast.AttrType.BOOL, span=span)

    def _integer(self, value: int, limit: int, attr_type: ast.AttrType, span: Span) -> ast.Constant:
        if value == limit + 1:  # fine only as the operand of a minus sign
            self._edge_literals[(span.line, span.column)] = span
        elif value > limit:
            hint = "use a long literal such as 1L" if attr_type is ast.AttrType.INT else None
            self._fault("integer literal out of range", span, hint)
        return ast.Constant(value, attr_type, span=span)

    def time_unit(self, meta: Meta, children: list[Token]) -> str:
        return children[0].lower()

    def time_part(self, meta: Meta, children: list[Any]) -> _TimePart:
        rank, millis, _ = _UNIT_BY_SPELLING[children[1]]
        return _TimePart(rank, int(children[0]) * millis, meta_span(meta))

    def time_value(self, meta: Meta, children: list[_TimePart]) -> ast.TimeConstant:
        for before, after in zip(children, children[1:]):
            if after.rank <= before.rank:
                self._fault("a time value goes from the largest unit to the smallest, each "
                            "unit once ('1 hour 30 min')", after.span)
        return ast.TimeConstant(sum(p.millis for p in children), span=meta_span(meta))

    def star_argument(self, meta: Meta, children: list[Any]) -> None:
        return None  # `f(*)` is `f()` in Siddhi

    def function_call(self, meta: Meta, children: list[Any]) -> ast.FunctionCall:
        names = [c for c in children if _is_name(c)]
        args = tuple(c for c in children if isinstance(c, ast.Expression))
        namespace = str(names[0]) if len(names) == 2 else None
        return ast.FunctionCall(namespace, str(names[-1]), args, span=meta_span(meta))

    def index(self, meta: Meta, children: list[Token]) -> int:
        words = [str(c).lower() for c in children[1:-1]]  # between '[' and ']'
        if words[0] == "last":
            return -1 - (int(words[2]) if len(words) == 3 else 0)
        return int(words[0])

    def indexed_stream(self, meta: Meta, children: list[Any]) -> _StreamRef:
        inner, fault, rest = _prefixed(children)
        return _StreamRef(str(rest[0]), rest[1] if len(rest) > 1 else None, inner, fault)

    def variable(self, meta: Meta, children: list[Token]) -> ast.Variable:
        return ast.Variable(str(children[0]), span=meta_span(meta))

    def qualified_variable(self, meta: Meta, children: list[Any]) -> ast.Variable:
        ref, attribute = children
        if isinstance(ref, _StreamRef):
            return ast.Variable(str(attribute), ref.name, ref.index, ref.inner, ref.fault,
                                span=meta_span(meta))
        return ast.Variable(str(attribute), str(ref), span=meta_span(meta))

    def null_check(self, meta: Meta, children: list[ast.Expression]) -> ast.IsNull:
        return ast.IsNull(children[0], span=meta_span(meta))

    def stream_null_check(self, meta: Meta, children: list[_StreamRef]) -> ast.IsNullStream:
        ref = children[0]
        return ast.IsNullStream(ref.name, ref.index, ref.inner, ref.fault, span=meta_span(meta))
