"""A stand-in for an active node's driver, run as its own process by
``test_paused_push.py``: it pushes a checkpoint of 40 files of ``size`` random bytes, new
each time, to the mirror as fast as it can (a lease of ``lease_ms``) until it is fenced.

Usage: ``python checkpoint_pusher.py <sqlalchemy url> <table> <group> <folder> <size>
<lease ms>``. Prints ``ready`` after its first push.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from eddy.store.connect import connect
from eddy.store.fence import Fenced
from eddy.store.revisions import CheckpointMirror

FILES = 40


def main(url: str, table: str, group: str, folder: str, size: str, lease_ms: str) -> None:
    root = Path(folder)
    mirror = CheckpointMirror(connect(url), table, group, lease_ms=int(lease_ms))
    batch = 0
    try:
        while True:
            for n in range(FILES):
                state = root / "state" / str(n)
                state.mkdir(parents=True, exist_ok=True)
                (state / f"{batch}.delta").write_bytes(os.urandom(int(size)))
            mirror.push("app", root, 1, batch)
            if batch == 0:
                print("ready", flush=True)
            batch += 1
    except Fenced:
        print("fenced", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
