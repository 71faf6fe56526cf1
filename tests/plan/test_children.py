"""Child apps: golden texts of the split seed and partitioned apps, their structure, the
faults refused with positions, and that field grouping sends a key to one instance always.

``children/*.txt`` hold the children of ``explain/<name>.siddhi`` as ``eddy explain`` shows
them; ``EDDY_REGEN=1`` rewrites them after an intended change.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eddy import SiddhiAppError, check
from eddy.bus import routing
from eddy.engine.spark.bus_source import Selection
from eddy.lang.ast import AttrType
from eddy.plan import build_plan
from eddy.plan.bus_binding import bus_bindings
from eddy.plan.children import split_app
from eddy.plan.explain import children_text

HERE = Path(__file__).parent
EXPLAIN = HERE / "explain"
GOLDEN = HERE / "children"
REGEN = os.environ.get("EDDY_REGEN") == "1"

RECEIVER_APP = """\
@App:name('Shop')
@source(type='http', receiver.url='http://127.0.0.1:8280/orders', @map(type='json'))
define stream Orders (item string, qty int);
@sink(type='log')
define stream Big (item string, qty int);

@dist(execGroup='filter', parallel='2')
from Orders[qty > 10]
select item, qty
insert into Big;

@dist(execGroup='count')
from Orders#window.lengthBatch(5)
select count() as n
insert into Counts;
"""


@pytest.mark.parametrize("name", ["seed_distributed", "partitioned_parallel",
                                  "aggregation_groups", "backward_wiring"])
def test_child_texts_golden(name: str) -> None:
    source = EXPLAIN / f"{name}.siddhi"
    actual = "\n".join(children_text(split_app(source.read_text(), source.name))) + "\n"
    path = GOLDEN / f"{name}.txt"
    if REGEN or not path.exists():
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs; EDDY_REGEN=1"


def test_seed_children_structure() -> None:
    children = split_app((EXPLAIN / "seed_distributed.siddhi").read_text())
    assert [(c.name, c.group, c.instance, c.receiver) for c in children] == [
        ("TempApp-group-1-1", "group-1", 1, False),
        ("TempApp-group-2-1", "group-2", 1, False),
        ("TempApp-group-2-2", "group-2", 2, False)]
    for child in children:
        assert child.parent == "TempApp"
        assert child.version == hashlib.sha256(child.text.encode()).hexdigest()
        analyzed = check(child.text)  # deployable as it is
        assert analyzed.name == child.name
        assert "@dist" not in child.text
        (group,) = build_plan(analyzed).groups  # a child is an app with one group
    first, second = (bus_bindings(check(c.text).app)["TempStream"] for c in children[1:])
    assert (first.topic, first.strategy, first.partitions, first.read) == \
        ("TempApp.TempStream", "round-robin", 2, (0,))
    assert second.read == (1,)
    whole = bus_bindings(check(children[0].text).app)
    assert whole["TempStream"].strategy == "all"
    assert whole["AvgTempStream"].topic == "TempApp.AvgTempStream"


def test_split_is_deterministic() -> None:
    text = (EXPLAIN / "partitioned_parallel.siddhi").read_text()
    assert split_app(text) == split_app(text)


def test_an_app_without_dist_is_its_own_child() -> None:
    text = "@App:name('Plain')\ndefine stream S (a int);\nfrom S select a insert into O;\n"
    (child,) = split_app(text)
    assert (child.name, child.parent, child.instance, child.text, child.receiver) == \
        ("Plain", "Plain", 1, text, False)


def test_sources_go_to_a_receiver_child_and_sinks_stay_with_their_producer() -> None:
    children = {c.name: c for c in split_app(RECEIVER_APP)}
    assert list(children) == ["Shop-passthrough-Orders-1", "Shop-filter-1", "Shop-filter-2",
                              "Shop-count-1"]
    receiver = children["Shop-passthrough-Orders-1"]
    assert receiver.receiver and "@source(type='http'" in receiver.text
    assert "from " not in receiver.text  # the source writes the topic itself
    assert bus_bindings(check(receiver.text).app)["Orders"].topic == "Shop.Orders"
    for name in ("Shop-filter-1", "Shop-filter-2"):
        assert "@sink(type='log')" in children[name].text
        assert "@source" not in children[name].text and not children[name].receiver
    assert "@sink" not in children["Shop-count-1"].text


def test_a_single_reader_keeps_its_source() -> None:
    text = RECEIVER_APP.replace("parallel='2'", "execGroup='count'").replace(
        "@dist(execGroup='filter', execGroup='count')", "@dist(execGroup='count')")
    children = split_app(text)
    assert [(c.name, c.receiver) for c in children] == [("Shop-count-1", True)]


def test_a_dist_nested_in_a_source_makes_that_many_receivers() -> None:
    """WSO2's ``@source(..., @dist(parallel='n'))``: n receiver children, each opening the
    source (the least n when several sources say), even for a single parallel-1 reader."""
    source = ("@source(type='http', receiver.url='http://0.0.0.0:8280/{0}', @map(type='json')"
              ", @dist(parallel='{1}'))\n")
    text = ("@App:name('Nest')\n" + source.format("a", 3) + source.format("b", 2) +
            "define stream S (a int);\n"
            "@info(name='q') @dist(execGroup='g') from S select a insert into T;\n")
    children = split_app(text)
    assert [(c.name, c.receiver) for c in children] == [
        ("Nest-passthrough-S-1", True), ("Nest-passthrough-S-2", True), ("Nest-g-1", False)]
    assert children[0].text.replace("-1'", "-2'") == children[1].text
    assert "@dist" not in children[0].text and children[0].text.count("@source") == 2
    assert "@source" not in children[2].text
    with pytest.raises(SiddhiAppError, match="positive whole number") as caught:
        split_app(text.replace("parallel='2'", "parallel='0'"), "nest.siddhi")
    assert "nest.siddhi:3:" in str(caught.value)


@pytest.mark.parametrize(("app", "words", "line"), [
    ("@App:name('A')\n@source(type='http', @map(type='json'))\ndefine stream S (a int);\n"
     "@dist(execGroup='g') from S select a insert into S;\n"
     "@dist(execGroup='h') from S select a insert into T;\n", "also inserted into", 2),
    ("@App:name('A')\ndefine stream S (a int);\n"
     "@dist(execGroup='g', parallel='2') partition with (a * 2 of S) begin\n"
     "from S select a insert into T; end;\n", "not an attribute", 3),
    ("@App:name('A')\ndefine stream S (a int);\n"
     "@dist(execGroup='g', parallel='2') partition with (a < 3 as 'x' or a >= 3 as 'y' of S)"
     " begin\nfrom S select a insert into T; end;\n", "range partitions", 3),
])
def test_split_faults_are_positioned(app: str, words: str, line: int) -> None:
    with pytest.raises(SiddhiAppError) as caught:
        split_app(app, "app.siddhi")
    assert words in caught.value.message
    assert f"app.siddhi:{line}:" in str(caught.value)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.one_of(st.text(max_size=6), st.none()), min_size=1, max_size=40),
       instances=st.integers(1, 5))
def test_field_grouping_sends_each_key_to_one_instance(keys: list[str | None],
                                                       instances: int) -> None:
    events = pa.table({"_seq": pa.array(range(len(keys)), pa.int64()),
                       "room": pa.array(keys, pa.string())})
    kept = [Selection("T", "field-grouping", "room", instances, (i,)).keeps(
        events, AttrType.STRING) for i in range(instances)]
    for row, key in enumerate(keys):
        owners = [i for i in range(instances) if kept[i][row]]
        assert len(owners) == 1  # every event once
        expected = 0 if key is None else routing.partition_for(key, AttrType.STRING, instances)
        assert owners == [expected]  # the bus's (WSO2's) routing: same key, same instance


@settings(max_examples=30, deadline=None)
@given(count=st.integers(0, 50), instances=st.integers(1, 4), start=st.integers(0, 1000))
def test_round_robin_shares_every_event_once(count: int, instances: int, start: int) -> None:
    events = pa.table({"_seq": pa.array(range(start, start + count), pa.int64())})
    kept = [Selection("T", "round-robin", None, instances, (i,)).keeps(events, None)
            for i in range(instances)]
    assert all(sum(bool(k[row]) for k in kept) == 1 for row in range(count))


def test_explain_shows_the_children_as_deployed(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from eddy.cli import main

    seed = EXPLAIN / "seed_distributed.siddhi"
    children = split_app(seed.read_text(), str(seed))
    assert main(["explain", "--json", str(seed)]) == 0
    shown = json.loads(capsys.readouterr().out)["children"]
    assert [(c["name"], c["text"], c["version"]) for c in shown] == \
        [(c.name, c.text, c.version) for c in children]
    assert main(["explain", str(seed)]) == 0
    assert "TempApp-group-2-2 (group group-2, instance 2, resource node" in \
        capsys.readouterr().out
