"""The deployment folder ``<data>/deployment/siddhi-files``: one ``<app>.siddhi`` per app.

The folder is the source of truth for what should run, as in WSO2 SP: the REST API writes
and deletes files here, people and tools drop files here, and the registry makes the running
apps match it. Files are written under a temporary name and renamed, so a watcher never sees
half an app.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SUFFIX = ".siddhi"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}")


class BadAppName(ValueError):
    """An app name that cannot be a file name in the deployment folder."""


def check_name(name: str) -> str:
    """``name`` if it can name a file here: letters, digits, ``_ . -``; else BadAppName."""
    if not _NAME.fullmatch(name):
        raise BadAppName(f"app name {name!r} cannot name a file in the deployment folder: "
                         f"use letters, digits, '_', '.' and '-' (at most 200), not starting "
                         f"with '.' or '-'")
    return name


class DeploymentFolder:
    """The ``.siddhi`` files of the apps that should run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        """The file of app ``name``."""
        return self.path / f"{name}{SUFFIX}"

    def names(self) -> list[str]:
        """Apps with a file, sorted."""
        return sorted(p.stem for p in self.path.glob(f"*{SUFFIX}")
                      if p.is_file() and not p.name.startswith("."))

    def read(self, name: str) -> str | None:
        """The text of app ``name``'s file, None when there is none."""
        try:
            return self.file(name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        """Whether app ``name`` has a file."""
        return self.file(name).is_file()

    def write(self, name: str, text: str) -> None:
        """Writes the file atomically (a temporary dot-file, then a rename)."""
        target = self.file(check_name(name))
        staging = self.path / f".{target.name}.{os.getpid()}.tmp"
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, target)

    def delete(self, name: str) -> bool:
        """Deletes the file; False when there was none."""
        try:
            self.file(name).unlink()
        except FileNotFoundError:
            return False
        return True

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """``{app: (mtime_ns, size)}`` of every file, to notice changes cheaply."""
        result: dict[str, tuple[int, int]] = {}
        for path in self.path.glob(f"*{SUFFIX}"):
            if path.name.startswith("."):
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            result[path.stem] = (stat.st_mtime_ns, stat.st_size)
        return result
