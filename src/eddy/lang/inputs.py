"""Checking a query's ``from`` clause and building the scope its expressions see.

Each input form — a single stream with handlers, a join, a pattern or sequence — becomes a
:class:`~eddy.lang.scope.Scope`: the inputs with the names that qualify them. Filters,
windows and stream functions are checked on the way, since they see the same inputs.
"""

from __future__ import annotations

from typing import Protocol

from eddy.lang import ast
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.errors import SiddhiAppError, Span
from eddy.lang.functions import REGISTRY, Kind, TypeMismatch
from eddy.lang.scope import Scope, SemanticError, Source, SourceKind
from eddy.lang.semantic import StreamInfo
from eddy.lang.star_args import is_star, star_arguments
from eddy.lang.typecheck import ExpressionTyper, constant_value
from eddy.lang.walk import walk_states


class StreamLookup(Protocol):
    """What input checking needs from the analyser: the element a name refers to."""

    typer: ExpressionTyper

    def lookup(self, name: str, span: Span, *, inner: bool = False) -> StreamInfo:
        """The element ``name`` refers to (an inner ``#`` stream when ``inner``)."""
        ...


AGG_TIMESTAMP = Attribute("AGG_TIMESTAMP", AttrType.LONG)
# The spellings Siddhi's Expression.Time.normalizeDuration takes for a constant 'per'.
PER_GRANULARITIES = frozenset({"sec", "second", "seconds", "min", "minute", "minutes", "h",
                               "hour", "hours", "day", "days", "month", "months", "year",
                               "years"})
# Elements whose events arrive one at a time: only these can be windowed or matched by a pattern.
_EVENT_KINDS = ("stream", "inner", "trigger")


def source_of(info: StreamInfo, refs: frozenset[str], *, pattern_state: bool = False,
              counted: bool = False) -> Source:
    """``info`` as an input that ``refs`` qualify; an aggregation shows its bucket start,
    ``AGG_TIMESTAMP``, as its first attribute, as Siddhi's aggregation joins do."""
    kind: SourceKind = info.kind
    attributes = info.attributes
    if info.kind == "aggregation":
        attributes = (AGG_TIMESTAMP,) + tuple(a for a in attributes if a.name != "AGG_TIMESTAMP")
    return Source(info.name, kind, attributes, refs, counted=counted, pattern_state=pattern_state)


def name_span(stream: ast.SingleInputStream) -> Span:
    """The span of the stream's name alone (after any ``#``/``!``), for faults about it."""
    start = stream.span.column + (1 if stream.inner or stream.fault else 0)
    return Span(stream.span.line, start, stream.span.line, start + len(stream.stream))


def _stream_info(ctx: StreamLookup, stream: ast.SingleInputStream) -> StreamInfo:
    info = ctx.lookup(stream.stream, name_span(stream), inner=stream.inner)
    if stream.fault:
        return _fault_stream(info, stream)
    return info


def _fault_stream(info: StreamInfo, stream: ast.SingleInputStream) -> StreamInfo:
    fault = fault_stream_info(info)
    if fault is None:
        raise SemanticError(
            f"fault stream '!{info.name}' does not exist", stream.span,
            f"add @OnError(action='STREAM') to the definition of '{info.name}'")
    return fault


def fault_stream_info(info: StreamInfo) -> StreamInfo | None:
    """The fault stream ``!S`` of a stream defined with ``@OnError(action='STREAM')``: its
    attributes plus ``_error`` (object); None for any other element.

    It is a stream of its own (a junction in the runtime, a bus topic ``<app>.!S``), fed by
    the sources of ``S`` with the events they could not map, so ``from !S select …`` reads
    it like any input stream."""
    if info.kind != "stream" or info.definition is None or info.name.startswith("!"):
        return None
    on_error = ast.find_annotation(info.definition.annotations, "OnError")
    action = (on_error.get("action") or "") if on_error else ""
    if action.upper() != "STREAM":
        return None
    return StreamInfo("!" + info.name, "stream",
                      info.attributes + (Attribute("_error", AttrType.OBJECT),), info.span,
                      info.definition)


def check_handlers(ctx: StreamLookup, stream: ast.SingleInputStream, source: Source,
                   scope: Scope, *, windows_allowed: bool = True) -> Source:
    """Checks a stream's filters, stream functions and window; returns the source with any
    attributes a stream function adds."""
    for handler in stream.handlers:
        local = scope.with_current(source) if source in scope.sources else \
            scope.with_source(source).with_current(source)
        if isinstance(handler, ast.Filter):
            ctx.typer.expect_bool(handler.expression, local, "a filter")
            continue
        kind: Kind = "window" if isinstance(handler, ast.Window) else "stream"
        if kind == "window" and not windows_allowed:
            raise SemanticError(f"a window cannot be used on '{stream.stream}' here", handler.span,
                                _window_hint(source))
        qualified = f"{handler.namespace}:{handler.name}" if handler.namespace else handler.name
        spec = REGISTRY.lookup(kind, handler.namespace, handler.name)
        if spec is None:
            guess = REGISTRY.suggest(kind, handler.namespace, handler.name)
            noun = "window" if kind == "window" else "stream function"
            raise SemanticError(f"{noun} '{qualified}' is not defined", handler.span,
                                f"did you mean '{guess}'?" if guess else None)
        args = handler.args
        if is_star(args):
            args = star_arguments(args[0], (source,), qualified)
            ctx.typer.expanded[id(handler)] = args
        types = [ctx.typer.infer(a, local) for a in args]
        constants = [constant_value(a) for a in args]
        try:
            REGISTRY.check_call(spec, types, constants)
        except TypeMismatch as mismatch:
            raise SemanticError(mismatch.message, handler.span) from None
        if kind == "window" and handler.namespace is None and \
                handler.name in ("expression", "expressionBatch") and isinstance(constants[0], str):
            _check_window_condition(ctx, handler, constants[0], source)
        if spec.extra_attributes is not None:
            extra = tuple(Attribute(n, t) for n, t in spec.extra_attributes(types, constants))
            source = Source(source.stream, source.kind, source.attributes + extra, source.refs,
                            source.counted, source.pattern_state)
    return source


def _check_window_condition(ctx: StreamLookup, window: ast.Window | ast.StreamFunction,
                            text: str, source: Source) -> None:
    """The condition of ``#window.expression('…')``/``expressionBatch('…')``: Siddhi parses
    it when it builds the window and needs a BOOL over the event, ``first`` and ``last``
    (``ExpressionBatchWindowProcessor.constructExpression``)."""
    from eddy.lang.parser import parse_expression  # the parser imports the AST only

    what = f"the condition '{text}' of #window.{window.name}()"
    try:
        condition = parse_expression(text)
    except SiddhiAppError as error:
        raise SemanticError(f"{what} is not an expression: {error.message}",
                            window.span) from None
    ends = tuple(Source(source.stream, source.kind, source.attributes, frozenset({ref}))
                 for ref in ("first", "last"))
    scope = Scope((source,) + ends, current=source)
    # A typer of its own: the condition is not part of the app's AST, so its nodes' types
    # must not land among the app's (their ids could be reused once they are gone).
    typer = ExpressionTyper(ctx.typer.functions, ctx.typer.tables, ctx.typer.registry)
    try:
        found = typer.infer(condition, scope, aggregates=True)
    except SemanticError as fault:
        raise SemanticError(f"{what}: {fault.issue.message}", window.span) from None
    if found != AttrType.BOOL:
        raise SemanticError(f"{what} must be a condition (BOOL), but it is {found.value}",
                            window.span, "e.g. 'count() <= 20' or 'sum(price) < 100'")


def _window_hint(source: Source) -> str | None:
    if source.kind == "window":
        return f"'{source.stream}' is a named window already; read it without '#window…'"
    if source.kind in ("table", "aggregation"):
        return f"'{source.stream}' is a {source.kind}; it holds its rows itself"
    return None


def single_scope(ctx: StreamLookup, stream: ast.SingleInputStream) -> Scope:
    """Scope of ``from S[…]#window.x(…)``."""
    info = _stream_info(ctx, stream)
    if info.kind in ("table", "aggregation"):
        raise SemanticError(
            f"{info.kind} '{info.name}' cannot be the input of a streaming query", stream.span,
            f"join it with a stream, or read it with an on-demand query 'from {info.name} "
            "select …'")
    source = source_of(info, _qualifiers(stream))
    source = check_handlers(ctx, stream, source, Scope((source,)),
                            windows_allowed=info.kind != "window")
    return Scope((source,))


def _qualifiers(stream: ast.SingleInputStream) -> frozenset[str]:
    """The names that qualify a stream's attributes: its id and any ``as`` alias."""
    return frozenset({stream.stream} | ({stream.alias} if stream.alias else set()))


def join_scope(ctx: StreamLookup, join: ast.JoinInputStream) -> Scope:
    """Scope of ``from L join R on …``: both sides, each qualified by stream id or alias."""
    sides: list[Source] = []
    infos: list[StreamInfo] = []
    for side in (join.left, join.right):
        info = _stream_info(ctx, side)
        # Once a side has an alias, only the alias names it (ExpressionParser.parseVariable
        # compares a qualifier with the input's reference id when there is one).
        refs = frozenset({side.alias}) if side.alias else frozenset({side.stream})
        sides.append(source_of(info, refs))
        infos.append(info)
    if join.left.reference == join.right.reference:
        raise SemanticError(
            f"both sides of the join are '{join.left.reference}'", join.right.span,
            "name the sides with 'as', e.g. 'from S as a join S as b on a.x == b.x'")
    # A stream id shared by both sides (a self join) qualifies neither; only aliases do.
    shared = sides[0].refs & sides[1].refs
    sides = [Source(s.stream, s.kind, s.attributes, s.refs - shared) for s in sides]
    scope = Scope(tuple(sides))
    checked: list[Source] = []
    for side, source, info in zip((join.left, join.right), sides, infos):
        checked.append(check_handlers(ctx, side, source, scope,
                                      windows_allowed=info.kind in _EVENT_KINDS))
    scope = Scope(tuple(checked))
    aggregation = next((i for i in infos if i.kind == "aggregation"), None)
    if aggregation is not None:
        if not join.within or join.per is None:
            raise SemanticError(
                f"a join with aggregation '{aggregation.name}' needs 'within … per …'",
                join.span, "e.g. within 1496200000000L, 1596434876000L per 'days'")
        for expr in join.within:
            ctx.typer.infer(expr, scope)
        per = ctx.typer.infer(join.per, scope)
        if per != AttrType.STRING:
            raise SemanticError(f"'per' takes a granularity string such as 'hours', not "
                                f"{per.value}", join.per.span)
        granularity = constant_value(join.per)
        if isinstance(granularity, str) and granularity.lower() not in PER_GRANULARITIES:
            raise SemanticError(
                f"'per' takes a granularity, and '{granularity}' is none", join.per.span,
                "one of seconds, minutes, hours, days, months or years (or sec, min, h, …)")
    elif join.within or join.per is not None:
        raise SemanticError("'within … per …' applies only to joins with an aggregation",
                            join.span)
    if join.on is not None:
        ctx.typer.expect_bool(join.on, scope, "the join condition")
    return scope


def state_scope(ctx: StreamLookup, pattern: ast.StateInputStream) -> Scope:
    """Scope of a pattern or sequence: one input per state, named by its event reference."""
    states = list(walk_states(pattern.state))
    counted = {id(s.element) for s in states if isinstance(s, ast.CountStateElement)}
    for s in states:
        if isinstance(s, ast.CountStateElement):
            if s.max_count is not None and s.max_count < s.min_count:
                raise SemanticError(f"the count <{s.min_count}:{s.max_count}> has its maximum "
                                    "below its minimum", s.span)
    sources: list[Source] = []
    bound: list[tuple[ast.SingleInputStream, Source]] = []
    # An event name used twice is accepted, as the reference does: ``e1.x`` then reads the
    # first state of that name (``ExpressionParser.parseVariable`` takes the first match).
    for s in states:
        if isinstance(s, ast.StreamStateElement):
            info = _stream_info(ctx, s.stream)
            _expect_stream(info, s.stream)
            refs = frozenset({s.ref}) if s.ref else frozenset({s.stream.stream})
            source = source_of(info, refs, pattern_state=True, counted=id(s) in counted)
            sources.append(source)
            bound.append((s.stream, source))
        elif isinstance(s, ast.AbsentStreamStateElement):
            info = _stream_info(ctx, s.stream)
            _expect_stream(info, s.stream)
            bound.append((s.stream, source_of(info, frozenset())))
    scope = Scope(tuple(sources))
    for stream, source in bound:
        for handler in stream.handlers:
            if isinstance(handler, ast.Window):
                raise SemanticError("a pattern or sequence state cannot have a window",
                                    handler.span)
        check_handlers(ctx, stream, source, scope)
    return scope


def _expect_stream(info: StreamInfo, stream: ast.SingleInputStream) -> None:
    if info.kind not in _EVENT_KINDS:
        raise SemanticError(f"{info.kind} '{info.name}' cannot be used in a pattern or sequence",
                            stream.span)
