"""The checks Siddhi makes on annotations when it creates an app's runtime.

Siddhi reads most annotations only when it builds the runtime (``SiddhiAppParser``,
``StreamJunction``, ``DefinitionParserHelper``, ``EventHolderPasser``), so its faults there are
not syntax errors but they still stop the app. eddy makes the same checks up front, each at
the annotation (or element) at fault, and no more: an annotation Siddhi does not read is not
checked here either.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from eddy.lang import ast
from eddy.lang.errors import AppIssue
from eddy.lang.scope import SemanticError

_INT32 = re.compile(r"[+-]?\d+")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# SiddhiCompiler.parseTimeConstantDefinition runs the grammar's ``time_value`` rule on the
# text: a whole number and a unit first (anything after a valid start is not read).
_TIME_START = re.compile(
    r"\s*\d+\s*(years?|months?|weeks?|days?|hours?|min(?:utes?|ute)?|sec(?:onds?|ond)?"
    r"|millisec(?:onds?|ond)?)(?![A-Za-z0-9_])", re.IGNORECASE)


def annotation_issues(app: ast.SiddhiApp) -> Iterator[AppIssue]:
    """Every annotation fault of ``app``, in definition order."""
    yield from _app_annotations(app)
    for definition in app.definitions:
        try:
            if isinstance(definition, (ast.StreamDefinition, ast.WindowDefinition)):
                _check_async(definition)  # both get a stream junction
            if isinstance(definition, ast.StreamDefinition):
                _check_transports(definition)
            elif isinstance(definition, ast.TableDefinition):
                _check_table_keys(definition)
        except SemanticError as fault:
            yield fault.issue


def _app_annotations(app: ast.SiddhiApp) -> Iterator[AppIssue]:
    for annotation in app.annotations:
        try:
            if annotation.is_named("app:async"):
                raise SemanticError("@app:async is not supported at app level; put @async on "
                                    "the streams to process asynchronously", annotation.span,
                                    "e.g. @async(buffer.size='1024') define stream S (…)")
            if annotation.is_named("app:playback"):
                _check_playback(annotation)
        except SemanticError as fault:
            yield fault.issue


def _check_playback(annotation: ast.Annotation) -> None:
    """``@app:playback`` takes ``idle.time`` and ``increment`` together or neither, both time
    values (``SiddhiAppParser``)."""
    values: dict[str, str] = {}
    for element in annotation.elements:
        key = (element.key or "").lower()
        if key not in ("idle.time", "increment"):
            raise SemanticError(f"@app:playback takes only 'idle.time' and 'increment', not "
                                f"{_element_text(element)}", element.span)
        values[key] = element.value
    if len(values) == 1:
        missing = "increment" if "idle.time" in values else "idle.time"
        raise SemanticError(f"@app:playback needs both 'idle.time' and 'increment'; "
                            f"'{missing}' is missing", annotation.span)
    for key, value in values.items():
        if not _TIME_START.match(value):
            element = next(e for e in annotation.elements if (e.key or "").lower() == key)
            raise SemanticError(f"@app:playback '{key}' must be a time value such as '1 sec', "
                                f"not '{value}'", element.span)


def _element_text(element: ast.AnnotationElement) -> str:
    return f"'{element.key}'" if element.key is not None else f"the bare value '{element.value}'"


def _check_async(definition: ast.StreamDefinition | ast.WindowDefinition) -> None:
    """``@async`` on a stream: whole numbers, ``workers`` and ``batch.size.max`` above zero
    (``StreamJunction``)."""
    annotation = _single(definition.annotations, "async", definition.name)
    if annotation is None:
        return
    for key, positive in (("buffer.size", False), ("workers", True),
                          ("batch.size.max", True)):
        value = annotation.get(key)
        if value is None:
            continue
        element = next(e for e in annotation.elements if (e.key or "").lower() == key)
        if not _INT32.fullmatch(value) or not _INT_MIN <= int(value) <= _INT_MAX:
            raise SemanticError(f"@async '{key}' of stream '{definition.name}' must be a whole "
                                f"number, not '{value}'", element.span)
        if positive and int(value) <= 0:
            raise SemanticError(f"@async '{key}' of stream '{definition.name}' cannot be "
                                f"negative or zero, but is {value}", element.span)


def _single(annotations: tuple[ast.Annotation, ...], name: str,
            owner: str) -> ast.Annotation | None:
    """The annotation ``name``, or None; two of them is a fault, as in Siddhi's
    ``AnnotationHelper.getAnnotation``."""
    found = [a for a in annotations if a.is_named(name)]
    if len(found) > 1:
        raise SemanticError(f"@{found[1].name} is defined twice on '{owner}'", found[1].span)
    return found[0] if found else None


def _check_transports(definition: ast.StreamDefinition) -> None:
    """``@source``/``@sink`` need a ``type``, and so does their ``@map``; a source's
    ``@map(@attributes(…))`` maps every attribute of the stream (``DefinitionParserHelper``)."""
    for annotation in definition.annotations:
        kind = annotation.name.lower()
        if kind not in ("source", "sink"):
            continue
        if annotation.get("type") is None:
            raise SemanticError(f"@{annotation.name} of stream '{definition.name}' needs "
                                "type='…'", annotation.span,
                                f"e.g. @{annotation.name}(type='log')" if kind == "sink" else
                                f"e.g. @{annotation.name}(type='http', @map(type='json'))")
        mapping = _single(annotation.annotations, "map", definition.name)
        if mapping is None:
            continue
        if mapping.get("type") is None:
            raise SemanticError(f"@{mapping.name} of the @{annotation.name} of stream "
                                f"'{definition.name}' needs type='…'", mapping.span)
        if kind == "source":
            _check_attribute_mappings(definition, mapping)


def _check_attribute_mappings(definition: ast.StreamDefinition,
                              mapping: ast.Annotation) -> None:
    nested = mapping.nested("attributes")
    if not nested:
        return
    elements = nested[0].elements
    keyed = [e for e in elements if e.key is not None]
    if keyed and len(keyed) != len(elements):
        odd = next(e for e in elements if (e.key is None) != (elements[0].key is None))
        raise SemanticError(f"@attributes of stream '{definition.name}' names some attributes "
                            "and not others", odd.span,
                            "write every mapping as name='…', or none of them")
    names = [a.name for a in definition.attributes]
    if keyed:
        given = {e.key for e in keyed}
        for name in names:
            if name not in given:
                raise SemanticError(f"@attributes of stream '{definition.name}' does not map "
                                    f"attribute '{name}'", nested[0].span,
                                    f"add {name}='…'; every attribute needs a mapping")
    elif len(elements) != len(names):
        raise SemanticError(f"@attributes of stream '{definition.name}' gives {len(elements)} "
                            f"mappings, but the stream has {len(names)} attributes",
                            nested[0].span, "give one mapping per attribute, in order")


def _check_table_keys(table: ast.TableDefinition) -> None:
    """``@PrimaryKey`` once, with at least one attribute; on an in-memory table each
    ``@Index`` names exactly one attribute, and no attribute twice (``EventHolderPasser``)."""
    names = {a.name for a in table.attributes}
    primary = _single(table.annotations, "PrimaryKey", table.name)
    in_memory = ast.find_annotation(table.annotations, "store") is None
    indexes = [a for a in table.annotations if a.is_named("index")]
    for annotation in ([primary] if primary else []) + indexes:
        if not annotation.elements:
            raise SemanticError(f"@{annotation.name} of table '{table.name}' names no "
                                "attribute", annotation.span)
        for element in annotation.elements:
            if element.value.strip() not in names:
                raise SemanticError(
                    f"@{annotation.name} names '{element.value.strip()}', which is not an "
                    f"attribute of table '{table.name}'", element.span)
    if not in_memory:
        return
    indexed: set[str] = set()
    for annotation in indexes:
        if len(annotation.elements) > 1:
            raise SemanticError(
                f"@{annotation.name} of in-memory table '{table.name}' names "
                f"{len(annotation.elements)} attributes; it takes one", annotation.span,
                "write one @Index('…') per attribute to index several")
        key = annotation.elements[0].value.strip()
        if key in indexed:
            raise SemanticError(f"@{annotation.name}('{key}') of table '{table.name}' is "
                                "defined twice", annotation.span)
        indexed.add(key)
