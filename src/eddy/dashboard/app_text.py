"""What the dashboard learns from an app's text with ``eddy.lang``: its faults at line and
column (the editor), its explanation, the streams an HTTP source feeds (the simulator) and
its aggregations (the retrieval form)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eddy.lang import AnalyzedApp, SiddhiAppError, check
from eddy.lang.variables import substitute

_HTTP_DEFAULT = "http://0.0.0.0:9763/{app}/{stream}"


def _check(text: str) -> tuple[AnalyzedApp, Any]:
    from eddy.plan import build_plan

    analyzed = check(substitute(text, "app"), "app")
    return analyzed, build_plan(analyzed)


def validate(text: str) -> list[dict[str, Any]]:
    """The app's faults as ``eddy validate`` finds them (parse, analysis, plan); [] if none."""
    try:
        _check(text)
    except SiddhiAppError as error:
        listed = error.to_dict()["errors"]
        assert isinstance(listed, list)
        return listed
    return []


def explain(text: str) -> dict[str, Any]:
    """``{"text": …, "operators": {query: "op → op"}}`` as ``eddy explain`` shows it, or
    ``{"errors": […]}`` for a faulty app."""
    from eddy.plan.explain import explain_text

    try:
        analyzed, plan = _check(text)
    except SiddhiAppError as error:
        return {"errors": error.to_dict()["errors"]}
    return {"text": explain_text(analyzed, plan), "operators": operators(analyzed)}


def operators(analyzed: AnalyzedApp) -> dict[str, str]:
    """Each query's operators, as ``explain`` names them."""
    from eddy.plan.explain import query_json

    return {q.id: " → ".join(str(o) for o in query_json(q)["operators"]) or "projection"
            for q in analyzed.queries}


@dataclass(frozen=True)
class HttpInput:
    """A stream an ``@source(type='http')`` feeds: where to post, and its attributes."""

    stream: str
    url: str
    basic_auth: bool
    attributes: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AppFacts:
    name: str
    http_inputs: tuple[HttpInput, ...]
    aggregations: tuple[str, ...]
    operators: dict[str, str]


def facts(text: str) -> AppFacts:
    """The facts of a valid app; SiddhiAppError for a faulty one."""
    analyzed = check(substitute(text, "app"), "app")
    inputs = []
    for definition in analyzed.app.definitions:
        info = analyzed.streams.get(definition.name)
        for annotation in definition.annotations:
            if annotation.is_named("source") and (annotation.get("type") or "") == "http":
                url = annotation.get("receiver.url") or _HTTP_DEFAULT.format(
                    app=analyzed.name, stream=definition.name)
                inputs.append(HttpInput(
                    definition.name, url.replace("0.0.0.0", "127.0.0.1"),
                    (annotation.get("basic.auth.enabled") or "").lower() == "true",
                    tuple(info.schema()) if info else ()))
    aggregations = tuple(n for n, s in analyzed.streams.items() if s.kind == "aggregation")
    return AppFacts(analyzed.name, tuple(inputs), aggregations, operators(analyzed))
