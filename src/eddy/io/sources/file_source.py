"""``@source(type='file', file.uri='file:/data/temp.csv', mode='line', tailing='true',
@map(type='csv'))``: lines of a file (siddhi-io-file).

``mode='line'`` (default): every line is one payload (a JSON object, a CSV row, …);
``tailing='true'`` (default) keeps reading lines appended later, polling every
``file.polling.interval`` ms (default 1000). ``mode='text.full'``: the whole file is one
payload, read once. A CSV mapper with ``header.present='true'`` takes the header from the
file's first line.

The read position is saved in a small file (:mod:`eddy.io.sources.file_position`) after
each batch is on the bus, so a restarted source resumes where it stopped. A file that
shrinks or is replaced (another inode) is read again from its start.

Guarantee: exactly-once into the bus — each batch is appended with the idempotence key
(file, generation, start offset) and its byte range is saved before the append, so a batch
re-read after a crash is recognised and not stored twice.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import BinaryIO

from eddy.bus.arrow_codec import now_ms
from eddy.io.api import DedupKey, Deliver, Guarantee, Source
from eddy.io.errors import SourceError
from eddy.io.ingest import Ingest
from eddy.io.mappers.csv_mapper import CsvSourceMapper
from eddy.io.sources.file_position import FilePosition

log = logging.getLogger("eddy.io.file")

CHUNK_BYTES = 1 << 20


class FileSource(Source):
    """Reads lines (or the whole text) of a file (see the module docstring)."""

    type = "file"
    guarantee: Guarantee = "exactly-once"

    def __init__(self, ingest: Ingest, path: Path, position_file: Path, *, tailing: bool = True,
                 whole_file: bool = False, poll_interval_s: float = 1.0) -> None:
        self.stream = ingest.stream
        self.ingest = ingest
        self.path = path
        self.position_file = position_file
        self.tailing = tailing and not whole_file
        self.whole_file = whole_file
        self.poll_interval_s = poll_interval_s
        self._state = FilePosition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._deliver: Deliver | None = None
        self._header_mapper: CsvSourceMapper | None = None
        self._header_bytes = 0
        self.finished = threading.Event()
        """Set once a non-tailing source has read the whole file."""

    @property
    def position(self) -> int:
        """The byte offset up to which events are on the bus."""
        return self._state.position

    def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        try:
            self._state = FilePosition.load(self.position_file)
        except (OSError, ValueError, KeyError) as error:
            raise SourceError(f"{self.describe()}: cannot read its position file "
                              f"{self.position_file}: {error}") from None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"eddy-file-source-{self.stream}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    # -- the reading thread -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                progressed = self._step()
            except Exception:  # keep the source alive; the next poll tries again
                log.exception("%s: reading %s failed", self.describe(), self.path)
                progressed = False
            if not progressed:
                if not self.tailing and self._state.pending_end is None and self._at_end():
                    self.finished.set()
                    return
                self._stop.wait(self.poll_interval_s)

    def _at_end(self) -> bool:
        try:
            return max(self._state.position, self._header_bytes) >= self.path.stat().st_size
        except FileNotFoundError:
            return False

    def _step(self) -> bool:
        """Lands the next batch of lines; False when there was nothing to land."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return False
        state = self._state
        if state.inode not in (None, stat.st_ino) or stat.st_size < state.position:
            log.warning("%s: %s was truncated or replaced; reading it from the start",
                        self.describe(), self.path)
            state = FilePosition(0, None, state.generation + 1, stat.st_ino)
            self._header_mapper = None
        elif state.inode is None:
            state = FilePosition(state.position, state.pending_end, state.generation,
                                 stat.st_ino)
        self._state = state
        with open(self.path, "rb") as file:
            first = self._skip_header(file)
            if first is None:
                return False
            start = max(state.position, first)
            if state.pending_end is not None:
                end = state.pending_end
                file.seek(start)
                data = file.read(end - start)
            else:
                data, end = self._next_chunk(file, start, stat.st_size)
        if end <= start:
            return False
        self._land(data, start, end)
        return True

    def _skip_header(self, file: BinaryIO) -> int | None:
        """Where events begin: after the header line for a CSV mapper with a header (read
        once per generation), else 0; None while the header line is incomplete."""
        mapper = self.ingest.mapper
        if not isinstance(mapper, CsvSourceMapper) or not mapper.header_present:
            return 0
        if self._header_mapper is None:
            file.seek(0)
            line = file.readline()
            if not line.endswith(b"\n"):
                return None
            self._header_mapper = mapper.with_header(line.decode("utf-8"))
            self._header_bytes = len(line)
        return self._header_bytes

    def _next_chunk(self, file: BinaryIO, start: int, size: int) -> tuple[bytes, int]:
        file.seek(start)
        if self.whole_file:
            data = file.read()
            return data, start + len(data)
        data = file.read(min(CHUNK_BYTES, max(size - start, 0)))
        if data and not data.endswith(b"\n"):
            data += file.readline()  # finish the last line, however long it is
        cut = data.rfind(b"\n") + 1
        if cut == 0 and not self.tailing and start + len(data) >= size:
            cut = len(data)  # a last line without a line break, in a file that is complete
        return data[:cut], start + cut

    def _land(self, data: bytes, start: int, end: int) -> None:
        assert self._deliver is not None
        pending = FilePosition(start, end, self._state.generation, self._state.inode)
        pending.save(self.position_file)
        self._state = pending
        if self.whole_file:
            payloads: list[object] = [data]
        else:
            payloads = [line.rstrip(b"\r") for line in data.split(b"\n") if line.strip()]
        mapper = self._header_mapper or self.ingest.mapper
        mapped = mapper.map(payloads)
        producer = f"file:{os.path.abspath(self.path)}:{self._state.generation}"
        self.ingest.land(self._deliver, mapped, now_ms(), dedup=DedupKey(producer, start))
        done = FilePosition(end, None, self._state.generation, self._state.inode)
        done.save(self.position_file)
        self._state = done
