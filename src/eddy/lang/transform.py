"""Map lark's parse tree of SiddhiQL onto the AST of :mod:`eddy.lang.ast`.

The grammar (``siddhiql.lark``) accepts a slight superset where that keeps it LALR(1): a
window is one of a stream's handlers, patterns and sequences share one element grammar. The
checks that narrow it back to Siddhi's language live here (for patterns and sequences in
:mod:`eddy.lang.transform_states`) and are reported as syntax issues at the offending text, so
an app is either well formed or rejected with every such fault.

Normalisations, so that equal apps give equal ASTs: names lose their back-quotes; keywords are
lower-cased; literals get their Siddhi type and ``-1`` is a :class:`~eddy.lang.ast.Constant`
(but ``-(1)`` is a :class:`~eddy.lang.ast.Negate`); pattern chains are right-nested (see
:mod:`eddy.lang.transform_states`).
"""

from __future__ import annotations

import dataclasses
from functools import partialmethod
from typing import Any, Literal, NamedTuple, TypeVar, cast

from lark import Token, Tree
from lark.tree import Meta

from eddy.lang import ast
from eddy.lang.errors import Span
from eddy.lang.transform_base import meta_span
from eddy.lang.transform_states import StateRules

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


def unquote(text: str) -> str:
    """The value of a '…', "…" or \"\"\"…\"\"\" literal (SiddhiQL has no escapes)."""
    if text.startswith('"""') and len(text) >= 6:
        return text[3:-3]
    return text[1:-1]


def _is_name(item: Any) -> bool:
    return isinstance(item, Token) and item.type == "ID"


# Values that rules hand to their parents when they are not AST nodes themselves.

class _Part(NamedTuple):
    """A piece of a larger construct, tagged with what it is: ``annotations``, ``events``,
    ``set``, ``within``, ``select``, ``durations`` or a selector clause keyword."""

    kind: str
    value: Any


class _Ref(NamedTuple):
    """A stream reference: ``S``, ``#S``, ``!S``, ``e1[2]``."""

    name: str
    inner: bool
    fault: bool
    event_index: int | None = None


class _TimePart(NamedTuple):
    rank: int
    millis: int
    span: Span


def _split_annotations(children: list[Any]) -> tuple[tuple[ast.Annotation, ...], list[Any]]:
    if children and isinstance(children[0], _Part) and children[0].kind == "annotations":
        return children[0].value, children[1:]
    return (), children


def _first(items: list[Any], kind: type[Any]) -> Any:
    return next((i for i in items if isinstance(i, kind)), None)


def _part(items: list[Any], kind: str, default: Any = None) -> Any:
    return next((i.value for i in items if isinstance(i, _Part) and i.kind == kind), default)


def _prefixed(children: list[Any]) -> tuple[bool, bool, list[Any]]:
    """Splits a leading ``#`` (inner) or ``!`` (fault) token off ``children``."""
    head = children[0]
    if isinstance(head, Token) and head.type != "ID":
        return head == "#", head == "!", children[1:]
    return False, False, children


class _Reduce(NamedTuple):
    tree: Tree[Token]


class AstBuilder(StateRules):
    """Turns the tree of one parse into AST nodes; ``issues`` collects structural faults.

    Each grammar rule (or alias) ``r`` maps through the method ``r(meta, children)``, where
    the children are already mapped; the pattern and sequence rules come from
    :class:`~eddy.lang.transform_states.StateRules`. The walk is iterative, not lark's recursive Transformer,
    so a long chain like ``a + b + … + z`` cannot exhaust the stack, and it is ~3x faster.
    """

    def __init__(self) -> None:
        super().__init__()
        self._edge_literals: dict[tuple[int, int], Span] = {}  # 2147483648 is fine only as -…
        self._signed: set[int] = set()  # ids of the literals that already carry a sign

    def build(self, root: Tree[Token]) -> Any:
        """The AST of ``root`` (then call :meth:`finish`)."""
        values: list[Any] = []
        pending: list[Any] = [root]
        while pending:
            item = pending.pop()
            if isinstance(item, _Reduce):
                count = len(item.tree.children)
                children = values[len(values) - count:]
                del values[len(values) - count:]
                method = getattr(self, item.tree.data, None)
                if method is None:
                    values.append(self._binary(item.tree.data, children, item.tree.meta))
                else:
                    values.append(method(item.tree.meta, children))
            elif isinstance(item, Tree):
                pending.append(_Reduce(item))
                pending.extend(reversed(item.children))
            else:
                values.append(item)
        return values[0]

    def finish(self) -> None:
        """Reports the integer literals one past the maximum that no minus sign claimed."""
        for span in self._edge_literals.values():
            self._fault("integer literal out of range", span, "use a long literal such as 1L")
        self._edge_literals.clear()

    def _binary(self, data: str, children: list[Any], meta: Meta) -> ast.BinaryOperation:
        """The binary operators, which differ only in their symbol."""
        op = _OPERATORS.get(data)
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

    def annotations(self, meta: Meta, children: list[ast.Annotation]) -> _Part:
        return _Part("annotations", tuple(children))

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

    def attribute_list(self, meta: Meta,
                       children: list[ast.Attribute]) -> tuple[ast.Attribute, ...]:
        seen: dict[str, ast.Attribute] = {}
        for attribute in children:  # Siddhi's parser rejects these, so they are syntax errors
            first = seen.setdefault(attribute.name, attribute)
            if first is not attribute:
                self._fault(f"attribute '{attribute.name}' is defined twice", attribute.span,
                            f"first defined at line {first.span.line} column {first.span.column}")
        return tuple(children)

    def stream_definition(self, meta: Meta, children: list[Any]) -> ast.StreamDefinition:
        annotations, (name, attributes) = _split_annotations(children)
        return ast.StreamDefinition(str(name), annotations, attributes, span=meta_span(meta))

    def table_definition(self, meta: Meta, children: list[Any]) -> ast.TableDefinition:
        stream = self.stream_definition(meta, children)
        return ast.TableDefinition(stream.name, stream.annotations, stream.attributes,
                                   span=stream.span)

    def window_definition(self, meta: Meta, children: list[Any]) -> ast.WindowDefinition:
        annotations, (name, attributes, call, *output) = _split_annotations(children)
        window = ast.Window(call.namespace, call.name, call.args, span=call.span)
        return ast.WindowDefinition(str(name), annotations, attributes, window,
                                    _part(output, "events"), span=meta_span(meta))

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

    def durations(self, meta: Meta, children: list[Any]) -> _Part:
        durations = tuple(c for c in children if not isinstance(c, Token))  # skip '...' and ','
        return _Part("durations", (durations, "..." in children))

    def aggregation_definition(self, meta: Meta, children: list[Any]) -> ast.AggregationDefinition:
        annotations, (name, stream, selector, *rest) = _split_annotations(children)
        durations, is_range = _part(rest, "durations")
        return ast.AggregationDefinition(
            str(name), annotations, stream, selector, _first(rest, ast.Variable), durations,
            is_range, span=meta_span(meta))

    # -- single and joined streams ------------------------------------------------------------

    def source(self, meta: Meta, children: list[Any]) -> _Ref:
        inner, fault, rest = _prefixed(children)
        return _Ref(str(rest[0]), inner, fault, rest[1] if len(rest) > 1 else None)

    target = indexed_stream = source  # `#T` / `!T` / `e1[0]`: the same shape

    def handlers(self, meta: Meta,
                 children: list[ast.StreamHandler]) -> tuple[ast.StreamHandler, ...]:
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
        source: _Ref = children[0]
        handlers = children[1] if len(children) > 1 else ()
        return ast.SingleInputStream(source.name, handlers, inner=source.inner,
                                     fault=source.fault, span=meta_span(meta))

    def single_stream(self, meta: Meta, children: list[Any]) -> ast.SingleInputStream:
        stream: ast.SingleInputStream = children[0]
        alias = str(children[1]) if len(children) > 1 else None
        return dataclasses.replace(stream, alias=alias, span=meta_span(meta))

    def join_type(self, meta: Meta, children: list[Token]) -> ast.JoinType:
        return cast(ast.JoinType, " ".join(c.lower() for c in children))

    def within_range(self, meta: Meta, children: list[ast.Expression]) -> _Part:
        return _Part("within", (tuple(children[:-1]), children[-1]))

    def join_stream(self, meta: Meta, children: list[Any]) -> ast.JoinInputStream:
        unidirectional: Literal["left", "right"] | None = None
        if isinstance(children[1], Token):
            unidirectional, children = "left", children[:1] + children[2:]
        elif len(children) > 3 and isinstance(children[3], Token):
            unidirectional, children = "right", children[:3] + children[4:]
        left, join_type, right, *tail = children
        for side in (left, right):
            window = side.window
            if window is not None and side.handlers[-1] is not window:
                after = side.handlers[side.handlers.index(window) + 1]
                self._fault("a joined stream cannot have handlers after its window", after.span)
        within, per = _part(tail, "within", ((), None))
        return ast.JoinInputStream(left, join_type, right, _first(tail, ast.Expression),
                                   unidirectional, within, per, span=meta_span(meta))

    def anonymous_query(self, meta: Meta, children: list[Any]) -> ast.Query:
        return self._query(meta, (), children)

    def anonymous_stream(self, meta: Meta, children: list[Any]) -> ast.AnonymousInputStream:
        inner = children[0]
        query = inner.query if isinstance(inner, ast.AnonymousInputStream) else inner
        return ast.AnonymousInputStream(query, span=meta_span(meta))

    # -- selection, output rate, outputs ------------------------------------------------------

    def select_list(self, meta: Meta, children: list[Any]) -> _Part:
        attributes = tuple(c for c in children if isinstance(c, ast.OutputAttribute))
        return _Part("select", attributes or None)  # None: `select *`

    def output_attribute(self, meta: Meta, children: list[Any]) -> ast.OutputAttribute:
        rename = str(children[1]) if len(children) > 1 else None
        return ast.OutputAttribute(children[0], rename, span=meta_span(meta))

    def clause(self, meta: Meta, children: list[Any]) -> _Part:
        """``group by``, ``having``, ``order by``, ``limit`` or ``offset``, by its keyword."""
        kind = children[0].lower()
        values = [c for c in children if not isinstance(c, Token)]
        return _Part(kind, tuple(values) if kind in ("group", "order") else values[0])

    group_by = having = order_by = limit = offset = clause

    def order_by_item(self, meta: Meta, children: list[Any]) -> ast.OrderByAttribute:
        order = children[1].lower() if len(children) > 1 else None
        return ast.OrderByAttribute(children[0], order == "desc", order is not None,
                                    span=meta_span(meta))

    def query_section(self, meta: Meta, children: list[_Part]) -> ast.Selector:
        parts = {c.kind: c.value for c in children}
        return ast.Selector(parts["select"], parts.get("group", ()), parts.get("having"),
                            parts.get("order", ()), parts.get("limit"), parts.get("offset"),
                            span=meta_span(meta))

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

    def event_type(self, meta: Meta, children: list[Token]) -> _Part:
        word = children[0].lower()
        return _Part("events", "current" if word == "events" else word)

    def insert_into(self, meta: Meta, children: list[Any]) -> ast.InsertIntoStream:
        target: _Ref = children[-1]
        return ast.InsertIntoStream(_part(children, "events", "current"), target.name,
                                    target.inner, target.fault, span=meta_span(meta))

    def set_assignment(self, meta: Meta, children: list[Any]) -> ast.SetAssignment:
        return ast.SetAssignment(children[0], children[1], span=meta_span(meta))

    def set_clause(self, meta: Meta, children: list[ast.SetAssignment]) -> _Part:
        return _Part("set", tuple(children))

    def _table_output(self, meta: Meta, children: list[Any], cls: type[_N]) -> _N:
        """``delete``/``update``/``update or insert into``: target, [for …], [set …], [on …]."""
        target, *rest = children
        fields: dict[str, Any] = {"target": str(target), "on": _first(rest, ast.Expression),
                                  "event_type": _part(rest, "events", "current")}
        if cls is not ast.DeleteStream:
            fields["set"] = _set_on_table(_part(rest, "set"), str(target))
        return cls(**fields, span=meta_span(meta))

    delete_output = partialmethod(_table_output, cls=ast.DeleteStream)
    update_output = partialmethod(_table_output, cls=ast.UpdateStream)
    update_or_insert_output = partialmethod(_table_output, cls=ast.UpdateOrInsertStream)

    def return_output(self, meta: Meta, children: list[_Part]) -> ast.ReturnStream:
        return ast.ReturnStream(_part(children, "events", "current"), span=meta_span(meta))

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
        within, per = _part(children, "within", ((), None))
        return ast.StoreInput(str(names[0]), str(names[1]) if len(names) > 1 else None,
                              _first(children, ast.Expression), within, per,
                              span=meta_span(meta))

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
        if self._signed_literal(operand, span, "-"):
            self._edge_literals.pop((operand.span.line, operand.span.column), None)
            assert isinstance(operand, ast.Constant)
            signed = ast.Constant(-cast(float, operand.value), operand.type, span=span)
            self._signed.add(id(signed))
            return signed
        return ast.Negate(operand, span=span)

    def pos_op(self, meta: Meta, children: list[ast.Expression]) -> ast.Expression:
        operand, span = children[0], meta_span(meta)
        if self._signed_literal(operand, span, "+"):
            signed = dataclasses.replace(operand, span=span)
            self._signed.add(id(signed))
            return signed
        return operand

    def _signed_literal(self, operand: ast.Expression, span: Span, sign: str) -> bool:
        """Whether ``sign operand`` is a signed number literal, the only place SiddhiQL takes
        a sign (``signed_int_value`` … in its grammar); anything else is a syntax fault at
        the operand, where Siddhi's parser finds no viable alternative."""
        unparenthesised = (span.end_line, span.end_column) == (operand.span.end_line,
                                                               operand.span.end_column)
        if isinstance(operand, ast.Constant) and operand.type.is_numeric and unparenthesised \
                and id(operand) not in self._signed:
            return True
        self._fault(f"a sign ('{sign}') can only precede a number literal, as in '{sign}5'",
                    operand.span, f"write '(0 {sign} …)' or '… * -1' to change the sign of a "
                    "value" if sign == "-" else "leave the '+' out")
        return False

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

    def time_part(self, meta: Meta, children: list[Token]) -> _TimePart:
        rank, millis, _ = _UNIT_BY_SPELLING[children[1].lower()]
        return _TimePart(rank, int(children[0]) * millis, meta_span(meta))

    def time_value(self, meta: Meta, children: list[_TimePart]) -> ast.TimeConstant:
        for before, after in zip(children, children[1:]):
            if after.rank <= before.rank:
                self._fault("a time value goes from the largest unit to the smallest, each "
                            "unit once ('1 hour 30 min')", after.span)
        return ast.TimeConstant(sum(p.millis for p in children), span=meta_span(meta))

    def all_attributes(self, meta: Meta, children: list[Any]) -> ast.AllAttributes:
        return ast.AllAttributes(span=meta_span(meta))

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

    def attribute_reference(self, meta: Meta, children: list[Any]) -> ast.Variable:
        *ref, attribute = children
        if not ref:
            return ast.Variable(str(attribute), span=meta_span(meta))
        if isinstance(ref[0], _Ref):
            return ast.Variable(str(attribute), ref[0].name, ref[0].event_index, ref[0].inner,
                                ref[0].fault, span=meta_span(meta))
        return ast.Variable(str(attribute), str(ref[0]), span=meta_span(meta))

    def null_check(self, meta: Meta, children: list[Any]) -> ast.IsNull | ast.IsNullStream:
        checked = children[0]
        if isinstance(checked, _Ref):  # `e1[0] is null`, `#S is null`: does the event exist
            return ast.IsNullStream(checked.name, checked.event_index, checked.inner, checked.fault,
                                    span=meta_span(meta))
        return ast.IsNull(checked, span=meta_span(meta))


def _set_on_table(assignments: tuple[ast.SetAssignment, ...] | None,
                  table: str) -> tuple[ast.SetAssignment, ...] | None:
    """The ``set`` clause with each assigned column named ``table.column``.

    Siddhi assigns the column of the updated table whatever qualifies the name on the left
    (``InMemoryTable.compileUpdateSet`` reads only the attribute name), so ``set price = 1``
    and ``set T.price = 1`` are the same update; writing it out keeps later layers from
    reading an unqualified ``price`` as a selected attribute."""
    if assignments is None:
        return None
    return tuple(dataclasses.replace(a, variable=dataclasses.replace(
        a.variable, stream=table, stream_index=None, inner=False, fault=False))
        for a in assignments)
