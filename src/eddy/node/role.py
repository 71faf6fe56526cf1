"""What part a node plays in its cluster: the contract the API, `/health`, `/statistics`
and the dashboard read, and that minimum HA (and later the manager) keeps current.

A single node is always ``active`` and in no cluster. In a minimum-HA group the lease in the
cluster database decides ``active`` or ``passive`` (see the HA role keeper that sets it);
readers only ever see a consistent snapshot, because :class:`NodeRole` is frozen and the
worker swaps the whole object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["single", "ha", "distributed"]
Status = Literal["active", "passive", "starting"]


@dataclass(frozen=True)
class NodeRole:
    """A snapshot of the node's role; every time is epoch milliseconds."""

    mode: Mode = "single"
    status: Status = "active"
    cluster_id: str | None = None   # cluster.config.groupId in HA
    node_id: str | None = None
    epoch: int | None = None        # the lease epoch this node holds or last saw
    holder: str | None = None       # the node id holding the lease
    last_renewal_ms: int | None = None
    in_sync: bool = True            # passive: its state follows the active's latest revision
    last_sync_ms: int | None = None
    lag_events: int | None = None   # passive: bus events the active committed past its restore
    reason: str = ""                # why the role last changed

    @property
    def is_active(self) -> bool:
        """Whether this node may run sources, sinks and the store query API."""
        return self.status == "active"


SINGLE_NODE = NodeRole()
