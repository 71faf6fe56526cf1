"""Bus positions in minimum HA: where a mirrored checkpoint resumes, how far a passive is
behind the active, and keeping bus retention off the events a successor still needs.

A query restored from a checkpoint resumes reading each input topic partition at the end
offsets of its last *committed* micro-batch (Spark's offset log, ``spark/offsets/<n>``,
third line: ``{topic: [position per partition]}``); a batch logged after it is re-run from
there. The active commits its consumer position (``<app>/main``) at the end of every batch,
but the database mirror of its checkpoint is pushed when a batch *starts*
(:mod:`eddy.store.revisions`), so the group's committed position can be one batch ahead of
where a successor resumes. Retention only keeps what some consumer still needs, so the
active also commits the mirror's resume position under a consumer of its own
(:func:`mirror_consumer`): events at or after it are never trimmed.
"""

from __future__ import annotations

import json
from pathlib import Path

from eddy.bus import Bus
from eddy.io.app_connectors import query_consumer

Positions = dict[str, list[int]]
"""``{topic: [next position to read, per partition]}``."""


def resume_positions(checkpoint: Path) -> Positions:
    """Where a query restored from ``checkpoint`` (the app's checkpoint folder, with Spark's
    ``spark/`` inside) resumes reading; empty when no micro-batch committed (the query then
    starts from the committed bus positions)."""
    spark = checkpoint / "spark"
    try:
        commits = [int(p.name) for p in (spark / "commits").iterdir() if p.name.isdigit()]
        if not commits:
            return {}
        lines = (spark / "offsets" / str(max(commits))).read_text().splitlines()
    except FileNotFoundError:  # no checkpoint yet, or Spark cleaned the file up meanwhile
        return {}
    positions: Positions = {}
    for line in lines[2:]:  # after the version and the batch metadata: one line per source
        found = json.loads(line) if line.startswith("{") else {}
        for topic, parts in found.items():
            positions[str(topic)] = [int(p) for p in parts]
    return positions


def lag_events(bus: Bus, app: str, positions: Positions) -> int:
    """Events the app's active query has committed past ``positions`` (what a passive that
    took over now would read again; 0 when it is level)."""
    consumer = query_consumer(app)
    behind = 0
    for topic, parts in positions.items():
        for partition, position in enumerate(parts):
            committed = bus.committed(consumer, topic, partition)
            if committed is not None and committed > position:
                behind += committed - position
    return behind


def mirror_consumer(app: str) -> str:
    """The consumer whose committed positions protect the app's mirrored checkpoint."""
    return f"ha-mirror:{query_consumer(app)}"


def protect(bus: Bus, app: str, positions: Positions) -> None:
    """Commits ``positions`` (the mirror's resume point) so retention keeps what follows."""
    consumer = mirror_consumer(app)
    for topic, parts in positions.items():
        for partition, position in enumerate(parts):
            bus.commit(consumer, topic, partition, position)
