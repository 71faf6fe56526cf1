"""Checking ``define stream|table|window|trigger|aggregation|function``.

Each definition yields the schema-bearing element it declares (a :class:`StreamInfo`) or the
fault that stops it. Siddhi accepts an identical re-definition of a stream and rejects a
different one, or one name used for two kinds of element; so does eddy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from eddy.lang import ast
from eddy.lang.aggregation_purge import purge_policy
from eddy.lang.ast import Attribute, AttrType
from eddy.lang.errors import AppIssue, Span
from eddy.lang.functions import INCREMENTAL_AGGREGATORS, REGISTRY, TypeMismatch
from eddy.lang.scope import Scope, SemanticError, Source, schema_text
from eddy.lang.selection import check_selector
from eddy.lang.semantic import StreamInfo, StreamKind
from eddy.lang.typecheck import ExpressionTyper, constant_value
from eddy.lang.walk import walk_expression

Lookup = Callable[[str, Span], StreamInfo]
"""The element a name refers to, or a :class:`SemanticError` (the analyser's ``lookup``)."""
Checked = tuple[StreamInfo | None, AppIssue | None]
"""One definition's element, or the fault that stops it."""

TRIGGERED_TIME = Attribute("triggered_time", AttrType.LONG)
_KINDS: dict[type[ast.Definition], StreamKind] = {
    ast.StreamDefinition: "stream", ast.TableDefinition: "table",
    ast.WindowDefinition: "window", ast.TriggerDefinition: "trigger",
    ast.AggregationDefinition: "aggregation",
}


def check_definitions(app: ast.SiddhiApp, typer: ExpressionTyper,
                      functions: dict[str, ast.FunctionDefinition],
                      lookup: Lookup) -> Iterator[Checked]:
    """Yields each definition's element or fault; aggregations last, as they read streams."""
    seen: dict[str, ast.Definition] = {}
    aggregations: list[ast.AggregationDefinition] = []
    for definition in app.definitions:
        try:
            if isinstance(definition, ast.FunctionDefinition):
                _check_function(definition, functions)
                continue
            if not _first_definition(definition, seen):
                continue
            if isinstance(definition, ast.AggregationDefinition):
                aggregations.append(definition)
                continue
            yield _define(definition, typer), None
        except SemanticError as fault:
            yield None, fault.issue
    for aggregation in aggregations:
        try:
            yield _aggregation(aggregation, typer, lookup), None
        except SemanticError as fault:
            yield None, fault.issue


def _first_definition(definition: ast.Definition, seen: dict[str, ast.Definition]) -> bool:
    """False for a re-definition Siddhi accepts; raises for a conflicting one.

    Siddhi (``SiddhiApp.checkDuplicateDefinition``) takes a stream or a table defined again
    with the same attributes and annotations, and a trigger named like a stream whose only
    attribute is ``triggered_time long``: the trigger then feeds that stream. A window or an
    aggregation defined twice, or one name for a stream and a table, is a fault."""
    previous = seen.get(definition.name)
    if previous is None:
        seen[definition.name] = definition
        return True
    same_kind = type(previous) is type(definition)
    if same_kind and isinstance(definition, (ast.StreamDefinition, ast.TableDefinition)) \
            and previous == definition:
        return False
    trigger = _trigger_and_stream(previous, definition)
    if trigger is not None:
        if trigger is definition:
            return False  # the stream already defined is the trigger's stream
        seen[definition.name] = definition  # the stream replaces the trigger's implied one
        return True
    if same_kind and isinstance(previous, (ast.StreamDefinition, ast.TableDefinition)):
        assert isinstance(definition, (ast.StreamDefinition, ast.TableDefinition))
        differs = (f"this definition says {schema_text(definition.attributes)}"
                   if previous.attributes != definition.attributes else
                   "this definition has other annotations")
        message = (f"{_KINDS[type(definition)]} '{definition.name}' is already defined at line "
                   f"{previous.span.line} as {schema_text(previous.attributes)}; {differs}")
    else:
        message = (f"'{definition.name}' is already defined at line {previous.span.line} as a "
                   f"{_KINDS.get(type(previous), 'definition')}")
    raise SemanticError(message, definition.span, "give one of them another name")


def _trigger_and_stream(first: ast.Definition,
                        second: ast.Definition) -> ast.TriggerDefinition | None:
    """The trigger of a trigger and a stream that Siddhi lets share a name: the stream has
    exactly the trigger's schema, ``(triggered_time long)``, and no annotations."""
    pair = {type(first): first, type(second): second}
    trigger, stream = pair.get(ast.TriggerDefinition), pair.get(ast.StreamDefinition)
    if not isinstance(trigger, ast.TriggerDefinition) or \
            not isinstance(stream, ast.StreamDefinition) or stream.annotations:
        return None
    schema = tuple((a.name, a.type) for a in stream.attributes)
    return trigger if schema == ((TRIGGERED_TIME.name, TRIGGERED_TIME.type),) else None


def _check_attributes(definition: ast.Definition,
                      attributes: tuple[Attribute, ...]) -> tuple[Attribute, ...]:
    names: set[str] = set()
    for attribute in attributes:
        if attribute.name in names:
            raise SemanticError(f"attribute '{attribute.name}' is defined twice in "
                                f"'{definition.name}'", attribute.span)
        names.add(attribute.name)
    return tuple(Attribute(a.name, a.type, span=a.span) for a in attributes)


def _define(definition: ast.Definition, typer: ExpressionTyper) -> StreamInfo:
    kind = _KINDS[type(definition)]
    if isinstance(definition, ast.TriggerDefinition):
        if definition.at_every is not None and definition.at_every.millis <= 0:
            raise SemanticError("a trigger's period must be positive", definition.at_every.span)
        return StreamInfo(definition.name, kind, (TRIGGERED_TIME,), definition.span, definition)
    assert isinstance(definition, (ast.StreamDefinition, ast.TableDefinition,
                                   ast.WindowDefinition))
    attributes = _check_attributes(definition, definition.attributes)
    info = StreamInfo(definition.name, kind, attributes, definition.span, definition)
    if isinstance(definition, ast.WindowDefinition):
        _check_named_window(definition, info, typer)
    return info


def _check_named_window(definition: ast.WindowDefinition, info: StreamInfo,
                        typer: ExpressionTyper) -> None:
    window = definition.window
    if window is None:
        raise SemanticError(f"window '{definition.name}' needs a window type, e.g. "
                            "'length(10)'", definition.span)
    spec = REGISTRY.lookup("window", window.namespace, window.name)
    if spec is None:
        guess = REGISTRY.suggest("window", window.namespace, window.name)
        raise SemanticError(f"window '{window.name}' is not defined", window.span,
                            f"did you mean '{guess}'?" if guess else None)
    scope = Scope((Source(info.name, "window", info.attributes, frozenset({info.name})),))
    types = [typer.infer(a, scope) for a in window.args]
    try:
        REGISTRY.check_call(spec, types, [constant_value(a) for a in window.args])
    except TypeMismatch as mismatch:
        raise SemanticError(mismatch.message, window.span) from None


def _check_function(definition: ast.FunctionDefinition,
                    functions: dict[str, ast.FunctionDefinition]) -> None:
    if definition.name in functions:
        raise SemanticError(f"function '{definition.name}' is already defined at line "
                            f"{functions[definition.name].span.line}", definition.span)
    functions[definition.name] = definition


def _aggregation(definition: ast.AggregationDefinition, typer: ExpressionTyper,
                 lookup: Lookup) -> StreamInfo:
    if definition.input is None:
        raise SemanticError(f"aggregation '{definition.name}' needs 'from <stream>'",
                            definition.span)
    stream = lookup(definition.input.stream, definition.input.span)
    if stream.kind != "stream":
        raise SemanticError(f"aggregation '{definition.name}' must read a stream, and "
                            f"'{stream.name}' is a {stream.kind}", definition.input.span)
    source = Source(stream.name, "stream", stream.attributes, frozenset({stream.name}))
    scope = Scope((source,))
    for handler in definition.input.handlers:
        if not isinstance(handler, ast.Filter):
            raise SemanticError("an aggregation's input takes filters only", handler.span)
        typer.expect_bool(handler.expression, scope, "a filter")
    outputs, _ = check_selector(definition.selector, scope, typer)
    _check_incremental_aggregators(definition)
    if definition.aggregate_by is not None:
        found = typer.infer(definition.aggregate_by, scope)
        if found not in (AttrType.LONG, AttrType.STRING):
            raise SemanticError(
                f"'aggregate by' takes a LONG timestamp in milliseconds or a STRING date, "
                f"not {found.value}", definition.aggregate_by.span)
    _check_durations(definition)
    purge_policy(definition)  # a bad @purge (e.g. a retention below its minimum) stops the app
    return StreamInfo(definition.name, "aggregation", outputs, definition.span, definition)


def _check_incremental_aggregators(definition: ast.AggregationDefinition) -> None:
    """Only some aggregators can be rolled up from seconds to years; Siddhi rejects others."""
    for item in definition.selector.attributes or ():
        for expr in walk_expression(item.expression):
            if isinstance(expr, ast.FunctionCall) and \
                    REGISTRY.is_aggregate(expr.namespace, expr.name) and \
                    (expr.namespace is not None or expr.name not in INCREMENTAL_AGGREGATORS):
                allowed = ", ".join(sorted(INCREMENTAL_AGGREGATORS))
                raise SemanticError(
                    f"'{expr.qualified_name}' cannot be used in an aggregation definition",
                    expr.span, f"incremental aggregations support {allowed}")


def _check_durations(definition: ast.AggregationDefinition) -> None:
    order = [ast.DURATIONS.index(d) for d in definition.durations]
    span: Span = definition.span
    if not order:
        raise SemanticError(f"aggregation '{definition.name}' needs 'every <durations>'", span)
    if definition.is_range and order[0] > order[-1]:
        raise SemanticError("an aggregation range must go from the finer duration to the "
                            "coarser, e.g. 'every sec ... year'", span)
    if not definition.is_range and order != sorted(set(order)):
        raise SemanticError("aggregation durations must be listed once each, finest first",
                            span)
