"""``#window.cron('<quartz cron>')``: a tumbling window that flushes on a cron schedule.

The reference fires a Quartz job on the wall clock, so it has no reproducible output in
playback. eddy evaluates the schedule in event time (UTC): the first flush is the first cron
instant after the window's first event, each flush arms the next instant after the clock,
and a flush emits the previous batch as expired events (stamped with the clock) followed by
the current batch; nothing is emitted while the current batch is empty. There is no reset
event, as in the reference.

Supported cron syntax: seconds minutes hours day-of-month month day-of-week [year] with
``*``, ``?``, numbers, names (``JAN``, ``MON``), ranges, lists and ``/`` steps. Quartz's
``L``, ``W`` and ``#`` are rejected.
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta, timezone

from eddy.runtime.events import CURRENT, EXPIRED, TIMER, Event
from eddy.runtime.windows.base import Chunk, Slots, Window, WindowArgs

_MONTHS = {m: i for i, m in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1)}
_DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}


def _field(text: str, low: int, high: int, names: dict[str, int] | None = None) -> set[int] | None:
    """The values a cron field allows; None for ``?`` (no constraint)."""
    if text == "?":
        return None
    if any(c in text for c in "LW#"):
        raise ValueError(f"cron field '{text}': L, W and # are not supported")
    values: set[int] = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            step = int(step_text)
        if part in ("*", ""):
            start, end = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            start, end = _value(a, names), _value(b, names)
        else:
            start = _value(part, names)
            end = high if step > 1 or "/" in text else start
        values.update(range(start, end + 1, step))
    return {v for v in values if low <= v <= high}


def _value(text: str, names: dict[str, int] | None) -> int:
    upper = text.upper()
    if names and upper in names:
        return names[upper]
    return int(text)


class CronSchedule:
    """A parsed Quartz cron expression, evaluated in UTC."""

    def __init__(self, expression: str) -> None:
        parts = expression.split()
        if len(parts) not in (6, 7):
            raise ValueError(f"cron expression '{expression}' needs 6 or 7 fields")
        self.seconds = _field(parts[0], 0, 59) or set(range(60))
        self.minutes = _field(parts[1], 0, 59) or set(range(60))
        self.hours = _field(parts[2], 0, 23) or set(range(24))
        self.days = _field(parts[3], 1, 31)
        self.months = _field(parts[4], 1, 12, _MONTHS) or set(range(1, 13))
        self.weekdays = _field(parts[5], 1, 7, _DAYS)
        self.years = _field(parts[6], 1970, 2199) if len(parts) == 7 else None

    def _day_matches(self, moment: datetime) -> bool:
        if self.days is not None and moment.day not in self.days:
            return False
        quartz_weekday = (moment.weekday() + 1) % 7 + 1  # Monday=0 -> 2, Sunday=6 -> 1
        return self.weekdays is None or quartz_weekday in self.weekdays

    def next_after(self, millis: int) -> int | None:
        """The first instant strictly after ``millis``; None if there is none before 2200."""
        moment = datetime.fromtimestamp(millis // 1000 + 1, tz=timezone.utc)
        for _ in range(200_000):
            if moment.year > 2199:
                return None
            if self.years is not None and moment.year not in self.years:
                moment = datetime(moment.year + 1, 1, 1, tzinfo=timezone.utc)
            elif moment.month not in self.months:
                days = calendar.monthrange(moment.year, moment.month)[1] - moment.day + 1
                moment = (moment + timedelta(days=days)).replace(hour=0, minute=0, second=0)
            elif not self._day_matches(moment):
                moment = (moment + timedelta(days=1)).replace(hour=0, minute=0, second=0)
            elif moment.hour not in self.hours:
                moment = (moment + timedelta(hours=1)).replace(minute=0, second=0)
            elif moment.minute not in self.minutes:
                moment = (moment + timedelta(minutes=1)).replace(second=0)
            elif moment.second not in self.seconds:
                moment += timedelta(seconds=1)
            else:
                return int(moment.timestamp()) * 1000
        return None


class CronState(Slots):
    __slots__ = ("current", "expired", "armed")

    def __init__(self) -> None:
        self.current: list[Event] = []
        self.expired: list[Event] = []
        self.armed = False


class CronWindow(Window):
    mode = "BATCH"
    scheduling = True

    def configure(self, args: WindowArgs) -> None:
        self.schedule = CronSchedule(str(args.constant(0)))

    def fresh_state(self) -> CronState:
        return CronState()

    def _arm(self, state: CronState) -> None:
        due = self.schedule.next_after(self.context.now)
        if due is not None:
            self.notify_at(due)
            state.armed = True

    def process(self, chunk: Chunk) -> list[Chunk]:
        state: CronState = self.state
        out: Chunk = []
        for event in chunk:
            if event[0] == CURRENT:
                state.current.append(event)
                if not state.armed:
                    self._arm(state)
            elif event[0] == TIMER:
                state.armed = False
                if state.current:
                    now = self.context.now
                    out.extend((EXPIRED, now, e[2]) for e in state.expired)
                    state.expired = [(EXPIRED, e[1], e[2]) for e in state.current]
                    out.extend(state.current)
                    state.current = []
                self._arm(state)
        return [out] if out else []
