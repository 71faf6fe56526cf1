"""A node's high-availability state as its ``GET /ha`` reports it, and the failover
timeline of a group of nodes.

The contract (JSON, camelCase): ``mode``, ``status``, ``clusterId``, ``nodeId``, ``epoch``,
``holder``, ``lastRenewalMs``, ``inSync``, ``lastSyncMs``, ``lagEvents``, ``reason``,
``plannedApps`` (a passive's apps that a takeover only starts; optional) and
``history``: ``[{atMs, status, epoch, holder, reason, lossMs?, recoveredMs?,
firstOutputMs?}]`` (a takeover's loss of the previous holder, the time its apps were active
again and the time its first outputs were on the bus). A body that breaks it is an
:class:`HaFormatError` naming the field, shown on the page instead of a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


class HaFormatError(ValueError):
    """A ``/ha`` body that does not follow the contract."""


@dataclass(frozen=True)
class HaEvent:
    """One change of a node's role: when, to what, under which epoch and lease holder."""

    at_ms: int
    status: str
    epoch: int
    holder: str | None
    reason: str
    loss_ms: int | None = None
    recovered_ms: int | None = None
    first_output_ms: int | None = None


@dataclass(frozen=True)
class HaState:
    """One node's ``/ha``."""

    mode: str
    status: str
    cluster_id: str | None
    node_id: str
    epoch: int
    holder: str | None
    last_renewal_ms: int | None
    in_sync: bool | None
    last_sync_ms: int | None
    lag_events: int | None
    reason: str
    history: tuple[HaEvent, ...]
    planned_apps: tuple[str, ...] = ()


def _field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...],
           optional: bool = False) -> Any:
    value = body.get(name)
    if value is None:
        if optional:
            return None
        raise HaFormatError(f"/ha: '{name}' is missing")
    if isinstance(value, bool) and kind is int:
        raise HaFormatError(f"/ha: '{name}' should be a number, not {value!r}")
    if not isinstance(value, kind):
        raise HaFormatError(f"/ha: '{name}' should be {getattr(kind, '__name__', kind)}, "
                            f"not {value!r}")
    return value


def _event(entry: Any, index: int) -> HaEvent:
    if not isinstance(entry, Mapping):
        raise HaFormatError(f"/ha: history[{index}] should be an object")
    try:
        return HaEvent(at_ms=_field(entry, "atMs", int), status=_field(entry, "status", str),
                       # a node still joining its group has no epoch yet
                       epoch=_field(entry, "epoch", int, optional=True) or 0,
                       holder=_field(entry, "holder", str, optional=True),
                       reason=_field(entry, "reason", str, optional=True) or "",
                       loss_ms=_field(entry, "lossMs", int, optional=True),
                       recovered_ms=_field(entry, "recoveredMs", int, optional=True),
                       first_output_ms=_field(entry, "firstOutputMs", int, optional=True))
    except HaFormatError as error:
        raise HaFormatError(str(error).replace("/ha: ", f"/ha: history[{index}]: ")) from None


def parse_ha(body: Any) -> HaState:
    """The HA state in a ``/ha`` body."""
    if not isinstance(body, Mapping):
        raise HaFormatError("/ha: the body should be a JSON object")
    history = body.get("history")
    history = [] if history is None else history
    if not isinstance(history, list):
        raise HaFormatError("/ha: 'history' should be a list")
    return HaState(
        mode=_field(body, "mode", str), status=_field(body, "status", str),
        cluster_id=_field(body, "clusterId", str, optional=True),
        node_id=_field(body, "nodeId", str), epoch=_field(body, "epoch", int),
        holder=_field(body, "holder", str, optional=True),
        last_renewal_ms=_field(body, "lastRenewalMs", int, optional=True),
        in_sync=_field(body, "inSync", bool, optional=True),
        last_sync_ms=_field(body, "lastSyncMs", int, optional=True),
        lag_events=_field(body, "lagEvents", int, optional=True),
        reason=_field(body, "reason", str, optional=True) or "",
        history=tuple(_event(e, i) for i, e in enumerate(history)),
        planned_apps=_names(body, "plannedApps"))


def _names(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """An optional list of strings."""
    value = _field(body, name, list, optional=True) or []
    if not all(isinstance(item, str) for item in value):
        raise HaFormatError(f"/ha: '{name}' should be a list of names, not {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class TimelineEntry:
    """A role change on the group's timeline; ``failover`` when the lease changed hands."""

    at_ms: int
    node_id: str
    status: str
    epoch: int
    holder: str | None
    reason: str
    failover: bool
    loss_ms: int | None = None
    recovered_ms: int | None = None
    first_output_ms: int | None = None

    @property
    def recovery_ms(self) -> int | None:
        """From the loss of the previous holder to this node's apps all active."""
        if self.loss_ms is None or self.recovered_ms is None:
            return None
        return self.recovered_ms - self.loss_ms

    @property
    def output_ms(self) -> int | None:
        """From the loss of the previous holder to this node's first output on the bus."""
        if self.loss_ms is None or self.first_output_ms is None:
            return None
        return self.first_output_ms - self.loss_ms


def timeline(states: Iterable[HaState]) -> list[TimelineEntry]:
    """Every node's history merged, oldest first (one entry per distinct change); an entry
    is a failover when its epoch is new and the lease holder differs from the previous
    epoch's."""
    seen: set[tuple[int, str, str]] = set()
    events: list[tuple[HaEvent, str]] = []
    for state in states:
        for event in state.history:
            mark = (event.at_ms, state.node_id, event.status)
            if mark not in seen:
                seen.add(mark)
                events.append((event, state.node_id))
    events.sort(key=lambda pair: (pair[0].at_ms, pair[0].epoch))
    entries: list[TimelineEntry] = []
    holders: dict[int, str | None] = {}
    for event, node in events:
        earlier = [e for e in holders if e < event.epoch]
        previous = holders[max(earlier)] if earlier else None
        failover = (event.epoch not in holders and earlier != []
                    and event.holder is not None and event.holder != previous)
        holders.setdefault(event.epoch, event.holder)
        entries.append(TimelineEntry(event.at_ms, node, event.status, event.epoch,
                                     event.holder, event.reason, failover, event.loss_ms,
                                     event.recovered_ms, event.first_output_ms))
    return entries
