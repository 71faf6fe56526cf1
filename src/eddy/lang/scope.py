"""What an expression can see: the inputs of a query and how their attributes are named.

Siddhi resolves ``x``, ``S.x``, ``alias.x``, ``e1.x`` and ``e1[0].x`` against the inputs of the
query it is in. A :class:`Scope` holds those inputs (:class:`Source`) and answers one
question: which attribute, of which input, does a :class:`~eddy.lang.ast.Variable` name?
Faults are :class:`SemanticError` carrying the span of the offending reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from eddy.lang.ast import Attribute, AttrType, Variable
from eddy.lang.errors import AppIssue, Span, did_you_mean

SourceKind = Literal["stream", "table", "window", "aggregation", "trigger", "inner", "output"]


class SemanticError(Exception):
    """One semantic fault, raised inside the analyser and collected into a SiddhiAppError."""

    def __init__(self, message: str, span: Span, hint: str | None = None) -> None:
        super().__init__(message)
        self.issue = AppIssue("semantic", message, span, hint)


def schema_text(attributes: Iterable[Attribute]) -> str:
    """``(a int, b string)``: a schema the way a ``define stream`` writes it."""
    return "(" + ", ".join(f"{a.name} {a.type.siddhi_name}" for a in attributes) + ")"


@dataclass(frozen=True)
class Source:
    """One input visible to expressions: a stream, table, window, aggregation or pattern state.

    ``refs`` are the qualifiers that select it (stream id, ``as`` alias, pattern event name);
    ``counted`` marks a counting pattern state, whose events are indexed (``e1[0].x``).
    """

    stream: str
    kind: SourceKind
    attributes: tuple[Attribute, ...]
    refs: frozenset[str]
    counted: bool = False
    pattern_state: bool = False

    def attribute(self, name: str) -> Attribute | None:
        """This input's attribute called ``name``, if it has one."""
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        return None

    @property
    def label(self) -> str:
        """How messages name this input: ``'S'``, or ``'S' (as 'a')`` when aliased."""
        other = sorted(r for r in self.refs if r != self.stream)
        return f"'{self.stream}'" + (f" (as '{other[0]}')" if other else "")


def first_shared(sources: Iterable[Source]) -> tuple[str, Source, Source] | None:
    """The first attribute name two of ``sources`` both have, with the two inputs; None
    when every name is in one input only (what ``select *`` and ``f(*)`` over a join or
    pattern need)."""
    seen: dict[str, Source] = {}
    for source in sources:
        for attribute in source.attributes:
            if attribute.name in seen:
                return attribute.name, seen[attribute.name], source
            seen[attribute.name] = source
    return None


@dataclass(frozen=True)
class Resolved:
    """Where a variable points: the input and the attribute."""

    source: Source
    attribute: Attribute

    @property
    def type(self) -> AttrType:
        """The type of the attribute the variable names."""
        return self.attribute.type


@dataclass(frozen=True)
class Scope:
    """The inputs an expression may name.

    ``current`` is the input a filter is attached to: inside ``e2=S[x > e1.x]`` a bare ``x``
    means S's ``x`` even when other inputs also have one. ``outputs`` are the selected
    attributes, which ``having``, ``order by`` and table ``on`` conditions see first.
    """

    sources: tuple[Source, ...] = ()
    current: Source | None = None
    outputs: tuple[Attribute, ...] = ()
    only_outputs: bool = False
    output_id: str | None = None

    def with_current(self, source: Source) -> Scope:
        """This scope as seen from a filter or handler of ``source``."""
        return Scope(self.sources, source, self.outputs, self.only_outputs, self.output_id)

    def with_outputs(self, outputs: tuple[Attribute, ...], *, only: bool = False,
                     output_id: str | None = None) -> Scope:
        """This scope with the selected attributes, for ``having`` and ``order by``.

        ``only`` hides the inputs, as Siddhi does for the ``having`` and ``order by`` of a
        query over one stream (``ExpressionParser.parseVariable`` reads the output
        definition, named ``output_id``, alone); over a join or pattern an unqualified name
        missing from the output still falls back to the inputs."""
        return Scope(self.sources, self.current, outputs, only, output_id)

    def with_source(self, source: Source) -> Scope:
        """This scope with one more input (the table of ``expr in T``)."""
        return Scope(self.sources + (source,), self.current, self.outputs, self.only_outputs,
                     self.output_id)

    def by_ref(self, ref: str) -> Source | None:
        """The input that ``ref`` (a stream id, alias or event name) qualifies, if any."""
        for source in self.sources:
            if ref in source.refs:
                return source
        return None

    def resolve(self, var: Variable) -> Resolved:
        """The attribute ``var`` names; raises :class:`SemanticError` when none or several."""
        if self.only_outputs:
            return self._resolve_output(var)
        if var.stream is not None:
            return self._resolve_qualified(var)
        if self.outputs:
            for attribute in self.outputs:
                if attribute.name == var.attribute:
                    return Resolved(Source("", "output", self.outputs, frozenset()), attribute)
        if self.current is not None:
            found = self.current.attribute(var.attribute)
            if found is not None:
                return Resolved(self.current, found)
        matches = [(s, a) for s in self.sources if (a := s.attribute(var.attribute)) is not None]
        if len(matches) == 1:
            return Resolved(*matches[0])
        if len(matches) > 1:
            which = " and ".join(s.label for s, _ in matches)
            raise SemanticError(
                f"attribute '{var.attribute}' is ambiguous: {which} all have it", var.span,
                "qualify it with the stream, alias or event name, e.g. "
                f"'{sorted(matches[0][0].refs)[0]}.{var.attribute}'")
        raise self._undefined(var)

    def _resolve_output(self, var: Variable) -> Resolved:
        output = Source(self.output_id or "", "output", self.outputs, frozenset())
        found = output.attribute(var.attribute)
        if found is None:
            guess = did_you_mean(var.attribute, [a.name for a in self.outputs])
            raise SemanticError(
                f"attribute '{var.attribute}' does not exist in the query's output "
                f"{schema_text(self.outputs)}", var.span,
                f"did you mean '{guess}'?" if guess else
                f"select '{var.attribute}' to use it here")
        if var.stream is not None and var.stream != self.output_id:
            raise SemanticError(f"'{var.stream}' is not defined here: this clause sees only the "
                                f"query's output {schema_text(self.outputs)}", var.span)
        return Resolved(output, found)

    def _resolve_qualified(self, var: Variable) -> Resolved:
        assert var.stream is not None
        source = self.by_ref(var.stream)
        aliased = next((s for s in self.sources if s.stream == var.stream and s.refs), None)
        if source is None and aliased is not None:
            alias = sorted(aliased.refs)[0]
            raise SemanticError(f"'{var.stream}' is named '{alias}' in this query, so "
                                f"'{var.stream}.{var.attribute}' refers to nothing", var.span,
                                f"write '{alias}.{var.attribute}'")
        if source is None:
            known = sorted({r for s in self.sources for r in s.refs})
            guess = did_you_mean(var.stream, known)
            raise SemanticError(
                f"'{var.stream}' is not an input of this query", var.span,
                f"did you mean '{guess}'?" if guess else
                (f"the inputs are {', '.join(repr(k) for k in known)}" if known else None))
        if var.stream_index is not None and not (source.counted or source.pattern_state):
            raise SemanticError(
                f"'{var.stream}[…]' indexes events, but '{var.stream}' is not a pattern event",
                var.span)
        attribute = source.attribute(var.attribute)
        if attribute is None:
            raise self._undefined(var, source)
        return Resolved(source, attribute)

    def _undefined(self, var: Variable, source: Source | None = None) -> SemanticError:
        pool = source.attributes if source else tuple(a for s in self.sources
                                                      for a in s.attributes) + self.outputs
        guess = did_you_mean(var.attribute, [a.name for a in pool])
        if source is not None:
            where = f"in {source.label} {schema_text(source.attributes)}"
        elif len(self.sources) == 1:
            where = f"in {self.sources[0].label} {schema_text(self.sources[0].attributes)}"
        else:
            where = "in any input of this query"
        return SemanticError(f"attribute '{var.attribute}' does not exist {where}", var.span,
                             f"did you mean '{guess}'?" if guess else None)
