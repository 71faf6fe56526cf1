"""What happens to events a source cannot map: Siddhi's ``@OnError(action=…)``.

``@OnError(action='LOG')`` (the default) logs each rejected event with its reason and
counts it (:data:`~eddy.io.metrics.MAPPING_ERRORS`). ``@OnError(action='STREAM')`` also
sends it to the fault stream ``!S``: the stream's attributes (the values that did convert,
null elsewhere) plus ``_error``, an ``object`` holding ``{"message": reason, "payload":
raw text}``. Either way nothing is dropped without a trace.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from eddy.bus.arrow_codec import ARROW_TYPES
from eddy.io.api import DedupKey, Deliver
from eddy.io.errors import IoConfigError
from eddy.io.mappers.base import Fault
from eddy.io.metrics import FAULTS_STREAMED, MAPPING_ERRORS, IoMetrics
from eddy.lang.ast import Attribute, AttrType, Definition, find_annotation

log = logging.getLogger("eddy.io.on_error")

ERROR_ATTRIBUTE = "_error"
"""The attribute of a fault stream that holds why the event was rejected."""
Action = Literal["LOG", "STREAM"]
_LOGGED_PAYLOAD_CHARS = 300
_LOGGED_FAULTS = 10
"""Faults of one batch logged one by one; the rest are summed up in one line."""


def fault_stream(stream: str) -> str:
    """The name of the fault stream of ``stream``: ``!S``."""
    return "!" + stream


def fault_attributes(attributes: Sequence[Attribute]) -> tuple[Attribute, ...]:
    """The attributes of a fault stream: the stream's plus ``_error`` (object)."""
    return (*attributes, Attribute(ERROR_ATTRIBUTE, AttrType.OBJECT))


def on_error_action(definition: Definition) -> Action:
    """The ``@OnError`` action of a stream definition (``LOG`` when it has none)."""
    annotation = find_annotation(definition.annotations, "OnError")
    if annotation is None:
        return "LOG"
    action = (annotation.get("action") or "LOG").upper()
    if action not in ("LOG", "STREAM"):
        raise IoConfigError(f"@OnError of stream '{definition.name}': action must be 'LOG' or "
                            f"'STREAM', not '{annotation.get('action')}'", annotation.span)
    return "STREAM" if action == "STREAM" else "LOG"


@dataclass
class OnError:
    """The fault policy of one stream."""

    stream: str
    attributes: tuple[Attribute, ...]
    action: Action
    metrics: IoMetrics

    def handle(self, faults: Sequence[Fault], deliver: Deliver, ts: int, origin: str, *,
               dedup: DedupKey | None = None) -> None:
        """Counts, logs and (with ``STREAM``) delivers ``faults`` to ``!S``; raises only if
        that delivery fails."""
        if not faults:
            return
        self.metrics.add(MAPPING_ERRORS, self.stream, len(faults))
        fate = "sent to " + fault_stream(self.stream) if self.action == "STREAM" else "dropped"
        for fault in faults[:_LOGGED_FAULTS]:
            payload = fault.payload if len(fault.payload) <= _LOGGED_PAYLOAD_CHARS else \
                fault.payload[:_LOGGED_PAYLOAD_CHARS] + "…"
            log.warning("%s: rejected event %d (%s): %s; payload: %s", origin, fault.index,
                        fate, fault.reason, payload)
        if len(faults) > _LOGGED_FAULTS:
            log.warning("%s: rejected %d more events of the same batch (%s)", origin,
                        len(faults) - _LOGGED_FAULTS, fate)
        if self.action == "STREAM":
            fault_dedup = None if dedup is None else \
                DedupKey(dedup.producer + "!faults", dedup.batch_id)
            deliver(fault_stream(self.stream), self.fault_table(faults), ts, dedup=fault_dedup)
            self.metrics.add(FAULTS_STREAMED, self.stream, len(faults))

    def fault_table(self, faults: Sequence[Fault]) -> pa.Table:
        """The fault-stream events of ``faults``."""
        columns = [pa.array([f.values[i] if f.values is not None else None for f in faults],
                            type=ARROW_TYPES[a.type]) for i, a in enumerate(self.attributes)]
        errors = [json.dumps({"message": f.reason, "payload": f.payload}, ensure_ascii=False)
                  for f in faults]
        columns.append(pa.array(errors, type=pa.string()))
        return pa.Table.from_arrays(columns, names=[a.name for a in
                                                    fault_attributes(self.attributes)])
