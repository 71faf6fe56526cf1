"""``siddhi``: node-wide Siddhi properties, extensions and references."""

from __future__ import annotations

from eddy.config.base import Block, Scalar


class SiddhiProperties(Block):
    """``siddhi.properties``: node-wide Siddhi settings (digest §4)."""

    partitionById: bool = False
    shardId: str | None = None


class Extension(Block):
    name: str
    namespace: str
    properties: dict[str, Scalar] = {}


class ExtensionEntry(Block):
    extension: Extension


class Ref(Block):
    name: str
    type: str
    properties: dict[str, Scalar] = {}


class RefEntry(Block):
    ref: Ref


class Siddhi(Block):
    properties: SiddhiProperties = SiddhiProperties()
    extensions: list[ExtensionEntry] = []
    refs: list[RefEntry] = []
