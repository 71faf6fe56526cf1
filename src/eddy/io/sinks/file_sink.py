"""``@sink(type='file', file.uri='file:/data/alerts.jsonl', @map(type='json'))``: events
appended to a file, one payload per line (siddhi-io-file).

Options: ``file.uri`` (required; ``file:/path`` or a path), ``append`` (default true;
false keeps only the latest event in the file, as Siddhi overwrites it per event) and
``add.line.separator`` (default true). ``publish`` returns after the lines are flushed and
fsynced.

Guarantee: at-least-once — a batch published again is appended again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from eddy.io.api import Event, Guarantee
from eddy.io.errors import PublishError
from eddy.io.mappers.base import SinkMapper
from eddy.io.metrics import IoMetrics
from eddy.io.sinks.base import MappedSink
from eddy.lang.ast import Attribute


class FileSink(MappedSink):
    """Appends each event's payload to a file (see the module docstring)."""

    type = "file"
    guarantee: Guarantee = "at-least-once"

    def __init__(self, stream: str, attributes: Sequence[Attribute], mapper: SinkMapper,
                 metrics: IoMetrics, *, path: Path, append: bool = True,
                 line_separator: bool = True) -> None:
        super().__init__(stream, attributes, mapper, metrics)
        self.path = path
        self.append = append
        self.separator = "\n" if line_separator else ""
        self._lock = threading.Lock()

    def _send(self, events: list[Event], ids: Sequence[str] | None) -> None:
        payloads = [self.mapper.text(e) + self.separator for e in events]
        if not self.append:
            payloads = payloads[-1:]
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a" if self.append else "w", encoding="utf-8") as out:
                    out.write("".join(payloads))
                    out.flush()
                    os.fsync(out.fileno())
        except OSError as error:
            raise PublishError(f"{self.describe()}: cannot write {self.path}: {error}") from None
