"""Reference behaviours pinned by cases of our own, read from Siddhi 5.1's source.

Each file in ``reference_semantics/`` is a case in the conformance format whose ``source``
names the siddhi-core classes its expected output follows: a null operand of ``!=``, every
aggregate of an expression fed every event (and every expiry and reset), a ``having`` whose
aggregates are one state for all groups, ``object`` attributes that keep their Java type
(a JSON number is a ``java.lang.Double``) through filters, projections, windows, joins and
``cast``, an aggregation's open bucket read part by part as the reference's executor chain
holds it (``within`` starting inside a bucket), aggregations grouped by two attributes, a
join ordered by an input attribute it does not select, and an event that meets a run-time
error (a bad ``aggregate by`` date, a ``per`` the aggregation lacks) dropped, the app going on.
Every case runs through the per-event runtime (micro-batches of 1, 3 and all, snapshotted
and restored in between) and through ``eddy.replay`` on Spark, which picks the native,
vectorised or per-event plan as it would for any app.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conformance import Case, compare_case, load_case
from runtime.test_runtime_conformance import differences

from eddy.engine.spark.row_layout import object_json
from eddy.lang import check
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, sort_outputs

CASES = [load_case(p) for p in sorted((Path(__file__).parent / "reference_semantics")
                                      .glob("*.json"))]


def as_reference_reads(case: Case) -> Case:
    """The case's inputs as the reference receives them: an ``object`` value passes through
    its JSON text, as in ``eddy.replay`` (a JSON number becomes a Double)."""
    inputs = []
    for item in case.inputs:
        schema = case.schemas.get(item.get("stream", ""))
        if schema is not None:
            item = {**item, "data": [json.loads(object_json(v)) if t == "OBJECT" and v is not None
                                     else v for v, (_, t) in zip(item["data"], schema)]}
        inputs.append(item)
    return replace(case, inputs=inputs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("batch_size", [1, 3, None])
def test_case_through_the_runtime(case: Case, batch_size: int | None) -> None:
    found = differences(as_reference_reads(case), batch_size)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_through_spark(case: Case, spark: object) -> None:
    from eddy.engine.run.replay import replay

    with ThreadPoolExecutor(2) as pool:
        runs = {size: pool.submit(replay, case.app, case.inputs, batch_size=size)
                for size in (1, 0)}
        for size, run in runs.items():
            result = run.result()
            problems = compare_case(case, result.streams, result.queries, result.store)
            assert not problems, f"batch size {size or 'all'}:\n" + "\n".join(problems)


def test_two_group_by_attributes_in_rdbms_tables(spark: object, tmp_path: Path) -> None:
    """The two-attribute ``group by`` case with every aggregation in SQLite tables
    (``@store(type='rdbms')``), through Spark: issue 18 saw no rows at all there."""
    from eddy.engine.run.replay import replay

    case = next(c for c in CASES if c.name == "aggregation_group_by_two_attributes")
    for size in (1, 0):
        store = f"@store(type='rdbms', jdbc.url='jdbc:sqlite:{tmp_path / f'{size}.db'}')\n"
        app = case.app.replace("define aggregation", store + "define aggregation")
        result = replay(app, case.inputs, batch_size=size)
        problems = compare_case(replace(case, app=app), result.streams, result.queries,
                                result.store)
        assert not problems, f"batch size {size or 'all'}:\n" + "\n".join(problems)


def _outputs(app: str, inputs: list[tuple[int, list[Any]]]) -> list[tuple[int, list[Any]]]:
    runtime = build_runtime(check(app))
    events = [InputEvent(i, ts, "S", tuple(data)) for i, (ts, data) in enumerate(inputs)]
    return [(o.ts, list(o.data)) for o in sort_outputs(runtime.process(events))
            if o.query == "q"]


def test_output_snapshot_without_an_event_type_inserts_all_events() -> None:
    """``Query.updateOutputEventType``: a snapshot rate fills an unset output event type
    with ALL_EVENTS, so ``insert into`` runs as ``insert all events into`` does."""
    app = ("@app:playback\ndefine stream S (sym string, p double);\n@info(name='q')\n"
           "from S#window.time(1 sec)\nselect sym, p\noutput snapshot every 1 sec\n"
           "insert {}into O;\n")
    inputs = [(1000, ["a", 1.0]), (1500, ["b", 2.0]), (2100, ["c", 3.0]), (3500, ["d", 4.0]),
              (5200, ["e", 5.0])]
    written = _outputs(app.format("all events "), inputs)
    assert written, "the snapshot limiter emitted nothing"
    assert _outputs(app.format(""), inputs) == written


def test_output_snapshot_with_expired_events_only_is_refused() -> None:
    """Only an explicit other event type conflicts with a snapshot rate (QueryParser)."""
    from eddy.runtime.query_builder import UnsupportedQuery

    app = ("@app:playback\ndefine stream S (sym string, p double);\n@info(name='q')\n"
           "from S#window.time(1 sec)\nselect sym, p\noutput snapshot every 1 sec\n"
           "insert expired events into O;\n")
    with pytest.raises(UnsupportedQuery, match="insert all events"):
        build_runtime(check(app))


def test_object_values_keep_their_type_across_columns_and_the_bus() -> None:
    """An ``object`` crosses Spark columns and the bus as JSON text and reaches the runtime,
    ``_data`` and sinks as the value itself (a string without quotes, a Double as a float)."""
    import pandas as pd
    import pyarrow as pa

    from eddy.engine.operators.runtime_operator import _values
    from eddy.engine.run.output_rows import decode_values
    from eddy.lang.ast import Attribute, AttrType

    assert [object_json(v) for v in ("hello", 7, 1.5, True)] == ['"hello"', "7.0", "1.5", "true"]
    texts = pd.Series(['"hello"', "7.0", "true", None], dtype=object)
    assert _values(texts, AttrType.OBJECT) == ["hello", 7.0, True, None]
    attribute = Attribute("o", AttrType.OBJECT)
    for data in (['["hello"]', "[7.0]", "[null]"], ['{"o":"hello"}', '{"o":7.0}', '{"o":null}']):
        (column,) = decode_values(pa.array(data), [attribute])
        assert column.to_pylist() == ['"hello"', "7.0", None]
