"""A group's checkpoint directory: whose it is, and readying an earlier copy to resume from.

A runner stopped (or crashed) and started again on the same checkpoint resumes exactly:
Spark replays a batch it had not committed with the same offsets, the source gives its
events the same ``_seq``, the state store gives back the state before the batch, and the
bus drops the outputs of the batch that were already appended. That holds only for the
app and group the checkpoint was written for (:func:`claim_checkpoint`), and a copy of an
earlier checkpoint (a revision) must first be made a new query's (:func:`prepare_restore`).

Inside ``checkpoint_dir``, ``group.json`` names its owner, and Spark keeps the micro-batch
query's checkpoint under :data:`MICRO_BATCH_CHECKPOINT` and the real-time query's under
:data:`REAL_TIME_CHECKPOINT`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

from eddy.engine.run.bus_sink import SinkStats

MICRO_BATCH_CHECKPOINT = "spark"
"""Spark's checkpoint of the group's micro-batch query."""
REAL_TIME_CHECKPOINT = "spark-rt"
"""The checkpoint of the group's real-time query, apart from its micro-batch query's: the
two run different sources, and switching between them resumes from the bus positions."""
OWNER = "group.json"

# The sink's counters per checkpoint, so a group's figures grow across the restarts of its
# query in this process (a backup or restore restarts it) instead of falling back to zero.
_stats: dict[Path, SinkStats] = {}


def claim_checkpoint(checkpoint_dir: Path, group: str, app_text: str) -> None:
    """Creates ``checkpoint_dir`` for ``group`` running ``app_text``, or refuses one written
    for another app or group: its offsets and state would be silently misread."""
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    marker = checkpoint_dir / OWNER
    mine = {"group": group, "app_sha256": hashlib.sha256(app_text.encode()).hexdigest()}
    if marker.exists():
        theirs = json.loads(marker.read_text())
        if theirs != mine:
            raise ValueError(f"checkpoint {checkpoint_dir} belongs to group "
                             f"{theirs.get('group')} with another app text; use a new "
                             f"checkpoint directory for a changed app")
    else:
        marker.write_text(json.dumps(mine))


def prepare_restore(checkpoint_dir: str | Path) -> None:
    """Readies a copy of an earlier checkpoint of a group (a revision) to become its live
    checkpoint, before the runner starts on it.

    The bus sink deduplicates outputs by (Spark query id, batch id). After a restore,
    Spark plans new batches from the revision's offsets with batch ids the abandoned run
    already used, for other events; under the old id the bus would drop their outputs
    as duplicates. So the restored checkpoint gets a new query id: Spark keeps it in
    ``spark/metadata`` (JSON with ``id``), which exists whenever the offset log does.
    """
    for spark_dir in (MICRO_BATCH_CHECKPOINT, REAL_TIME_CHECKPOINT):
        path = Path(checkpoint_dir) / spark_dir / "metadata"
        if path.is_file():
            metadata = json.loads(path.read_text(encoding="utf-8"))
            metadata["id"] = str(uuid.uuid4())
            path.write_text(json.dumps(metadata), encoding="utf-8")
            # Hadoop's checksum of the old text would fail the read (a missing one is fine)
            path.with_name(f".{path.name}.crc").unlink(missing_ok=True)


def sink_stats(checkpoint_dir: Path) -> SinkStats:
    """The output counters of the group on ``checkpoint_dir`` in this process."""
    return _stats.setdefault(checkpoint_dir.resolve(), SinkStats())
