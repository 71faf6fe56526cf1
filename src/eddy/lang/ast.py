"""The SiddhiQL abstract syntax tree.

Frozen dataclasses, one per language construct, mirroring Siddhi's query-api. Every node
carries the span of text it came from (``span``) so later layers can point at the exact
place a fault is; spans take no part in equality, so ``parse(fmt(app)) == parse(app)``.

Names keep the spelling the app used. Keywords and durations are normalised (``"current"``,
``"left outer"``, ``"SECONDS"``) so that the formatter and later layers need not re-interpret
the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal, TypeAlias

from eddy.lang.errors import NO_SPAN, Span


class AttrType(str, Enum):
    """Siddhi's attribute types."""

    INT = "INT"
    LONG = "LONG"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    STRING = "STRING"
    BOOL = "BOOL"
    OBJECT = "OBJECT"

    @property
    def is_numeric(self) -> bool:
        """INT, LONG, FLOAT or DOUBLE: the types arithmetic and ``<``/``>`` accept."""
        return self in (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)

    @property
    def siddhi_name(self) -> str:
        """The lower-case spelling used in ``define stream`` (``int``, ``bool``, …)."""
        return self.value.lower()


@dataclass(frozen=True)
class Node:
    """Base of every AST node: the span is positional metadata, not part of the value."""

    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


# ---------------------------------------------------------------------------------------------
# Annotations
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AnnotationElement(Node):
    """``key='value'`` or a bare ``'value'`` inside an annotation."""

    key: str | None
    value: str


@dataclass(frozen=True)
class Annotation(Node):
    """``@name(k='v', …, @nested(…))``; app annotations are named ``app:name`` etc.

    ``name`` keeps the app's spelling; compare with :meth:`is_named`, as Siddhi matches
    annotation names case-insensitively.
    """

    name: str
    elements: tuple[AnnotationElement, ...] = ()
    annotations: tuple[Annotation, ...] = ()

    def is_named(self, name: str) -> bool:
        """Whether this is the annotation ``name``, ignoring case."""
        return self.name.lower() == name.lower()

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of element ``key`` (case-insensitive), or ``default``."""
        for element in self.elements:
            if element.key is not None and element.key.lower() == key.lower():
                return element.value
        return default

    @property
    def positional(self) -> tuple[str, ...]:
        """Values given without a key, as in ``@primaryKey('a', 'b')``."""
        return tuple(e.value for e in self.elements if e.key is None)

    def nested(self, name: str) -> tuple[Annotation, ...]:
        """The nested annotations called ``name``, such as the ``@map`` of a ``@source``."""
        return tuple(a for a in self.annotations if a.is_named(name))


def find_annotation(annotations: tuple[Annotation, ...], name: str) -> Annotation | None:
    """The first annotation called ``name`` (case-insensitive), if any."""
    for annotation in annotations:
        if annotation.is_named(name):
            return annotation
    return None


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Expression(Node):
    """Base of all expressions."""


@dataclass(frozen=True)
class Constant(Expression):
    """A literal. ``type`` is the literal's Siddhi type (``1`` INT, ``1L`` LONG, ``1.0`` DOUBLE,
    ``1f`` FLOAT, ``'a'`` STRING, ``true`` BOOL, ``null`` OBJECT with value None)."""

    value: int | float | str | bool | None
    type: AttrType


@dataclass(frozen=True)
class AllAttributes(Expression):
    """The ``*`` of ``f(*)``: Siddhi passes every attribute of the input, in order (all
    inputs' for a join or pattern); analysis writes the attributes out in its place."""


@dataclass(frozen=True)
class TimeConstant(Expression):
    """A time value such as ``10 min`` or ``1 hour 30 min``, as milliseconds (a LONG)."""

    millis: int


@dataclass(frozen=True)
class Variable(Expression):
    """An attribute reference: ``x``, ``S.x``, ``e1.x``, ``e1[0].x``, ``e2[last].x``, ``#S.x``.

    ``stream_index`` is an event index within a counted pattern state: ``0`` for ``[0]``,
    ``-1`` for ``[last]``, ``-2`` for ``[last-1]``; None when absent.
    """

    attribute: str
    stream: str | None = None
    stream_index: int | None = None
    inner: bool = False
    fault: bool = False


@dataclass(frozen=True)
class FunctionCall(Expression):
    """``name(args)`` or ``ns:name(args)``: scalar functions and aggregators alike."""

    namespace: str | None
    name: str
    args: tuple[Expression, ...] = ()

    @property
    def qualified_name(self) -> str:
        """``name`` or ``ns:name``, as the function registry knows it."""
        return f"{self.namespace}:{self.name}" if self.namespace else self.name


BinaryOperator: TypeAlias = Literal[
    "or", "and", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"
]


@dataclass(frozen=True)
class BinaryOperation(Expression):
    """Arithmetic, comparison and logical operators."""

    op: BinaryOperator
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Not(Expression):
    """``not expr``."""

    expression: Expression


@dataclass(frozen=True)
class Negate(Expression):
    """Unary minus on a non-literal operand (``-(a + b)``); ``-1`` is a Constant."""

    expression: Expression


@dataclass(frozen=True)
class IsNull(Expression):
    """``x is null``. With a bare name (``e1 is null``) the name may be a pattern event
    reference; semantic analysis decides."""

    expression: Expression


@dataclass(frozen=True)
class IsNullStream(Expression):
    """``e1[0] is null`` / ``#S is null`` / ``!S is null``: whether a (pattern) event exists."""

    stream: str
    stream_index: int | None = None
    inner: bool = False
    fault: bool = False


@dataclass(frozen=True)
class In(Expression):
    """``expr in Table``: whether a table holds a row matching the expression."""

    expression: Expression
    source: str


# ---------------------------------------------------------------------------------------------
# Stream handlers and inputs
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Filter(Node):
    """``[condition]`` after a stream."""

    expression: Expression


@dataclass(frozen=True)
class StreamFunction(Node):
    """``#ns:fn(args)``: a stream processor that is not a window."""

    namespace: str | None
    name: str
    args: tuple[Expression, ...] = ()


@dataclass(frozen=True)
class Window(Node):
    """``#window.name(args)`` or ``#window.ns:name(args)``."""

    namespace: str | None
    name: str
    args: tuple[Expression, ...] = ()


StreamHandler: TypeAlias = Filter | StreamFunction | Window


@dataclass(frozen=True)
class InputStream(Node):
    """Base of the ``from`` clause forms."""


@dataclass(frozen=True)
class SingleInputStream(InputStream):
    """``S[filter]#fn()#window.w()[filter] as alias``; ``inner`` for ``#S``, ``fault`` for ``!S``.

    Handlers are in written order; at most one of them is a :class:`Window`.
    """

    stream: str
    handlers: tuple[StreamHandler, ...] = ()
    alias: str | None = None
    inner: bool = False
    fault: bool = False

    @property
    def window(self) -> Window | None:
        """The stream's window, if one of its handlers is."""
        for handler in self.handlers:
            if isinstance(handler, Window):
                return handler
        return None

    @property
    def reference(self) -> str:
        """The name other clauses use for this input: its alias, else the stream id."""
        return self.alias or self.stream

    @property
    def key(self) -> str:
        """The name events of this input are routed by: ``#S`` for an inner stream, ``!S``
        for a fault stream, else ``S`` (an inner or fault stream is a stream of its own)."""
        return f"#{self.stream}" if self.inner else f"!{self.stream}" if self.fault \
            else self.stream


JoinType: TypeAlias = Literal["join", "inner join", "left outer join", "right outer join",
                              "full outer join"]


@dataclass(frozen=True)
class JoinInputStream(InputStream):
    """``L [unidirectional] join R [unidirectional] on cond within a[, b] per p``.

    ``join_type`` keeps the keyword form the app used (``join`` and ``inner join`` mean the
    same); ``unidirectional`` names the side that alone triggers output, if any.
    """

    left: SingleInputStream
    join_type: JoinType
    right: SingleInputStream
    on: Expression | None = None
    unidirectional: Literal["left", "right"] | None = None
    within: tuple[Expression, ...] = ()
    per: Expression | None = None

    @property
    def is_outer(self) -> bool:
        """Whether events that match nothing on the other side are emitted too."""
        return "outer" in self.join_type

    @property
    def outer_sides(self) -> tuple[bool, bool]:
        """Per side (left, right), whether its events that match nothing are emitted."""
        return (self.join_type in ("left outer join", "full outer join"),
                self.join_type in ("right outer join", "full outer join"))


@dataclass(frozen=True)
class StateElement(Node):
    """Base of pattern and sequence states."""


@dataclass(frozen=True)
class StreamStateElement(StateElement):
    """``e1=S[filter]``: one event of stream S, bound to ``ref`` when named."""

    stream: SingleInputStream
    ref: str | None = None


@dataclass(frozen=True)
class AbsentStreamStateElement(StateElement):
    """``not S[filter] for 5 sec`` (``waiting_time`` None inside ``A and not B``)."""

    stream: SingleInputStream
    waiting_time: TimeConstant | None = None


@dataclass(frozen=True)
class LogicalStateElement(StateElement):
    """``A and B`` / ``A or B`` (either side may be absent)."""

    left: StateElement
    op: Literal["and", "or"]
    right: StateElement


@dataclass(frozen=True)
class CountStateElement(StateElement):
    """``e1=S<2:5>``, ``<2:>``, ``<:5>``, ``<3>``, or, in sequences, ``*``, ``+``, ``?``.

    ``max_count`` None means unbounded. ``notation`` records the written form.
    """

    element: StreamStateElement
    min_count: int
    max_count: int | None
    notation: Literal["collect", "*", "+", "?"] = "collect"


@dataclass(frozen=True)
class EveryStateElement(StateElement):
    """``every X``: restart matching X for each event that starts it."""

    element: StateElement


@dataclass(frozen=True)
class NextStateElement(StateElement):
    """``A -> B`` in patterns, ``A, B`` in sequences."""

    element: StateElement
    next: StateElement


@dataclass(frozen=True)
class StateInputStream(InputStream):
    """A pattern (``->``) or sequence (``,``) with an optional overall ``within`` limit."""

    kind: Literal["pattern", "sequence"]
    state: StateElement
    within: TimeConstant | None = None


@dataclass(frozen=True)
class AnonymousInputStream(InputStream):
    """``from (from S … return)``: a nested query used as an input."""

    query: Query


# ---------------------------------------------------------------------------------------------
# Selection, output rate and output
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OutputAttribute(Node):
    """``expr as name``; ``rename`` is None for a bare attribute reference."""

    expression: Expression
    rename: str | None = None


@dataclass(frozen=True)
class OrderByAttribute(Node):
    """One ``order by`` item. ``explicit`` records a written ``asc``/``desc``; it takes no
    part in equality, since ``asc`` is the default."""

    variable: Variable
    descending: bool = False
    explicit: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Selector(Node):
    """``select … group by … having … order by … limit … offset …``.

    ``attributes`` None means ``select *`` (also when ``select`` is omitted).
    """

    attributes: tuple[OutputAttribute, ...] | None = None
    group_by: tuple[Variable, ...] = ()
    having: Expression | None = None
    order_by: tuple[OrderByAttribute, ...] = ()
    limit: Expression | None = None
    offset: Expression | None = None


@dataclass(frozen=True)
class OutputRate(Node):
    """``output [all|first|last] every N events|<time>`` or ``output snapshot every <time>``.

    ``value`` is an event count for ``unit='events'`` and milliseconds for ``time`` and
    ``snapshot``.
    """

    unit: Literal["events", "time", "snapshot"]
    value: int
    type: Literal["all", "first", "last"] = "all"


EventType: TypeAlias = Literal["current", "expired", "all"]


@dataclass(frozen=True)
class OutputStream(Node):
    """Base of ``insert into``, ``delete``, ``update``, ``update or insert into``, ``return``."""

    event_type: EventType = "current"


@dataclass(frozen=True)
class InsertIntoStream(OutputStream):
    """``insert into S``; ``inner`` for ``#S``, ``fault`` for ``!S``."""

    target: str = ""
    inner: bool = False
    fault: bool = False


@dataclass(frozen=True)
class SetAssignment(Node):
    """``T.column = value`` in the ``set`` clause of an update."""

    variable: Variable
    value: Expression


@dataclass(frozen=True)
class DeleteStream(OutputStream):
    """``delete T on condition``."""

    target: str = ""
    on: Expression | None = None


@dataclass(frozen=True)
class UpdateStream(OutputStream):
    """``update T set … on condition``; ``set`` is None when the clause is left out."""

    target: str = ""
    set: tuple[SetAssignment, ...] | None = None
    on: Expression | None = None


@dataclass(frozen=True)
class UpdateOrInsertStream(OutputStream):
    """``update or insert into T set … on condition``: update the rows that match, else
    insert the event."""

    target: str = ""
    set: tuple[SetAssignment, ...] | None = None
    on: Expression | None = None


@dataclass(frozen=True)
class ReturnStream(OutputStream):
    """``return``: the output of an anonymous or on-demand query."""


# ---------------------------------------------------------------------------------------------
# Execution elements
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Query(Node):
    """``from … select … [output …] insert into …;`` with its annotations."""

    annotations: tuple[Annotation, ...]
    input: InputStream
    selector: Selector
    output: OutputStream
    output_rate: OutputRate | None = None

    @property
    def name(self) -> str | None:
        """The ``@info(name=…)`` of the query, if given."""
        info = find_annotation(self.annotations, "info")
        return info.get("name") if info else None


@dataclass(frozen=True)
class ValuePartitionType(Node):
    """``expr of S``: events of S with equal ``expr`` share a partition instance."""

    expression: Expression
    stream: str


@dataclass(frozen=True)
class RangePartitionCondition(Node):
    """``condition as 'key'``: events meeting the condition share the partition ``key``."""

    condition: Expression
    key: str


@dataclass(frozen=True)
class RangePartitionType(Node):
    """``cond as 'a' or cond as 'b' of S``."""

    ranges: tuple[RangePartitionCondition, ...]
    stream: str


PartitionType: TypeAlias = ValuePartitionType | RangePartitionType


@dataclass(frozen=True)
class Partition(Node):
    """``partition with (…) begin … end;``: the queries run once per partition key."""

    annotations: tuple[Annotation, ...]
    partition_types: tuple[PartitionType, ...]
    queries: tuple[Query, ...]


ExecutionElement: TypeAlias = Query | Partition


# ---------------------------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Attribute(Node):
    """``name type``: one column of a schema."""

    name: str
    type: AttrType


@dataclass(frozen=True)
class Definition(Node):
    """Base of the ``define …`` statements."""

    name: str
    annotations: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class StreamDefinition(Definition):
    """``define stream S (…)``."""

    attributes: tuple[Attribute, ...] = ()


@dataclass(frozen=True)
class TableDefinition(Definition):
    """``define table T (…)``; annotations give its ``@store``, ``@primaryKey``, ``@index``."""

    attributes: tuple[Attribute, ...] = ()


@dataclass(frozen=True)
class WindowDefinition(Definition):
    """``define window W (…) time(1 min) output all events``."""

    attributes: tuple[Attribute, ...] = ()
    window: Window | None = None
    output_event_type: EventType | None = None


@dataclass(frozen=True)
class TriggerDefinition(Definition):
    """``define trigger T at every 5 sec`` or ``at 'start'`` / ``at '<cron>'``."""

    at_every: TimeConstant | None = None
    at: str | None = None


Duration: TypeAlias = Literal["SECONDS", "MINUTES", "HOURS", "DAYS", "WEEKS", "MONTHS", "YEARS"]
DURATIONS: tuple[Duration, ...] = ("SECONDS", "MINUTES", "HOURS", "DAYS", "WEEKS", "MONTHS",
                                   "YEARS")


@dataclass(frozen=True)
class AggregationDefinition(Definition):
    """``define aggregation A from S select … group by … aggregate [by ts] every sec ... year``.

    ``durations`` are the written ones: two for a range (``is_range``), else the list.
    """

    input: SingleInputStream | None = None
    selector: Selector = field(default_factory=Selector)
    aggregate_by: Variable | None = None
    durations: tuple[Duration, ...] = ()
    is_range: bool = False

    @property
    def granularities(self) -> tuple[Duration, ...]:
        """Every duration the aggregation keeps, expanding a range."""
        if not self.is_range:
            return self.durations
        lo, hi = DURATIONS.index(self.durations[0]), DURATIONS.index(self.durations[-1])
        # Siddhi's aggregations keep no weekly buckets: a range skips WEEKS.
        return tuple(d for d in DURATIONS[lo:hi + 1] if d != "WEEKS")


@dataclass(frozen=True)
class FunctionDefinition(Definition):
    """``define function f[language] return type { body }``."""

    language: str = ""
    return_type: AttrType = AttrType.OBJECT
    body: str = ""


# ---------------------------------------------------------------------------------------------
# On-demand (store) queries and the app
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoreInput(Node):
    """``T as t on cond within a, b per p`` in an on-demand query."""

    source: str
    alias: str | None = None
    on: Expression | None = None
    within: tuple[Expression, ...] = ()
    per: Expression | None = None


@dataclass(frozen=True)
class OnDemandQuery(Node):
    """An on-demand (store) query: ``from T on … select …``, or a ``select … insert into T``,
    ``delete T on …``, ``update T set … on …``, ``update or insert into T …`` without ``from``.
    """

    input: StoreInput | None
    selector: Selector
    output: OutputStream | None = None


@dataclass(frozen=True)
class SiddhiApp(Node):
    """A whole app: app annotations, definitions, and queries and partitions in written
    order."""

    annotations: tuple[Annotation, ...]
    definitions: tuple[Definition, ...]
    elements: tuple[ExecutionElement, ...]

    @property
    def name(self) -> str | None:
        """The ``@app:name('…')`` of the app, if given."""
        annotation = find_annotation(self.annotations, "app:name")
        if annotation is None:
            return None
        return annotation.positional[0] if annotation.positional else annotation.get("name")

    @property
    def queries(self) -> tuple[Query, ...]:
        """Top-level queries (outside partitions), in written order."""
        return tuple(e for e in self.elements if isinstance(e, Query))
