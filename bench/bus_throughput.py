"""Events/s appended to and read from the bus, per backend (target: >= 1,000,000 each way).

Events have three attributes (long, int, double) plus the stamped ``_ts``; a run appends
``--events`` events in batches of each ``--batch-sizes`` from one thread, then reads them
back in ranges of ``--read-range`` events per read call (as a Spark micro-batch would);
each row is the best (and median) of ``--repeat`` runs, because other work on the machine
makes single runs noisy.
For NATS it also compares ways of reading a subject: the bus's direct gets against an
ordered push consumer and a pull consumer from a start sequence.

Run: .venv/bin/python bench/bus_throughput.py [--events 1000000] [--backends sqlite,nats,kafka]
     (needs a NATS server with JetStream at --nats, default nats://127.0.0.1:4222; the kafka
     row runs on the broker at --kafka host:port, else on a Tansu started for the run)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from eddy.bus import Bus, TopicSpec, open_bus
from eddy.lang.ast import Attribute, AttrType

ATTRIBUTES = (Attribute("id", AttrType.LONG), Attribute("room", AttrType.INT),
              Attribute("temp", AttrType.DOUBLE))


def events(count: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "id": np.arange(count, dtype=np.int64),
        "room": rng.integers(0, 1000, count, dtype=np.int32),
        "temp": rng.normal(25.0, 5.0, count),
    })


def append_all(bus: Bus, topic: str, table: pa.Table, batch_size: int) -> float:
    started = time.perf_counter()
    for offset in range(0, table.num_rows, batch_size):
        bus.append(topic, table.slice(offset, batch_size))
    return time.perf_counter() - started


def read_all(bus: Bus, topic: str, read_range: int) -> tuple[float, int]:
    started, rows = time.perf_counter(), 0
    for partition, end in enumerate(bus.end_offsets(topic)):
        for start in range(0, end, read_range):
            for batch in bus.read(topic, partition, start, min(start + read_range, end)):
                rows += batch.num_rows
    return time.perf_counter() - started, rows


def run(name: str, open_: Callable[[], Bus], table: pa.Table, batch_sizes: list[int],
        partitions: int, key: str | None, read_range: int, repeat: int,
        cleanup: Callable[[Bus], None]) -> list[list[str]]:
    """One row per batch size: append and read rates, best of ``repeat`` runs (and median)."""
    rows = []
    bus = open_()
    try:
        for batch_size in batch_sizes:
            writes, reads = [], []
            for run_no in range(repeat):  # a fresh topic per run, so every run appends alike
                topic = f"Bench_{batch_size}_{partitions}_{run_no}"
                bus.create_topic(TopicSpec(topic, ATTRIBUTES, partitions=partitions, key=key))
                writes.append(table.num_rows / append_all(bus, topic, table, batch_size))
                read_s, read_rows = read_all(bus, topic, read_range)
                assert read_rows == table.num_rows, (read_rows, table.num_rows)
                reads.append(read_rows / read_s)
            routing = f"{partitions} ({'hash ' + key if key else 'round-robin'})" \
                if partitions > 1 else "1"
            rows.append([name, f"{batch_size:,}", routing, f"{table.num_rows:,}",
                         f"{max(writes):,.0f} ({statistics.median(writes):,.0f})",
                         f"{max(reads):,.0f} ({statistics.median(reads):,.0f})"])
            print(" | ".join(rows[-1]), flush=True)
    finally:
        cleanup(bus)
    return rows


def compare_nats_reads(server: str, table: pa.Table, batch_size: int) -> list[list[str]]:
    """Direct gets (what the bus uses) against consumers, on one subject of the same data."""
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    from eddy.bus import nats_bus
    from eddy.bus.nats_bus import NatsBus

    bus = open_bus(f"{server}?app=bench-reads-{uuid.uuid4().hex[:8]}")
    assert isinstance(bus, NatsBus)
    bus.create_topic(TopicSpec("R", ATTRIBUTES))
    append_all(bus, "R", table, batch_size)
    stream, subject = bus.names.stream, bus.names.subject("R", 0)
    messages = -(-table.num_rows // batch_size)

    def decode(data: bytes) -> int:
        return int(pa.ipc.open_stream(pa.py_buffer(data)).read_all().num_rows)

    async def consumers() -> dict[str, float]:
        nc = await nats.connect(server)
        js = nc.jetstream()
        times = {}
        started, rows = time.perf_counter(), 0
        sub = await js.subscribe(subject, ordered_consumer=True, config=ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=1))
        for _ in range(messages):
            rows += decode((await sub.next_msg(timeout=10)).data)
        await sub.unsubscribe()
        times["nats-py ordered consumer"] = time.perf_counter() - started
        assert rows == table.num_rows
        started, rows = time.perf_counter(), 0
        pull = await js.pull_subscribe(subject, stream=stream, config=ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=1,
            ack_policy=AckPolicy.NONE))
        fetched = 0
        while fetched < messages:
            for msg in await pull.fetch(min(64, messages - fetched), timeout=10):
                rows += decode(msg.data)
                fetched += 1
        await pull.unsubscribe()
        times["nats-py pull consumer, fetch(64)"] = time.perf_counter() - started
        assert rows == table.num_rows
        await nc.close()
        return times

    try:
        read_s, rows = read_all(bus, "R", table.num_rows)
        assert rows == table.num_rows
        times = {"bus.read: pull consumer, fetch ahead": read_s}
        direct_only = nats_bus._DIRECT_READ_MESSAGES
        nats_bus._DIRECT_READ_MESSAGES = 10**12  # force the direct-get walk
        try:
            read_s, rows = read_all(bus, "R", table.num_rows)
        finally:
            nats_bus._DIRECT_READ_MESSAGES = direct_only
        assert rows == table.num_rows
        times["bus.read forced to direct gets, 1 ahead"] = read_s
        times.update(asyncio.run(consumers()))
    finally:
        bus.destroy()
    return [[how, f"{batch_size:,}", f"{table.num_rows / s:,.0f}"] for how, s in times.items()]


def run_kafka(bootstrap: str | None, table: pa.Table, batch_sizes: list[int],
              args: argparse.Namespace) -> list[list[str]]:
    """The kafka rows: on the broker at ``bootstrap``, else on a Tansu started for them."""
    broker = None
    if bootstrap is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from kafka_broker import start_tansu

        broker = start_tansu()
        bootstrap = broker.bootstrap
    url = f"kafka://{bootstrap}?app=bench-{uuid.uuid4().hex[:8]}" + \
        ("&delete_records=false" if broker is not None else "")
    name = "kafka (Tansu 0.6, memory)" if broker is not None else f"kafka ({bootstrap})"
    try:
        return run(name, lambda: open_bus(url), table, batch_sizes, args.partitions,
                   args.key, args.read_range, args.repeat,
                   lambda bus: bus.destroy())  # type: ignore[attr-defined]
    finally:
        if broker is not None:
            broker.stop()


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.rjust(w) if c[:1].isdigit() else c.ljust(w)
                                for c, w in zip(row, widths)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch-sizes", default="1000,10000")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--key", default=None, help="route by this attribute (id, room, temp)")
    parser.add_argument("--read-range", type=int, default=100_000,
                        help="events per read call (default 100,000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (best is shown)")
    parser.add_argument("--backends", default="sqlite,sqlite-full,nats")
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--kafka", default=None,
                        help="host:port of a Kafka broker (default: start Tansu)")
    args = parser.parse_args()
    table = events(args.events)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    results: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="eddy-bus-bench-") as tmp:
        for backend in args.backends.split(","):
            if backend in ("sqlite", "sqlite-full"):
                mode = "full" if backend == "sqlite-full" else "normal"
                url = f"sqlite:///{Path(tmp) / backend / 'bus.db'}?synchronous={mode}"
                results += run(f"sqlite (synchronous={mode})", lambda u=url: open_bus(u),
                               table, batch_sizes, args.partitions, args.key, args.read_range,
                               args.repeat, lambda bus: bus.close())
            elif backend == "kafka":
                results += run_kafka(args.kafka, table, batch_sizes, args)
            elif backend == "nats":
                url = f"{args.nats}?app=bench-{uuid.uuid4().hex[:8]}"
                results += run("nats (JetStream, file)", lambda u=url: open_bus(u), table,
                               batch_sizes, args.partitions, args.key, args.read_range,
                               args.repeat, lambda bus: bus.destroy())  # type: ignore[attr-defined]
            else:
                parser.error(f"unknown backend {backend!r}")
    print()
    print_table(["backend", "batch", "partitions", "events per run",
                 "append ev/s best (median)", "read ev/s best (median)"],
                results)
    if "nats" in args.backends.split(","):
        print()
        print_table(["NATS read strategy (1 subject)", "batch", "read ev/s"],
                    [row for size in batch_sizes
                     for row in compare_nats_reads(args.nats, table, size)])


if __name__ == "__main__":
    main()
