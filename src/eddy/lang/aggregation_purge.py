"""``@purge`` on ``define aggregation``: how long each granularity's rows are kept.

As in the reference (``IncrementalDataPurger``), purging is on unless ``@purge(enable='false')``
says otherwise; it runs every ``interval`` (default 15 min) and deletes, per granularity,
the rows older than its retention. Retention defaults and minimums (digest §4.7):

===========  =============  ===========
granularity  default        minimum
===========  =============  ===========
seconds      120 sec        120 sec
minutes      24 hours       120 min
hours        30 days        25 hours
days         1 year         32 days
months       all            13 months
years        all            none
===========  =============  ===========

A retention below its minimum, a granularity the aggregation does not keep, or a value that
is not a time (``'48 hours'``, ``'all'``) is an app error at the element's position.
Months are 30 days and years 365 days, as in the reference's ``Expression.Time``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eddy.lang import ast
from eddy.lang.scope import SemanticError

__all__ = ["DEFAULT_INTERVAL_MS", "PurgePolicy", "purge_policy", "time_to_millis"]

_SECOND = 1000
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_MONTH = 30 * _DAY
_YEAR = 365 * _DAY

DEFAULT_INTERVAL_MS = 15 * _MINUTE

_UNITS = {"SECONDS": _SECOND, "MINUTES": _MINUTE, "HOURS": _HOUR, "DAYS": _DAY,
          "MONTHS": _MONTH, "YEARS": _YEAR}
_NAMES = {"sec": "SECONDS", "second": "SECONDS", "seconds": "SECONDS",
          "min": "MINUTES", "minute": "MINUTES", "minutes": "MINUTES",
          "h": "HOURS", "hour": "HOURS", "hours": "HOURS",
          "day": "DAYS", "days": "DAYS", "month": "MONTHS", "months": "MONTHS",
          "year": "YEARS", "years": "YEARS"}
_DEFAULTS: dict[str, int | None] = {"SECONDS": 120 * _SECOND, "MINUTES": 24 * _HOUR,
                                    "HOURS": 30 * _DAY, "DAYS": _YEAR, "MONTHS": None,
                                    "YEARS": None}
_MINIMUMS = {"SECONDS": 120 * _SECOND, "MINUTES": 120 * _MINUTE, "HOURS": 25 * _HOUR,
             "DAYS": 32 * _DAY, "MONTHS": 13 * _MONTH, "YEARS": 0}
_TIME = re.compile(r"\s*(\d+)\s*([A-Za-z]+)\s*")


@dataclass(frozen=True)
class PurgePolicy:
    """``enabled``, the ``interval`` between runs and the retention per granularity in
    millis (None keeps everything)."""

    enabled: bool = True
    interval: int = DEFAULT_INTERVAL_MS
    retention: dict[str, int | None] = field(default_factory=dict)


def time_to_millis(text: str) -> int | None:
    """``'150 sec'``, ``'48 hours'``, ``'2 years'`` as millis; None if it is not a time."""
    match = _TIME.fullmatch(text)
    if match is None or match[2].lower() not in _NAMES:
        return None
    return int(match[1]) * _UNITS[_NAMES[match[2].lower()]]


def purge_policy(definition: ast.AggregationDefinition) -> PurgePolicy:
    """The aggregation's purge policy; raises :class:`SemanticError` for a bad ``@purge``."""
    kept: tuple[str, ...] = tuple(definition.granularities)
    retention: dict[str, int | None] = {g: _DEFAULTS[g] for g in kept}
    purge = ast.find_annotation(definition.annotations, "purge")
    if purge is None:
        return PurgePolicy(True, DEFAULT_INTERVAL_MS, retention)
    enable = _element(purge, "enable")
    if enable is not None and enable.value.lower() not in ("true", "false"):
        raise SemanticError(f"invalid value for enable: '{enable.value}'; use true or false",
                            enable.span)
    if enable is not None and enable.value.lower() == "false":
        return PurgePolicy(False, DEFAULT_INTERVAL_MS, retention)
    interval = DEFAULT_INTERVAL_MS
    given = _element(purge, "interval")
    if given is not None:
        parsed = time_to_millis(given.value)
        if parsed is None or parsed <= 0:
            raise SemanticError(f"purge interval '{given.value}' is not a time such as "
                                "'15 min'", given.span)
        interval = parsed
    for nested in purge.annotations:
        if not nested.is_named("retentionPeriod"):
            raise SemanticError(f"@purge takes @retentionPeriod, not @{nested.name}",
                                nested.span)
        for element in nested.elements:
            _retain(element, kept, retention)
    return PurgePolicy(True, interval, retention)


def _element(annotation: ast.Annotation, key: str) -> ast.AnnotationElement | None:
    for element in annotation.elements:
        if element.key is not None and element.key.lower() == key:
            return element
    return None


def _retain(element: ast.AnnotationElement, kept: tuple[str, ...],
            retention: dict[str, int | None]) -> None:
    granularity = _NAMES.get((element.key or "").lower())
    if granularity is None:
        raise SemanticError(f"'{element.key}' is not a granularity of @retentionPeriod",
                            element.span, "use sec, min, hours, days, months or years")
    if granularity not in kept:
        raise SemanticError(f"{granularity} granularity cannot be purged since the "
                            f"aggregation does not keep {granularity}", element.span)
    if element.value.strip().lower() == "all":
        retention[granularity] = None
        return
    millis = time_to_millis(element.value)
    if millis is None:
        raise SemanticError(f"retention period '{element.value}' is not a time such as "
                            "'48 hours' or 'all'", element.span)
    minimum = _MINIMUMS[granularity]
    if millis < minimum:
        raise SemanticError(
            f"{granularity} granularity cannot be purged with a retention of "
            f"'{element.value}': the minimum is {_show(minimum)}", element.span)
    retention[granularity] = millis


def _show(millis: int) -> str:
    for name, size in (("months", _MONTH), ("days", _DAY), ("hours", _HOUR),
                       ("minutes", _MINUTE), ("sec", _SECOND)):
        if millis % size == 0 and millis >= size:
            return f"{millis // size} {name}"
    return f"{millis} ms"
