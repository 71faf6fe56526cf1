"""Where a running group stands: the snapshot a runner gives its worker and the node API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from eddy.engine.spark.bus_source import Offsets


@dataclass(frozen=True)
class RunnerStatus:
    """A snapshot of a runner: its state, the last completed batch, what it wrote."""

    state: Literal["created", "running", "stopped", "failed"]
    query_id: str | None
    last_batch_id: int | None
    input_offsets: Offsets | None
    """End offsets (per input topic and partition) of the last completed micro-batch."""
    events_out: dict[str, int]
    """Events appended per output stream since a runner first started on this checkpoint
    in this process."""
    query_events: dict[str, int] = field(default_factory=dict)
    """Rows each query emitted (into streams, tables, …), counted as ``events_out``."""
    failed_queries: int = 0
    """On-demand queries that failed while running, counted as ``events_out``."""
    busy: bool = False
    """Whether a micro-batch with new data is being run right now."""
    error: str | None = None
    mode: Literal["micro-batch", "real-time"] = "micro-batch"
