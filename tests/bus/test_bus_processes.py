"""Several processes appending to one bus at once get disjoint, gap-free sequences."""

from __future__ import annotations

import multiprocessing

from bus_samples import BusFactory, append_for, readings_spec

WRITERS = 2
SECONDS = 0.5  # long enough that the writers surely overlap
ROWS = 5
OFFSET = 1_000_000  # writer w's events have temp w*OFFSET + their number


def test_concurrent_writers_in_separate_processes(buses: BusFactory) -> None:
    bus = buses.open()
    bus.create_topic(readings_spec())
    context = multiprocessing.get_context("spawn")  # a fresh interpreter, like a real worker
    start, results = context.Barrier(WRITERS), context.Queue()
    writers = [context.Process(target=append_for, args=(buses.url, "Temp", SECONDS, ROWS,
                                                        w * OFFSET, start, results))
               for w in range(WRITERS)]
    for writer in writers:
        writer.start()
    ranges = [results.get(timeout=60) for _ in writers]
    for writer in writers:
        writer.join(timeout=60)
        assert writer.exitcode == 0

    seqs = sorted(s for per_writer in ranges for _, first, last in per_writer
                  for s in range(first, last + 1))
    total = len(seqs)
    assert seqs == list(range(total))  # disjoint and gap-free
    assert bus.end_offsets("Temp") == [total]
    temps = bus.read_table("Temp", 0, 0, total).column("temp").to_pylist()
    for w in range(WRITERS):  # each writer's events are all there, in its order
        own = [t for t in temps if w * OFFSET <= t < (w + 1) * OFFSET]
        assert own == [float(w * OFFSET + i) for i in range(len(own))]
    writer_of = [int(t) // OFFSET for t in temps]
    assert writer_of != sorted(writer_of), "the writers never overlapped; test proves nothing"
