"""Sources, sinks and mappers: how events enter an app and leave it (DESIGN.md §2).

Sources land events on the bus and acknowledge them only once they are durable; sinks
publish a stream's events to a transport with the guarantee the target allows. Malformed
input is never dropped silently: it is answered (HTTP 400), sent to the fault stream
``!S`` (``@OnError(action='STREAM')``) or logged and counted (``LOG``, the default).

Whoever runs an app (the worker, ``eddy run``) starts its sources and sinks with
:class:`~eddy.io.app_connectors.AppConnectors` (topics, sink followers that publish from a
committed bus position, then the sources)::

    with AppConnectors(analyzed, bus_url, IoConfig(state_dir=data / "io")):
        ...  # the app's query runs from the input topics to the output topics

What it does, piece by piece::

    from eddy.io import BusDeliver, IoConfig, build_sinks, build_sources

    config = IoConfig(state_dir=data / "io")
    sources = build_sources(analyzed, config)
    sinks = build_sinks(analyzed, config)              # {stream: [Sink, …]}
    for stream, attributes in delivery_streams(analyzed).items():   # S, and !S if streamed
        bus.create_topic(TopicSpec(f"{analyzed.name}.{stream}", attributes))
    deliver = BusDeliver.for_app(bus, analyzed.name)
    for source in sources:
        source.start(deliver)
    ...
    sinks["Alerts"][0].publish(arrow_batch, ids=[...])

Layout: :mod:`~eddy.io.api` (the Source/Sink/Deliver contracts), :mod:`~eddy.io.mappers`,
:mod:`~eddy.io.sources`, :mod:`~eddy.io.sinks`, :mod:`~eddy.io.factory` (annotations →
objects), :mod:`~eddy.io.on_error` (fault streams), :mod:`~eddy.io.delivery` (onto a bus).
"""

from __future__ import annotations

from eddy.io.api import DedupKey, Deliver, Event, Events, Guarantee, Sink, Source
from eddy.io.config import IoConfig
from eddy.io.delivery import BusDeliver
from eddy.io.errors import (
    IoConfigError,
    IoError,
    MappingError,
    PublishError,
    SourceError,
)
from eddy.io.factory import build_sinks, build_sources, delivery_streams
from eddy.io.inmemory_broker import InMemoryBroker, default_broker
from eddy.io.metrics import IoMetrics
from eddy.io.on_error import ERROR_ATTRIBUTE, fault_attributes, fault_stream

__all__ = [
    "ERROR_ATTRIBUTE", "BusDeliver", "DedupKey", "Deliver", "Event", "Events", "Guarantee",
    "InMemoryBroker", "IoConfig", "IoConfigError", "IoError", "IoMetrics", "MappingError",
    "PublishError", "Sink", "Source", "SourceError", "build_sinks", "build_sources",
    "default_broker", "delivery_streams", "fault_attributes", "fault_stream",
]
