"""``@store(type='rdbms')`` tables in the per-event runtime (no Spark), against SQLite,
MariaDB and PostgreSQL.

The conformance cases that use tables run with every ``define table`` given a ``@store``
annotation pointing at the database (an extra variant; the case files are not touched), in
micro-batches of 1, 3 and all events, each batch in a freshly built runtime, as Spark runs
it. Table names are unique to the run and the tables are dropped afterwards.

Every case compares exactly as the case file says (ordered where it is ordered): none of
them needs the unordered comparison, although a database returns rows in its own order —
the cases that read whole tables happen to see the same order in all three databases.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance import Case, compare_case, load_cases
from sqlalchemy import MetaData, Table, delete, event, inspect, text

from eddy.lang import SiddhiAppError, check
from eddy.runtime.driver import collect
from eddy.runtime.group import build_runtime
from eddy.runtime.model import InputEvent, OutputEvent, sort_outputs
from eddy.runtime.rdbms_table import RdbmsTable
from eddy.runtime.stored_batch import markers, run_stored_batch
from eddy.store.aggregation_settings import DATASOURCES_ENV
from eddy.store.connect import connect, jdbc_to_sqlalchemy
from eddy.store.table_schema import TableSchemaError, forget_table

BACKENDS = {
    "sqlite": None,
    "mariadb": "jdbc:mysql://127.0.0.1:3306/test",
    "postgresql": "jdbc:postgresql://127.0.0.1:5432/test",
}
TABLE_CASES = [c for c in load_cases() if c.expected is not None and "define table" in c.app]
_DEFINE = re.compile(r"^(\s*)define\s+table\s+(\w+)", re.MULTILINE | re.IGNORECASE)


@pytest.fixture(params=list(BACKENDS))
def jdbc_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield BACKENDS[request.param] or f"jdbc:sqlite:{tmp_path}/tables.db"


@pytest.fixture
def tables(jdbc_url: str) -> Iterator[list[str]]:
    """Database tables the test creates (appended to by the test); dropped afterwards."""
    created: list[str] = []
    yield created
    engine = connect(jdbc_to_sqlalchemy(jdbc_url, "root"))
    existing = set(inspect(engine).get_table_names())
    for name in created:
        forget_table(engine, name)
        if name in existing:
            Table(name, MetaData()).drop(engine)


def stored(app: str, jdbc_url: str, created: list[str], extra: str = "") -> str:
    """``app`` with every ``define table T`` stored in the database as ``t_<run>_t``."""
    run = uuid.uuid4().hex[:8]

    def annotate(match: re.Match[str]) -> str:
        name = f"eddy_{run}_{match.group(2).lower()}"
        created.append(name)
        return (f"{match.group(1)}@store(type='rdbms', jdbc.url='{jdbc_url}', username='root', "
                f"jdbc.driver.name='org.mariadb.jdbc.Driver', table.name='{name}'{extra})\n"
                f"{match.group(0).lstrip()}")

    return _DEFINE.sub(annotate, app)


def run_inputs(app: str, inputs: list[dict[str, Any]], batch_size: int | None,
               transaction: bool = False) -> tuple[list[OutputEvent], list[list[list[Any]]]]:
    """The inputs in micro-batches, each in a fresh runtime restored from the previous
    batch's snapshot; on-demand queries answer at their place. With ``transaction`` each
    batch runs as Spark's operator runs it: one database transaction (buffered inserts),
    through :func:`~eddy.runtime.stored_batch.run_stored_batch` (no marker outside Spark)."""
    analyzed = check(app)
    state = build_runtime(analyzed).snapshot()
    size = batch_size or max(len(inputs), 1)
    outputs: list[OutputEvent] = []
    store: list[list[list[Any]]] = []
    for start in range(0, len(inputs), size):
        runtime = build_runtime(analyzed)
        runtime.restore(state)

        def run(runtime: Any, _: list[InputEvent], start: int = start) -> list[OutputEvent]:
            produced: list[OutputEvent] = []
            for seq, item in enumerate(inputs[start:start + size], start):
                if "store_query" in item:
                    store.append([list(r) for r in runtime.store_query(item["store_query"])])
                else:
                    produced += runtime.process([InputEvent(
                        seq, item["timestamp"], item["stream"], tuple(item["data"]))])
            return produced

        outputs += run_stored_batch(runtime, [], 0, run) if transaction else run(runtime, [])
        state = runtime.snapshot()
    return sort_outputs(outputs), store


@pytest.mark.parametrize("transaction", (False, True), ids=("direct", "transaction"))
@pytest.mark.parametrize("batch_size", (1, 3, None), ids=lambda b: f"batch-{b or 'all'}")
@pytest.mark.parametrize("case", TABLE_CASES, ids=lambda c: c.name)
def test_table_cases_with_rdbms_store(case: Case, batch_size: int | None, transaction: bool,
                                      jdbc_url: str, tables: list[str]) -> None:
    app = stored(case.app, jdbc_url, tables)
    outputs, store = run_inputs(app, case.inputs, batch_size, transaction)
    streams, queries = collect(check(app), outputs)
    found = compare_case(case, streams, queries, store)
    assert not found, "\n".join(found)


def test_every_table_case_is_run() -> None:
    assert len(TABLE_CASES) >= 7


APP = """
define stream Add (k string, v int, f float, b bool);
define stream Del (k string);
define stream Q (k string, lo int);
@PrimaryKey('k') @Index('v')
define table T (k string, v int, f float, b bool);
from Add insert into T;
from Del delete T on T.k == k;
from Q[(T.k == k) in T] select k insert into InT;
from Q join T on T.v >= Q.lo and (T.k == Q.k or T.b == true) select T.k, T.v, T.f
insert into Joined;
"""


def test_primary_key_index_types_and_pushdown(jdbc_url: str, tables: list[str]) -> None:
    app = stored(APP, jdbc_url, tables, ", field.length='k:20'")
    runtime = build_runtime(check(app))
    events = [("Add", ("a", 1, 1.1, False)), ("Add", ("A", 2, 2.5, True)),
              ("Add", ("a", 9, 0.0, False)),  # a stored key: dropped, as in memory
              ("Q", ("a", 0)), ("Q", ("z", 2)), ("Del", ("a",)), ("Q", ("a", 0))]
    outputs = runtime.process([InputEvent(i, 1000 + i, s, d) for i, (s, d) in enumerate(events)])
    got: dict[int, list[Any]] = {}
    for o in sort_outputs(outputs):
        if o.target in ("InT", "Joined"):
            got.setdefault(o.seq, []).append((o.target, list(o.data)))
    f11 = pytest.approx(1.1, rel=1e-6)
    assert sorted(got[3], key=str) == sorted([("InT", ["a"]), ("Joined", ["a", 1, f11]),
                                              ("Joined", ["A", 2, 2.5])], key=str)
    assert got[4] == [("Joined", ["A", 2, 2.5])]  # 'z' is not stored; T.b is true for 'A'
    assert got[6] == [("Joined", ["A", 2, 2.5])]  # 'a' was deleted
    table = runtime.tables["T"]
    assert isinstance(table, RdbmsTable)
    assert table.rows() == [("A", 2, 2.5, True)]
    assert runtime.store_query("from T on k == 'A' select v") == [(2,)]
    engine = connect(table.url)
    inspector = inspect(engine)
    name = table.options.table_name
    assert inspector.get_pk_constraint(name)["constrained_columns"] == ["k"]
    assert [i["column_names"] for i in inspector.get_indexes(name)] == [["v"]]
    column = next(c for c in inspector.get_columns(name) if c["name"] == "k")
    assert column["type"].length == 20
    assert table.get_state() is None  # the snapshot holds no rows, engine or connection
    assert runtime.restore(runtime.snapshot()) is None


def test_conditions_are_pushed_down_to_sql(jdbc_url: str, tables: list[str]) -> None:
    """The join's ``on``, the ``in`` condition and the delete's key reach the database as a
    ``WHERE``; a condition on a FLOAT column is left to the Python test."""
    app = stored(APP + "from Q delete T on T.f < 1.0;\n", jdbc_url, tables)
    runtime = build_runtime(check(app))
    table = runtime.tables["T"]
    assert isinstance(table, RdbmsTable)
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(" ".join(statement.split()).lower())

    engine = connect(table.url)
    event.listen(engine, "before_cursor_execute", record)
    try:
        runtime.process([InputEvent(0, 1, "Add", ("a", 1, 0.5, False)),
                         InputEvent(1, 2, "Q", ("a", 3)), InputEvent(2, 3, "Del", ("a",))])
    finally:
        event.remove(engine, "before_cursor_execute", record)
    selects = [s for s in statements if s.startswith("select")]
    assert any("where" in s and " or " in s and ">=" in s for s in selects)  # the join
    deletes = [s for s in statements if s.startswith("delete")]
    assert deletes and all("where" not in s for s in deletes[:1])  # T.f < 1.0: not pushed
    assert table.rows() == []


def test_existing_compatible_table_is_used(jdbc_url: str, tables: list[str]) -> None:
    name = f"eddy_{uuid.uuid4().hex[:8]}_old"
    tables.append(name)
    engine = connect(jdbc_to_sqlalchemy(jdbc_url, "root"))
    with engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE {name} (K VARCHAR(10), V INTEGER, extra INTEGER)"))
        connection.execute(text(f"INSERT INTO {name} (K, V, extra) VALUES ('x', 7, 1)"))
    app = (f"@store(type='rdbms', jdbc.url='{jdbc_url}', username='root', table.name='{name}')\n"
           "define table T (k string, v int);\ndefine stream S (k string, v int);\n"
           "from S insert into T;\n")
    runtime = build_runtime(check(app))
    runtime.process([InputEvent(0, 1, "S", ("y", 8))])
    assert sorted(runtime.store_query("from T select k, v")) == [("x", 7), ("y", 8)]


def test_unknown_store_type_is_an_app_error() -> None:
    app = ("define stream S (k string);\n"
           "@store(type='mongodb', mongodb.uri='mongodb://h/db')\ndefine table T (k string);\n"
           "from S insert into T;\n")
    with pytest.raises(SiddhiAppError) as raised:
        build_runtime(check(app, "bad.siddhi"))
    assert (raised.value.line, raised.value.column) == (2, 0)
    assert "mongodb" in str(raised.value) and "rdbms" in str(raised.value)


def test_bad_store_settings_are_app_errors(tmp_path: Path) -> None:
    app = ("@store(type='rdbms', jdbc.url='jdbc:sqlite:" + str(tmp_path) + "/x.db', "
           "field.length='nope:10')\ndefine table T (k string);\n")
    with pytest.raises(SiddhiAppError, match="field.length names 'nope'"):
        build_runtime(check(app))
    with pytest.raises(SiddhiAppError, match="no driver for 'jdbc:oracle'"):
        build_runtime(check("@store(type='rdbms', jdbc.url='jdbc:oracle:thin:@h:1:x')\n"
                            "define table T (k string);\n"))


def test_datasource_names_a_configured_database(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    database = tmp_path / "ds.db"
    monkeypatch.setenv(DATASOURCES_ENV, json.dumps(
        {"SHOP_DB": {"jdbcUrl": f"jdbc:sqlite:{database}", "username": None,
                     "password": None}}))
    app = ("@store(type='rdbms', datasource='SHOP_DB')\ndefine table T (k string);\n"
           "define stream S (k string);\nfrom S insert into T;\n")
    runtime = build_runtime(check(app))
    runtime.process([InputEvent(0, 1, "S", ("x",))])
    assert runtime.store_query("from T select k") == [("x",)]
    assert "T" in inspect(connect(f"sqlite:///{database}")).get_table_names()
    with pytest.raises(SiddhiAppError, match="unknown datasource 'OTHER_DB'"):
        build_runtime(check(app.replace("SHOP_DB", "OTHER_DB")))


COUNTER = """
define stream Hit (page string);
define stream Q (page string);
define table Counter (page string, hits long);
from Hit select page, 1L as hits update or insert into Counter
  set Counter.hits = Counter.hits + hits on Counter.page == page;
from Q join Counter on Q.page == Counter.page select Counter.page, Counter.hits insert into R;
"""


def _batch(runtime: Any, events: list[tuple[str, str]], first: int,
           identity: tuple[str, int] | None) -> list[Any]:
    from eddy.engine.operators.runtime_operator import run_batch

    inputs = [InputEvent(first + i, first + i, s, (page,)) for i, (s, page) in enumerate(events)]
    outputs = run_stored_batch(runtime, inputs, 0, run_batch, "counter", identity)
    return [list(o.data) for o in sort_outputs(outputs) if o.target == "R"]


def test_a_replayed_batch_is_not_applied_twice(jdbc_url: str, tables: list[str]) -> None:
    """Batch 7 commits, then runs again from the state before it (as Spark re-runs a batch
    it had not recorded): the marker gives back its outputs and state, the counter is not
    incremented twice, and batch 8 continues normally."""
    analyzed = check(stored(COUNTER, jdbc_url, tables))
    runtime = build_runtime(analyzed)
    q1, q2 = queries = [f"query-{uuid.uuid4()}" for _ in range(2)]
    try:
        _replays(analyzed, runtime, q1, q2)
    finally:
        _forget_markers(jdbc_url, queries)


def _forget_markers(jdbc_url: str, queries: list[str]) -> None:
    engine = connect(jdbc_to_sqlalchemy(jdbc_url, "root"))
    with engine.begin() as connection:
        for query in queries:
            connection.execute(delete(markers).where(markers.c.owner.like(f"{query}/%")))


def _replays(analyzed: Any, runtime: Any, q1: str, q2: str) -> None:
    _batch(runtime, [("Hit", "/a")], 0, (q1, 6))
    before = runtime.snapshot()
    first = _batch(runtime, [("Hit", "/a"), ("Q", "/a")], 1, (q1, 7))
    after = runtime.snapshot()
    again = build_runtime(analyzed)
    again.restore(before)
    assert _batch(again, [("Hit", "/a"), ("Q", "/a")], 1, (q1, 7)) == first == \
        [["/a", 2]]
    assert again.snapshot() == after
    assert _batch(again, [("Hit", "/a"), ("Q", "/a")], 3, (q1, 8)) == [["/a", 3]]
    # another streaming query (a new checkpoint) with the same batch id is not a replay
    assert _batch(again, [("Q", "/a"), ("Hit", "/a")], 5, (q2, 8)) == [["/a", 3]]
    assert again.store_query("from Counter select page, hits") == [("/a", 4)]


def test_a_failed_batch_leaves_no_writes(jdbc_url: str, tables: list[str]) -> None:
    analyzed = check(stored(COUNTER.replace("update or insert into Counter\n  set "
                                            "Counter.hits = Counter.hits + hits on "
                                            "Counter.page == page", "insert into Counter"),
                            jdbc_url, tables))
    runtime = build_runtime(analyzed)
    query = f"query-{uuid.uuid4()}"

    def failing(runtime: Any, events: list[InputEvent]) -> list[OutputEvent]:
        runtime.process(events)
        runtime.store_query("from Counter select page")  # the inserts reach the database
        raise RuntimeError("the task died")

    state = runtime.snapshot()
    try:
        with pytest.raises(RuntimeError, match="the task died"):
            run_stored_batch(runtime, [InputEvent(0, 1, "Hit", ("/a",))], 0, failing, "c",
                             (query, 0))
        runtime.restore(state)
        assert runtime.store_query("from Counter select page") == []
        assert _batch(runtime, [("Hit", "/b"), ("Q", "/b")], 0, (query, 0)) == [["/b", 1]]
        assert runtime.store_query("from Counter select page, hits") == [("/b", 1)]
    finally:
        _forget_markers(jdbc_url, [query])


PATTERN = """
define stream A (k string, v int);
define stream B (k string, v int);
define stream Add (k string);
define table T (k string);
from Add insert into T;
from every e1=A[(T.k == k) in T] -> e2=B[e1.k == k and (T.k == k) in T]
select e1.k as k, e1.v as v1, e2.v as v2 insert into Out;
"""


def test_in_table_inside_pattern_conditions(jdbc_url: str, tables: list[str]) -> None:
    """``in T`` in a pattern's filters reads the database table as it reads memory."""
    events = [("Add", ("a",)), ("A", ("a", 1)), ("A", ("b", 2)), ("Add", ("b",)),
              ("B", ("b", 3)), ("A", ("b", 4)), ("B", ("b", 5)), ("B", ("a", 6))]
    inputs = [{"stream": s, "timestamp": 10 + i, "data": list(d)}
              for i, (s, d) in enumerate(events)]
    expected, _ = run_inputs(PATTERN, inputs, 3)
    actual, _ = run_inputs(stored(PATTERN, jdbc_url, tables), inputs, 3, transaction=True)
    assert [(o.seq, o.data) for o in actual if o.target == "Out"] == \
        [(o.seq, o.data) for o in expected if o.target == "Out"] == [(6, ("b", 4, 5)),
                                                                     (7, ("a", 1, 6))]


def test_an_incompatible_existing_table_is_refused(jdbc_url: str, tables: list[str]) -> None:
    name = f"eddy_{uuid.uuid4().hex[:8]}_other"
    tables.append(name)
    engine = connect(jdbc_to_sqlalchemy(jdbc_url, "root"))
    with engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE {name} (k VARCHAR(10))"))
    app = (f"@store(type='rdbms', jdbc.url='{jdbc_url}', username='root', table.name='{name}')\n"
           "define table T (k string, v int);\ndefine stream S (k string, v int);\n"
           "from S insert into T;\n")
    runtime = build_runtime(check(app))
    with pytest.raises(TableSchemaError, match=f"'{name}' has no column 'v'"):
        runtime.process([InputEvent(0, 1, "S", ("y", 8))])
