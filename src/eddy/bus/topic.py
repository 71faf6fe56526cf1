"""Topic definitions and the sequence ranges appends return."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import NamedTuple

from eddy.bus.errors import TopicSpecError
from eddy.lang.ast import Attribute, AttrType

SEQ = "_seq"
"""Column of a read batch holding each event's sequence number (int64)."""
TS = "_ts"
"""Column holding each event's timestamp in epoch milliseconds (int64)."""
RESERVED_COLUMNS = frozenset({SEQ, TS})

_TOPIC_NAME = re.compile(r"\S+")


@dataclass(frozen=True)
class TopicSpec:
    """The definition of a topic: its event attributes and how events spread over partitions.

    ``key`` names the attribute whose Java ``hashCode`` picks an event's partition (see
    :mod:`eddy.bus.routing`); with ``key=None`` events go round-robin. A definition never
    changes once the topic exists.
    """

    name: str
    attributes: tuple[Attribute, ...]
    partitions: int = 1
    key: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", tuple(self.attributes))
        if not isinstance(self.name, str) or not _TOPIC_NAME.fullmatch(self.name):
            raise TopicSpecError(f"topic name {self.name!r} must be non-empty without spaces")
        if isinstance(self.partitions, bool) or not isinstance(self.partitions, int) \
                or self.partitions < 1:
            raise TopicSpecError(
                f"topic '{self.name}': partitions must be a positive int, got {self.partitions!r}")
        names = [a.name for a in self.attributes]
        for name in names:
            if name in RESERVED_COLUMNS:
                raise TopicSpecError(
                    f"topic '{self.name}': attribute '{name}' clashes with the bus column "
                    f"of that name")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise TopicSpecError(
                f"topic '{self.name}': attribute(s) {', '.join(duplicates)} defined twice")
        if self.key is not None and self.key not in names:
            raise TopicSpecError(
                f"topic '{self.name}': partition key '{self.key}' is not an attribute "
                f"(attributes: {', '.join(names) or 'none'})")

    def attribute(self, name: str) -> Attribute:
        """The attribute called ``name``."""
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        raise KeyError(name)

    def to_json(self) -> str:
        """The definition as JSON text, as backends store it."""
        return json.dumps({
            "name": self.name,
            "attributes": [[a.name, a.type.value] for a in self.attributes],
            "partitions": self.partitions,
            "key": self.key,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> TopicSpec:
        """The definition stored by :meth:`to_json`."""
        data = json.loads(text)
        return cls(
            name=data["name"],
            attributes=tuple(Attribute(name, AttrType(kind)) for name, kind in data["attributes"]),
            partitions=data["partitions"],
            key=data["key"],
        )


class PartitionRange(NamedTuple):
    """Where an append put events: ``first_seq..last_seq`` (inclusive) of one partition."""

    partition: int
    first_seq: int
    last_seq: int

    @property
    def events(self) -> int:
        """Number of events in the range."""
        return self.last_seq - self.first_seq + 1


def merge_ranges(ranges: list[PartitionRange]) -> list[PartitionRange]:
    """Ranges sorted by (partition, first_seq), with back-to-back ranges of a partition joined."""
    merged: list[PartitionRange] = []
    for r in sorted(ranges):
        last = merged[-1] if merged else None
        if last is not None and last.partition == r.partition and last.last_seq + 1 == r.first_seq:
            merged[-1] = last._replace(last_seq=r.last_seq)
        else:
            merged.append(r)
    return merged
