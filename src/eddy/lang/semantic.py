"""The result of semantic analysis: every stream's schema and every query's shape.

Later layers (``plan``, ``engine``) read an app through this model rather than the raw AST:
it says which streams exist (defined or implied by ``insert into``), what each query reads
and writes, the output schema it produces and the type of every expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.errors import Span
from eddy.lang.scope import Scope

StreamKind = Literal["stream", "table", "window", "aggregation", "trigger", "inner"]


@dataclass(frozen=True)
class StreamInfo:
    """A named, schema-bearing element: a stream, table, named window, aggregation or trigger.

    ``definition`` is None for a stream defined implicitly by ``insert into``; ``partition``
    is the partition's index for an inner ``#`` stream.
    """

    name: str
    kind: StreamKind
    attributes: tuple[Attribute, ...]
    span: Span
    definition: ast.Definition | None = None
    partition: int | None = None

    @property
    def implicit(self) -> bool:
        """Whether the stream exists only because a query inserts into it."""
        return self.definition is None

    def schema(self) -> list[tuple[str, str]]:
        """``[[name, TYPE], …]`` as the conformance cases write schemas."""
        return [(a.name, a.type.value) for a in self.attributes]


OutputKind = Literal["stream", "table", "window", "inner", "return"]


@dataclass(frozen=True)
class QueryInfo:
    """One query after analysis.

    ``inputs`` are the names it reads (inner streams written ``#S``), ``target`` the element
    it writes (None for ``return``), ``outputs`` the selected schema, ``scope`` what its
    expressions can see (before the selection), ``aggregates`` whether its selection
    aggregates, which switches on Siddhi's chunk semantics.
    """

    query: ast.Query
    id: str
    index: int
    partition: int | None
    inputs: tuple[str, ...]
    target: str | None
    target_kind: OutputKind
    outputs: tuple[Attribute, ...]
    scope: Scope
    aggregates: bool

    @property
    def output_stream(self) -> str | None:
        """The name the queries reading what this one inserts give it: its target, written
        ``#T`` for an inner stream (as :attr:`inputs` write it)."""
        if self.target is None:
            return None
        return f"#{self.target}" if self.target_kind == "inner" else self.target


@dataclass(frozen=True)
class PartitionInfo:
    """One partition after analysis: the streams it partitions, the inner ``#`` streams its
    queries define, and those queries."""

    partition: ast.Partition
    index: int
    streams: tuple[str, ...]
    inner_streams: dict[str, StreamInfo]
    queries: tuple[QueryInfo, ...]


@dataclass
class AnalyzedApp:
    """A checked app: its AST plus schemas, query shapes and expression types."""

    app: ast.SiddhiApp
    source: str
    filename: str | None
    streams: dict[str, StreamInfo] = field(default_factory=dict)
    queries: list[QueryInfo] = field(default_factory=list)
    partitions: list[PartitionInfo] = field(default_factory=list)
    types: dict[int, AttrType] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The ``@app:name``, or ``SiddhiApp`` as Siddhi names an app without one."""
        return self.app.name or "SiddhiApp"

    def type_of(self, expr: ast.Expression) -> AttrType:
        """The inferred type of an expression node of this app's AST."""
        return self.types[id(expr)]

    def schemas(self) -> dict[str, list[tuple[str, str]]]:
        """Schema of every stream, table, window, aggregation and trigger, by name."""
        return {name: info.schema() for name, info in self.streams.items()}

    def partition(self, index: int) -> PartitionInfo:
        """The partition a query's ``partition`` names: its place among the app's elements
        (queries and partitions), not its place in :attr:`partitions`."""
        for info in self.partitions:
            if info.index == index:
                return info
        raise KeyError(index)

    def place(self, info: QueryInfo) -> int:
        """``info``'s place among the subscribers of the junctions it reads: its index in
        its partition for a partitioned query (the partition's own junctions), else its
        index among the app's elements — the number the reference's order path gives it."""
        if info.partition is None:
            return info.index
        return [q.id for q in self.partition(info.partition).queries].index(info.id)

    def read_stream(self, name: str, partition: int | None) -> StreamInfo:
        """The stream a query of ``partition`` reads as ``name`` (``#T``: the partition's
        inner stream ``T``)."""
        if name.startswith("#") and partition is not None:
            return self.partition(partition).inner_streams[name[1:]]
        return self.streams[name]

    def query(self, query_id: str) -> QueryInfo:
        """The query with id ``query_id``; KeyError if there is none."""
        for info in self.queries:
            if info.id == query_id:
                return info
        raise KeyError(query_id)
