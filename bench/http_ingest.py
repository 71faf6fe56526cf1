"""Events/s an HTTP source lands on the SQLite bus (target: >= 200,000 events/s).

A real ``@source(type='http', @map(type='json'))`` on 127.0.0.1 lands every request on a
SQLite bus before answering 200; ``--clients`` client connections (httpx, keep-alive, in a
separate process so client and server do not share one interpreter) POST JSON arrays of
``--batch`` events each for ``--seconds``. The result counts only acknowledged events, and
checks that the bus holds exactly that many.

Besides events/s it prints the CPU time the server process spent per request, because on a
shared machine wall-clock throughput mostly says how much CPU the process was given:
events per server CPU-second is what one free core would sustain. ``--freeze-gc`` calls
``gc.freeze()`` after start-up, as a long-running worker can, so the collector stops
re-scanning the objects of the imported libraries for every request's garbage.

Run: .venv/bin/python bench/http_ingest.py [--seconds 10] [--clients 4] [--batch 1000]
                                           [--freeze-gc]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import httpx

from eddy.bus import TopicSpec, open_bus, sqlite_url
from eddy.io import BusDeliver, IoConfig, build_sources, fault_attributes
from eddy.io.sources.http_source import HttpSource
from eddy.lang import check

APP = """
@app:name('Bench')
@source(type='http', receiver.url='http://127.0.0.1:0/readings', @map(type='json'))
define stream Readings (deviceID long, roomNo int, temp double, status string);
from Readings select * insert into Out;
"""


def body(batch: int) -> bytes:
    """One request: ``batch`` events in Siddhi's JSON envelope."""
    return json.dumps([{"event": {"deviceID": 100_000 + i, "roomNo": i % 1000,
                                  "temp": 20.0 + (i % 150) / 10, "status": "ok" if i % 7 else
                                  "check"}} for i in range(batch)]).encode()


async def _client(url: str, payload: bytes, deadline: float, counts: list[int]) -> None:
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=1)) as client:
        while time.perf_counter() < deadline:
            response = await client.post(url, content=payload,
                                         headers={"Content-Type": "application/json"})
            response.raise_for_status()
            counts.append(response.json()["events"])


def run_clients(url: str, clients: int, batch: int, seconds: float, result: object) -> None:
    """The client process: ``clients`` connections posting until the deadline."""
    payload = body(batch)
    counts: list[int] = []

    async def main() -> None:
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*(_client(url, payload, deadline, counts) for _ in range(clients)))

    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(main())
    result.put((sum(counts), len(counts), time.perf_counter() - started,  # type: ignore[attr-defined]
                time.process_time() - cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--freeze-gc", action="store_true",
                        help="gc.freeze() after start-up, as a worker process can")
    args = parser.parse_args()

    analyzed = check(APP)
    with tempfile.TemporaryDirectory() as tmp:
        bus = open_bus(sqlite_url(Path(tmp) / "bus.db"))
        attributes = analyzed.streams["Readings"].attributes
        bus.create_topic(TopicSpec("Readings", attributes))
        bus.create_topic(TopicSpec("!Readings", fault_attributes(attributes)))
        source = build_sources(analyzed, IoConfig(state_dir=Path(tmp)))[0]
        assert isinstance(source, HttpSource)
        source.start(BusDeliver(bus))
        try:
            # Warm up (first requests pay for imports and the thread pool).
            httpx.post(source.url, content=body(args.batch),
                       headers={"Content-Type": "application/json"}).raise_for_status()
            if args.freeze_gc:
                gc.freeze()
            before = bus.end_offsets("Readings")[0]
            cpu_before = time.process_time()
            context = multiprocessing.get_context("spawn")
            results: multiprocessing.Queue[tuple[int, int, float, float]] = context.Queue()
            client = context.Process(
                target=run_clients, args=(source.url, args.clients, args.batch, args.seconds,
                                          results))
            client.start()
            events, requests, elapsed, client_cpu = results.get(timeout=args.seconds + 120)
            client.join()
            stored = bus.end_offsets("Readings")[0] - before
            server_cpu = time.process_time() - cpu_before
        finally:
            source.stop()
            bus.close()
    print(f"HTTP ingest into the SQLite bus: {args.clients} connections, {args.batch} events "
          f"per POST, {elapsed:.1f} s{', gc frozen' if args.freeze_gc else ''}")
    print(f"  {requests} requests, {events:,} events acknowledged, {stored:,} on the bus")
    print(f"  {events / elapsed:,.0f} events/s, {requests / elapsed:,.0f} requests/s")
    print(f"  server CPU {server_cpu:.1f} s = {server_cpu / requests * 1000:.2f} ms per request: "
          f"{events / server_cpu:,.0f} events per server CPU-second "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"  client CPU {client_cpu:.1f} s = {client_cpu / requests * 1000:.2f} ms per request")
    if stored != events:
        raise SystemExit(f"the bus holds {stored} events, but {events} were acknowledged")


if __name__ == "__main__":
    main()
