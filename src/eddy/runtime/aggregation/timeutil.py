"""Time arithmetic of incremental aggregations (the reference's ``IncrementalTimeConverterUtil``,
``IncrementalUnixTimeFunctionExecutor`` and ``IncrementalStartTimeEndTimeFunctionExecutor``).

Buckets are aligned to UTC calendar boundaries: seconds, minutes, hours and days by plain
division, months and years by the calendar. Timestamps are epoch milliseconds.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from eddy.runtime.events import DroppedEventError

__all__ = ["DURATION_MILLIS", "GRANULARITIES", "AggregationTimeError", "bucket_start",
           "next_bucket_start", "normalize_duration", "parse_timestamp", "to_millis",
           "within_range"]

GRANULARITIES = ("SECONDS", "MINUTES", "HOURS", "DAYS", "MONTHS", "YEARS")
"""Every granularity an aggregation can keep, finest first (Siddhi keeps no weeks)."""

DURATION_MILLIS = {"SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000,
                   "DAYS": 86_400_000}

_PER_NAMES = {
    "sec": "SECONDS", "second": "SECONDS", "seconds": "SECONDS",
    "min": "MINUTES", "minute": "MINUTES", "minutes": "MINUTES",
    "hour": "HOURS", "hours": "HOURS",
    "day": "DAYS", "days": "DAYS",
    "month": "MONTHS", "months": "MONTHS",
    "year": "YEARS", "years": "YEARS",
}

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?: ([+-]\d{2}:\d{2}))?")
_FIELD = r"(\d{2}|\*\*)"
_PATTERN = re.compile(rf"(\d{{4}})-{_FIELD}-{_FIELD} {_FIELD}:{_FIELD}:{_FIELD}"
                      r"(?: ([+-]\d{2}:\d{2}))?")


class AggregationTimeError(DroppedEventError):
    """A timestamp, ``within`` range or ``per`` value the reference rejects at run time: the
    event that met it is dropped; an on-demand query that meets it fails."""


def normalize_duration(value: object) -> str:
    """The granularity a ``per`` value names (``'seconds'``, ``'min'``, ``'YEARS'``…)."""
    text = str(value).strip()
    found = _PER_NAMES.get(text.lower())
    if found is None and text.upper() in GRANULARITIES:
        found = text.upper()
    if found is None:
        raise AggregationTimeError(
            f"per value '{text}' is not a granularity: use seconds, minutes, hours, days, "
            "months or years")
    return found


def _datetime(millis: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=millis)


def _millis(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def bucket_start(millis: int, granularity: str) -> int:
    """The start of the ``granularity`` bucket holding ``millis`` (UTC calendar)."""
    size = DURATION_MILLIS.get(granularity)
    if size is not None:
        return millis - millis % size
    moment = _datetime(millis)
    if granularity == "MONTHS":
        return _millis(datetime(moment.year, moment.month, 1, tzinfo=_UTC))
    if granularity == "YEARS":
        return _millis(datetime(moment.year, 1, 1, tzinfo=_UTC))
    raise AggregationTimeError(f"unknown granularity '{granularity}'")


def next_bucket_start(millis: int, granularity: str) -> int:
    """The start of the bucket after the one holding ``millis``."""
    size = DURATION_MILLIS.get(granularity)
    if size is not None:
        return millis - millis % size + size
    moment = _datetime(millis)
    if granularity == "MONTHS":
        year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year,
                                                                          moment.month + 1)
        return _millis(datetime(year, month, 1, tzinfo=_UTC))
    if granularity == "YEARS":
        return _millis(datetime(moment.year + 1, 1, 1, tzinfo=_UTC))
    raise AggregationTimeError(f"unknown granularity '{granularity}'")


def _offset(text: str | None) -> timezone:
    if text is None:
        return _UTC
    sign = -1 if text[0] == "-" else 1
    hours, minutes = int(text[1:3]), int(text[4:6])
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_timestamp(text: str) -> int:
    """Epoch millis of ``yyyy-MM-dd HH:mm:ss`` (UTC) or ``yyyy-MM-dd HH:mm:ss +05:30``."""
    match = _DATE.fullmatch(text.strip())
    if match is None:
        raise AggregationTimeError(
            f"timestamp '{text}' is not in a supported format: <yyyy>-<MM>-<dd> "
            "<HH>:<mm>:<ss> (GMT) or <yyyy>-<MM>-<dd> <HH>:<mm>:<ss> <Z> (e.g. +05:30)")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=_offset(match[7]))
    except ValueError as error:
        raise AggregationTimeError(f"timestamp '{text}': {error}") from None
    return _millis(moment.astimezone(_UTC))


def to_millis(value: object) -> int:
    """An ``aggregate by`` or ``within`` value as epoch millis: a long, or a date string."""
    if isinstance(value, bool) or value is None:
        raise AggregationTimeError(f"'{value}' is not a timestamp")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return parse_timestamp(str(value))


def _pattern_range(text: str) -> tuple[int, int]:
    match = _PATTERN.fullmatch(text.strip())
    if match is None:
        raise AggregationTimeError(
            f"within '{text}' is not in a supported format: <yyyy>-**-** **:**:**, "
            "<yyyy>-<MM>-** **:**:**, <yyyy>-<MM>-<dd> **:**:**, <yyyy>-<MM>-<dd> <HH>:**:**, "
            "<yyyy>-<MM>-<dd> <HH>:<mm>:** or <yyyy>-<MM>-<dd> <HH>:<mm>:<ss>, each optionally "
            "followed by a UTC offset such as +05:30")
    fields = list(match.groups()[1:6])
    given = 0
    while given < len(fields) and fields[given] != "**":
        given += 1
    if any(f != "**" for f in fields[given:]):
        raise AggregationTimeError(f"within '{text}': only trailing fields may be '**'")
    defaults = ["01", "01", "00", "00", "00"]
    filled = fields[:given] + defaults[given:]
    zone = f" {match[7]}" if match[7] else ""
    start = parse_timestamp(f"{match[1]}-{filled[0]}-{filled[1]} {filled[2]}:{filled[3]}:"
                            f"{filled[4]}{zone}")
    if given == 0:  # '2017-**-** **:**:**': the year, in the given offset
        return start, _calendar_next(start, match[7], years=True)
    if given == 1:
        return start, _calendar_next(start, match[7], years=False)
    step = {2: 86_400_000, 3: 3_600_000, 4: 60_000, 5: 1000}[given]
    return start, start + step


def _calendar_next(start: int, offset: str | None, *, years: bool) -> int:
    local = _datetime(start).astimezone(_offset(offset))
    if years:
        following = local.replace(year=local.year + 1)
    elif local.month == 12:
        following = local.replace(year=local.year + 1, month=1)
    else:
        following = local.replace(month=local.month + 1)
    return _millis(following.astimezone(_UTC))


def within_range(values: tuple[object, ...]) -> tuple[int, int]:
    """``[start, end)`` of a ``within`` clause: two longs or date strings, or one pattern."""
    if len(values) == 1:
        value = values[0]
        if not isinstance(value, str):
            raise AggregationTimeError("a single 'within' value must be a date pattern string")
        return _pattern_range(value)
    if len(values) != 2:
        raise AggregationTimeError("'within' takes one pattern or a start and an end")
    if any(v is None for v in values):
        raise AggregationTimeError("start and end times for within duration cannot be null")
    start, end = to_millis(values[0]), to_millis(values[1])
    if not start < end:
        raise AggregationTimeError(
            f"the start time must be less than the end time in the within clause, but the "
            f"start is {start} and the end {end}")
    return start, end
