"""Every single-stream conformance case, run through the per-event runtime without Spark.

Each case runs three times: one event per micro-batch, three per micro-batch, and all at
once; between micro-batches the runtime is snapshotted and restored into a freshly built
runtime, as Spark's state store does. The outputs, sorted by ``(seq, order)``, must equal the
reference's for every stream and every ``@info``-named query.
"""

from __future__ import annotations

import pytest
from conformance import Case, compare_case, load_cases

from eddy.lang import check
from eddy.runtime.driver import collect
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, OutputEvent, sort_outputs

FEATURES = ("filter", "projection", "function", "chain", "window", "aggregate", "output",
            "rate", "events", "pattern", "sequence", "join", "table", "partition",
            "aggregation")
BATCH_SIZES = (1, 3, None)

CASES = [c for c in load_cases(FEATURES) if c.expected is not None]


def input_events(case: Case) -> list[InputEvent]:
    return [InputEvent(i, item["timestamp"], item["stream"], tuple(item["data"]))
            for i, item in enumerate(case.inputs) if "stream" in item]


def run_case(case: Case, batch_size: int | None
             ) -> tuple[list[OutputEvent], list[list[list[object]]]]:
    """The case's inputs in micro-batches of ``batch_size`` (on-demand queries count as
    inputs, as in ``eddy replay``), each batch in a fresh runtime restored from the previous
    batch's snapshot; an on-demand query answers against the state at its place."""
    analyzed = check(case.app)
    state = build_runtime(analyzed).snapshot()
    size = batch_size or max(len(case.inputs), 1)
    outputs: list[OutputEvent] = []
    store: list[list[list[object]]] = []
    for start in range(0, len(case.inputs), size):
        runtime = build_runtime(analyzed)
        runtime.restore(state)
        pending: list[InputEvent] = []
        for seq, item in enumerate(case.inputs[start:start + size], start):
            if "store_query" not in item:
                pending.append(InputEvent(seq, item["timestamp"], item["stream"],
                                          tuple(item["data"])))
                continue
            if pending:
                outputs += runtime.process(pending)
                pending = []
            store.append([list(row) for row in runtime.store_query(item["store_query"])])
        if pending:
            outputs += runtime.process(pending)
        state = runtime.snapshot()
    return sort_outputs(outputs), store


def differences(case: Case, batch_size: int | None) -> list[str]:
    outputs, store = run_case(case, batch_size)
    streams, queries = collect(check(case.app), outputs)
    return compare_case(case, streams, queries, store)


@pytest.mark.parametrize("batch_size", BATCH_SIZES, ids=lambda b: f"batch-{b or 'all'}")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.feature}/{c.name}")
def test_case(case: Case, batch_size: int | None) -> None:
    found = differences(case, batch_size)
    assert not found, "\n".join(found)


def test_every_feature_is_covered() -> None:
    """The cases this suite promises to run are there (a renamed folder fails loudly)."""
    assert CASES, "no conformance cases found"
    seen = {c.feature.split(".")[0] for c in CASES}
    assert {"filter", "window", "aggregate", "rate"} <= seen


def test_pass_counts_per_feature() -> None:
    """A table of passing cases per feature and batch size (shown with ``-s`` or ``-rP``)."""
    counts: dict[str, list[int]] = {}
    failures = []
    for case in CASES:
        row = counts.setdefault(case.feature, [0] * (2 * len(BATCH_SIZES)))
        for i, size in enumerate(BATCH_SIZES):
            row[2 * i + 1] += 1
            if differences(case, size):
                failures.append(f"{case.name} (batch {size or 'all'})")
            else:
                row[2 * i] += 1
    header = "".join(f"{'batch-' + str(s or 'all'):>12}" for s in BATCH_SIZES)
    print(f"\n{'feature':26}{header}")
    for feature, row in sorted(counts.items()):
        cells = "".join(f"{f'{row[2 * i]}/{row[2 * i + 1]}':>12}" for i in range(len(BATCH_SIZES)))
        print(f"{feature:26}{cells}")
    assert not failures, failures
