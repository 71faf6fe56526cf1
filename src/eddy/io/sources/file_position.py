"""Where a file source is in its file, kept in a small JSON file so a restart resumes there.

Before landing the events of bytes ``[position, pending_end)`` the source saves that range;
after they are durable it saves ``position = pending_end``. A restart that finds a pending
range re-reads exactly that range and appends it with the same idempotence key (the bus
drops it if the first append got through), so no event is lost or landed twice.
``generation`` counts truncations and rotations: offsets restart at 0 in a new generation,
and the idempotence key includes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class FilePosition:
    """The read position of one file source."""

    position: int = 0
    pending_end: int | None = None
    generation: int = 0
    inode: int | None = None

    @classmethod
    def load(cls, path: Path) -> FilePosition:
        """The saved position, or the start of the file when none was saved."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        return cls(int(data["position"]), data.get("pending_end"), int(data["generation"]),
                   data.get("inode"))

    def save(self, path: Path) -> None:
        """Writes the position durably (a crash leaves the old or the new one, whole)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(asdict(self), out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
