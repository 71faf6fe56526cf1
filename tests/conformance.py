"""Siddhi conformance cases: loading them, and comparing a replay's output with theirs.

The case format and the comparison rules are defined in ``shared/conformance/README.md``
("Case file format", "Comparing outputs"); this module implements them and nothing more,
so a failing case reports *where* eddy differs (stream, event index, field, both values).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CASES_DIR_ENV = "EDDY_CONFORMANCE_DIR"
DOUBLE_REL_TOL = 1e-9
FLOAT_REL_TOL = 1e-6  # FLOAT attributes are single precision in the reference engine
NEAR_ZERO_ABS_TOL = 1e-12
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

Event = Mapping[str, Any]
Schema = Sequence[Sequence[str]]  # [[attribute name, Siddhi type], ...]


@dataclass(frozen=True)
class Case:
    """One conformance case file: an app, its inputs, and what the reference engine produced."""

    name: str
    feature: str
    app: str
    inputs: list[dict[str, Any]]
    expected: dict[str, list[dict[str, Any]]] | None
    expected_queries: dict[str, list[dict[str, Any]]]
    expected_store: list[dict[str, Any]]
    schemas: dict[str, list[list[str]]]
    ordered: bool
    expected_error: dict[str, Any] | None
    path: Path


def cases_dir() -> Path:
    """``$EDDY_CONFORMANCE_DIR``, else ``shared/`` beside the checkout, as laid out in CI."""
    if override := os.environ.get(CASES_DIR_ENV):
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases"


def load_case(path: Path) -> Case:
    """Read one case file."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return Case(
        name=raw["name"],
        feature=raw["feature"],
        app=raw["app"],
        inputs=raw.get("inputs", []),
        expected=raw.get("expected"),
        expected_queries=raw.get("expected_queries", {}),
        expected_store=raw.get("expected_store", []),
        schemas=raw.get("schemas", {}),
        ordered=raw.get("ordered", True),
        expected_error=raw.get("expected_error"),
        path=path,
    )


def feature_matches(feature: str, prefixes: Iterable[str]) -> bool:
    """True if ``feature`` is one of ``prefixes`` or lies under one of them by dotted segments.

    ``window`` matches ``window.time``; ``window.time`` does not match ``window.timeBatch``.
    """
    return any(feature == p or feature.startswith(p + ".") for p in prefixes)


def load_cases(feature_prefixes: Iterable[str] | None = None) -> list[Case]:
    """All cases (sorted by file name), or those whose feature matches one of the prefixes."""
    directory = cases_dir()
    if not directory.is_dir():
        raise FileNotFoundError(f"no conformance cases at {directory} (set ${CASES_DIR_ENV})")
    cases = [load_case(p) for p in sorted(directory.glob("*.json"))]
    if feature_prefixes is None:
        return cases
    prefixes = list(feature_prefixes)
    return [c for c in cases if feature_matches(c.feature, prefixes)]


# ---------------------------------------------------------------------------------------------
# values


def _plain(value: Any) -> Any:
    """Unwrap numpy scalars (what pandas/Arrow hand back) into Python values."""
    return value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value


def _as_number(value: Any) -> Any:
    """Decode the README's non-finite strings; leave everything else alone."""
    return NON_FINITE.get(value, value) if isinstance(value, str) else value


def values_equal(expected: Any, actual: Any, siddhi_type: str | None = None) -> bool:
    """One attribute value, by the README's rules; ``siddhi_type`` picks the float tolerance.

    With no type (store rows, unknown schema) a float on either side means DOUBLE tolerance.
    """
    expected, actual = _plain(expected), _plain(actual)
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, bool) or isinstance(actual, bool):  # True must not equal 1
        return type(expected) is type(actual) and expected == actual
    if siddhi_type != "STRING":
        expected, actual = _as_number(expected), _as_number(actual)
    numeric = (int, float)
    if not (isinstance(expected, numeric) and isinstance(actual, numeric)):
        return type(expected) is type(actual) and bool(expected == actual)
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    if siddhi_type in ("INT", "LONG") or (isinstance(expected, int) and isinstance(actual, int)):
        return expected == actual  # 1 == 1.0 by value; no tolerance for integral types
    rel_tol = FLOAT_REL_TOL if siddhi_type == "FLOAT" else DOUBLE_REL_TOL
    return math.isclose(expected, actual, rel_tol=rel_tol, abs_tol=NEAR_ZERO_ABS_TOL)


def _values_difference(
    expected: Sequence[Any], actual: Sequence[Any], schema: Schema | None
) -> str | None:
    """The first differing value of two attribute lists, named by the schema when known."""
    if len(expected) != len(actual):
        return f"{len(expected)} values expected, {len(actual)} actual"
    for i, (e, a) in enumerate(zip(expected, actual)):
        name, siddhi_type = schema[i] if schema and i < len(schema) else (None, None)
        if not values_equal(e, a, siddhi_type):
            field = f"field {i}" + (f" '{name}' ({siddhi_type})" if name else "")
            return f"{field}: expected {e!r}, actual {_plain(a)!r}"
    return None


# ---------------------------------------------------------------------------------------------
# events and rows


def _show_event(event: Event) -> str:
    expired = " expired" if event.get("expired", False) else ""
    data = list(map(_plain, event["data"]))
    return f"{{ts={_plain(event.get('timestamp'))}{expired} data={data!r}}}"


def _show_row(row: Sequence[Any]) -> str:
    return repr(list(map(_plain, row)))


def _event_difference(expected: Event, actual: Event, schema: Schema | None) -> str | None:
    """What makes two events unequal: timestamp (exact), expired flag, then the data values.

    A missing ``expired`` key counts as false: streams only ever carry current events.
    """
    if _plain(expected["timestamp"]) != _plain(actual.get("timestamp")):
        return f"timestamp: expected {expected['timestamp']}, actual {actual.get('timestamp')!r}"
    if bool(expected.get("expired", False)) != bool(actual.get("expired", False)):
        return f"expired: expected {expected.get('expired', False)}, actual {actual.get('expired')}"
    return _values_difference(expected["data"], actual["data"], schema)


def _compare_lists(
    expected: Sequence[Any],
    actual: Sequence[Any],
    ordered: bool,
    difference: Callable[[Any, Any], str | None],
    distance: Callable[[Any, Any], int],
    show: Callable[[Any], str],
    noun: str,
) -> str | None:
    """Ordered: element by element. Unordered: greedy matching, as multisets with tolerance.

    Greedy matching is enough because timestamps and expired flags are exact, so candidates
    for one expected element differ only within the float tolerance.
    """
    counts = f"({len(expected)} expected, {len(actual)} actual)"
    if ordered:
        for i, (e, a) in enumerate(zip(expected, actual)):
            if (diff := difference(e, a)) is not None:
                return f"{noun} {i} {counts}: {diff}\n  expected {show(e)}\n  actual   {show(a)}"
        n = min(len(expected), len(actual))
        if len(expected) > n:
            return f"missing {noun}s from {noun} {n} {counts}: first is {show(expected[n])}"
        if len(actual) > n:
            return f"extra {noun}s from {noun} {n} {counts}: first is {show(actual[n])}"
        return None
    unused = list(range(len(actual)))
    for i, e in enumerate(expected):
        match = next((j for j in unused if difference(e, actual[j]) is None), None)
        if match is None:
            message = f"expected {noun} {i} {show(e)} has no match {counts}"
            if unused:
                j = min(unused, key=lambda k: distance(e, actual[k]))
                message += f"; closest unmatched is actual {noun} {j} {show(actual[j])}: "
                message += str(difference(e, actual[j]))
            return message
        unused.remove(match)
    if unused:
        return f"unexpected actual {noun} {unused[0]} {show(actual[unused[0]])} {counts}"
    return None


def _values_distance(expected: Sequence[Any], actual: Sequence[Any], schema: Schema | None) -> int:
    """How many values differ (missing ones included), to point at the closest near miss."""
    types = [t for _, t in schema] if schema else []
    unequal = sum(
        not values_equal(e, a, types[i] if i < len(types) else None)
        for i, (e, a) in enumerate(zip(expected, actual))
    )
    return unequal + abs(len(expected) - len(actual))


def _event_distance(expected: Event, actual: Event, schema: Schema | None) -> int:
    """How many parts differ: the timestamp, the expired flag and each value count one each."""
    timestamp = bool(_plain(expected["timestamp"]) != _plain(actual.get("timestamp")))
    expired = bool(expected.get("expired", False)) != bool(actual.get("expired", False))
    return timestamp + expired + _values_distance(expected["data"], actual["data"], schema)


def compare_events(
    expected: list[dict[str, Any]],
    actual: list[dict[str, Any]],
    schema: list[list[str]] | None,
    ordered: bool,
) -> str | None:
    """None if the event lists are equal by the README's rules, else the first difference."""
    return _compare_lists(
        expected,
        actual,
        ordered,
        lambda e, a: _event_difference(e, a, schema),
        lambda e, a: _event_distance(e, a, schema),
        _show_event,
        "event",
    )


def compare_store_rows(
    expected: list[list[Any]],
    actual: list[list[Any]],
    ordered: bool = False,
    schema: list[list[str]] | None = None,
) -> str | None:
    """None if two on-demand query results are equal (multisets unless ordered), else why not."""
    return _compare_lists(
        expected,
        actual,
        ordered,
        lambda e, a: _values_difference(e, a, schema),
        lambda e, a: _values_distance(e, a, schema),
        _show_row,
        "row",
    )


# ---------------------------------------------------------------------------------------------
# whole cases

_INFO_NAME = re.compile(r"@info\s*\([^)]*?\bname\s*=\s*['\"]([^'\"]+)['\"][^)]*\)([^;]*)", re.I)
_INTO = re.compile(r"\binto\s+(\w+)", re.I)


def query_targets(app: str) -> dict[str, str]:
    """``@info(name=...)`` query name -> the stream it inserts into, to find its schema.

    A regular expression, not the parser: this module must not depend on the code it tests.
    """
    targets = {}
    for match in _INFO_NAME.finditer(app):
        if into := _INTO.search(match.group(2)):
            targets[match.group(1)] = into.group(1)
    return targets


def compare_case(
    case: Case,
    streams: Mapping[str, list[dict[str, Any]]],
    queries: Mapping[str, list[dict[str, Any]]] | None,
    store: Sequence[list[list[Any]]],
) -> list[str]:
    """Every difference between a replay of ``case`` and its expectations; empty when it passes.

    ``streams``/``queries`` map names to emitted events (a name absent means nothing was
    emitted); ``queries=None`` skips the per-query check. ``store[k]`` holds the rows of the
    k-th ``store_query`` input, in input order.
    """
    if case.expected is None:
        raise ValueError(f"{case.name} is an invalid-app case: check expected_error instead")
    differences = []
    for stream, events in case.expected.items():
        schema = case.schemas.get(stream)
        if diff := compare_events(events, list(streams.get(stream, [])), schema, case.ordered):
            differences.append(f"stream {stream}: {diff}")
    if queries is not None:
        targets = query_targets(case.app)
        for query, events in case.expected_queries.items():
            schema = case.schemas.get(targets.get(query, ""))
            actual = list(queries.get(query, []))
            if diff := compare_events(events, actual, schema, case.ordered):
                differences.append(f"query {query}: {diff}")
    store_inputs = [i for i, item in enumerate(case.inputs) if "store_query" in item]
    for entry in case.expected_store:
        index = entry["input_index"]
        k = store_inputs.index(index)
        if k >= len(store):
            differences.append(f"store query at input {index}: no result (got {len(store)})")
        elif diff := compare_store_rows(entry["rows"], list(store[k]), entry["ordered"]):
            differences.append(f"store query at input {index}: {diff}")
    return differences
