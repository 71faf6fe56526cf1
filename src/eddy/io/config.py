"""What sources and sinks take from the process rather than from the app's annotations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eddy.io.inmemory_broker import InMemoryBroker, default_broker
from eddy.io.metrics import IoMetrics

if TYPE_CHECKING:
    from eddy.io.sources.http_server import HttpServerPool

Authenticate = Callable[[str, str], bool]
"""``(username, password) -> bool``: whether basic-auth credentials are valid."""
Behind = Callable[[str], float]
"""``stream -> seconds``: how far the consumers of a stream's topic are behind (0 when
caught up); HTTP sources answer 503 while it exceeds ``IoConfig.max_behind_s``."""


@dataclass
class IoConfig:
    """Process-level settings of :func:`~eddy.io.factory.build_sources` and
    :func:`~eddy.io.factory.build_sinks`."""

    state_dir: Path = Path("eddy-data/io")
    """Where file sources keep their read positions (``<app>.<stream>.<n>.position.json``)."""
    http_servers: HttpServerPool | None = None
    """The HTTP servers sources share; None: the process's pool."""
    http_max_body_bytes: int = 16 * 1024 * 1024
    """Request bodies above this are answered 413 (``request.size.validation`` of a source
    can lower it)."""
    authenticate: Authenticate | None = None
    """Checks credentials of sources with ``basic.auth.enabled='true'`` (required then)."""
    behind: Behind | None = None
    max_behind_s: float = 30.0
    max_retry_after_s: int = 60
    broker: InMemoryBroker = field(default_factory=default_broker)
    """Where ``inMemory`` sources and sinks meet (Siddhi's ``InMemoryBroker``)."""
    sink_token: Callable[[str], str] | None = None
    """``app -> token`` when the app's sink-id token is shared with another node (minimum
    HA keeps it in the cluster database); None: a random token kept under ``state_dir``."""
    metrics: IoMetrics = field(default_factory=IoMetrics)
