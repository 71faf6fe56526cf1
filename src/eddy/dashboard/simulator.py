"""The event simulator: single events, or the rows of a CSV file at a chosen rate, posted
to a stream's HTTP source (``@source(type='http')``) as WSO2's JSON mapping expects them
(``{"event": {attribute: value}}``).

The worker has no simulation endpoint, and the HTTP source is how events reach a running
app from outside; an app without one cannot be fed from the dashboard (the page says so).
Values are converted to the stream's attribute types here, so a bad CSV cell is reported
with its row and column instead of being sent.
"""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from eddy.dashboard.app_text import HttpInput

MAX_RATE = 10_000.0
BUSY_WAIT_S = 300.0
_ids = itertools.count(1)


class SimulationError(ValueError):
    """Input that cannot become events (a bad value, a wrong number of columns)."""


def convert(value: str, attr_type: str, where: str) -> Any:
    """A text value as the attribute's type."""
    text = value.strip()
    kind = attr_type.upper()
    try:
        if kind in ("INT", "LONG"):
            return int(text)
        if kind in ("FLOAT", "DOUBLE"):
            return float(text)
        if kind == "BOOL":
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
    except ValueError:
        raise SimulationError(f"{where}: '{value}' is not a {kind.lower()}") from None
    return value


def event(values: list[str], target: HttpInput, where: str) -> dict[str, Any]:
    """``{"event": {…}}`` of one row of values in the stream's attribute order."""
    if len(values) != len(target.attributes):
        raise SimulationError(f"{where}: {len(values)} values for {len(target.attributes)} "
                              f"attributes ({', '.join(a for a, _ in target.attributes)})")
    return {"event": {name: convert(v, kind, f"{where}, {name}")
                      for v, (name, kind) in zip(values, target.attributes, strict=True)}}


def csv_events(text: str, target: HttpInput) -> list[dict[str, Any]]:
    """Every row of a CSV text as an event; a header row naming the attributes is skipped."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    names = [a for a, _ in target.attributes]
    if rows and [c.strip() for c in rows[0]] == names:
        rows = rows[1:]
    return [event(row, target, f"row {i + 1}") for i, row in enumerate(rows)]


@dataclass
class Simulation:
    """A CSV run in progress or done."""

    id: int
    stream: str
    total: int
    rate: float
    sent: int = 0
    error: str = ""
    done: bool = False
    started: float = field(default_factory=time.monotonic)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "stream": self.stream, "total": self.total, "sent": self.sent,
                "rate": self.rate, "error": self.error, "done": self.done}


async def post_event(client: httpx.AsyncClient, target: HttpInput, body: dict[str, Any],
                     auth: tuple[str, str] | None, busy_s: float = BUSY_WAIT_S) -> None:
    """Posts one event; SimulationError with the source's answer when it refuses it.

    A source whose app is behind answers 503 with ``Retry-After``: the event is sent again
    after that many seconds, for up to ``busy_s`` seconds in all (back-pressure, not an
    error, unless the app stays behind)."""
    deadline = time.monotonic() + busy_s
    while True:
        try:
            response = (await client.post(target.url, json=body, auth=auth)
                        if auth is not None else await client.post(target.url, json=body))
        except httpx.HTTPError as error:
            raise SimulationError(f"cannot reach {target.url}: {error}") from None
        if response.status_code == 503 and time.monotonic() < deadline:
            retry = response.headers.get("Retry-After", "1")
            await asyncio.sleep(min(5.0, float(retry) if retry.isdigit() else 1.0))
            continue
        if response.status_code >= 300:
            raise SimulationError(f"{target.url} answered {response.status_code}: "
                                  f"{response.text[:300]}")
        return


class Simulator:
    """Runs CSV simulations in the background; keeps the recent ones for their progress."""

    def __init__(self) -> None:
        self.runs: dict[int, Simulation] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, target: HttpInput, events: list[dict[str, Any]], rate: float,
              auth: tuple[str, str] | None) -> Simulation:
        if not 0 < rate <= MAX_RATE:
            raise SimulationError(f"the rate must be between 0 and {MAX_RATE:g} events/s")
        run = Simulation(next(_ids), target.stream, len(events), rate)
        self.runs[run.id] = run
        for old in sorted(self.runs)[:-20]:
            del self.runs[old]
        task = asyncio.create_task(self._run(run, target, events, auth))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    async def _run(self, run: Simulation, target: HttpInput, events: list[dict[str, Any]],
                   auth: tuple[str, str] | None) -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            try:
                for index, body in enumerate(events):
                    due = run.started + index / run.rate
                    delay = due - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    await post_event(client, target, body, auth)
                    run.sent += 1
            except SimulationError as error:
                run.error = str(error)
            finally:
                run.done = True

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
