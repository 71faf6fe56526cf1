"""``eddy explain`` shows the physical plan: per query its operator, state key and why, as
golden files (``physical/*.siddhi`` with ``.txt`` and ``.json`` beside them; ``EDDY_REGEN=1``
rewrites them after an intended change — review the diff). The seed app and a dozen
multi-query apps; the choices are the engine's (:mod:`eddy.engine.compile.operator_facts`), made
without starting Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eddy.cli import main
from eddy.engine.spark.jvm_classes import bridge_jar

pytest.importorskip("pyspark")

HERE = Path(__file__).parent / "physical"
APPS = sorted(HERE.glob("*.siddhi"))
REGEN = os.environ.get("EDDY_REGEN") == "1"


def _golden(path: Path, actual: str) -> None:
    if REGEN or not path.exists():
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs; EDDY_REGEN=1 rewrites"


def _explain(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["explain", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.stem)
def test_physical_explain_golden(app: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _golden(app.with_suffix(".txt"), _explain(capsys, str(app)))
    _golden(app.with_suffix(".json"), _explain(capsys, "--json", str(app)))


def _choices(app: str, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[str, str]]:
    physical = json.loads(_explain(capsys, "--json", str(HERE / app)))["physical"]
    return {c["query"]: (c["operator"], c["state_key"]["kind"]) for c in physical["queries"]}


def test_the_seed_app(capsys: pytest.CaptureFixture[str]) -> None:
    """As written, the seed's window (a global ``#window.time`` average, ``insert all
    events``) and its pattern each run in an operator of their own (eddy's Java operators
    where a JDK built them), on one key, and no per-event runtime is left; its filter is
    Spark SQL."""
    jvm = bridge_jar() is not None
    window = "jvm-window-aggregate" if jvm else "window-aggregate"
    pattern = "jvm-followed-by" if jvm else "followed-by"
    assert _choices("seed_temperature.siddhi", capsys) == {
        "query-1": (window, "one"), "query-2": (pattern, "one"),
        "query-3": ("spark-sql", "none")}
    assert _choices("seed_pattern_alone.siddhi", capsys) == {
        "query-2": (pattern, "one"), "query-3": ("spark-sql", "none")}


def test_keys_follow_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    out = _explain(capsys, str(HERE / "partitioned_pattern.siddhi"))
    pattern = "JVM" if bridge_jar() is not None else "vectorised"
    assert f"rise: {pattern} followed-by, keyed by roomNo in 4 buckets" in out
    choices = _choices("partitioned_runtime.siddhi", capsys)
    assert choices["per-symbol-max"] == ("runtime", "buckets")
    # a partition's length window: each value's own window in eddy's Java operator
    assert choices["per-symbol-sum"] == \
        ("jvm-window-aggregate" if bridge_jar() is not None else "runtime", "buckets")


def test_each_stateful_query_its_own_operator(capsys: pytest.CaptureFixture[str]) -> None:
    """Several stateful queries of a group each get the best operator they can: a query in
    a chain reads its producer's Java operator (with a JDK; else the chain stays with the
    runtime, which orders it), the others do not follow it there; the Python operators are
    fused into one Spark operator, and explain says so."""
    # with a JDK, the sliding windows and the pattern run in eddy's Java operators
    jvm = bridge_jar() is not None
    sliding = "jvm-window-aggregate" if jvm else "window-aggregate"
    chained = "jvm-window-aggregate" if jvm else "runtime"
    assert _choices("mixed_group.siddhi", capsys) == {
        "avg-1min": (chained, "one"), "count-batch": (sliding, "one"),
        "rise": ("jvm-followed-by" if jvm else "followed-by", "one"),
        "max-100": ("jvm-window-aggregate" if jvm else "runtime", "one"),
        "chained-avg": (chained, "one"), "doors": ("spark-sql", "none")}
    if jvm:  # readers of a window's outputs read its operator: one time window needs a clock
        chains = _choices("stateful_chains.siddhi", capsys)
        assert {q for q, (op, _) in chains.items() if op == "runtime"} == \
            {"room-avg-2", "room-avg-5min"}
        assert chains["device-jump"] == ("jvm-followed-by", "buckets")
    assert _choices("two_windows.siddhi", capsys) == {
        "avg-1min": (sliding, "one"),
        "max-100": ("jvm-window-aggregate" if jvm else "runtime", "one")}
    out = _explain(capsys, str(HERE / "mixed_group.siddhi"))
    if not jvm:  # with a JDK only the runtime is left in Python: nothing to fuse
        assert "fused: count-batch, rise, runtime in one Spark stateful operator" in out
    else:
        assert "fused:" not in out


def test_java_window_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    """A ``having`` over the selected attributes, ``sum`` of an int or long, an
    ``externalTime`` window, a ``lengthBatch``, a ``timeBatch`` into all events and no window
    at all run in eddy's Java operator where a JDK built it (no NumPy kernel keeps them); a
    ``having`` that calls a function stays with the runtime."""
    jvm = bridge_jar() is not None
    window = ("jvm-window-aggregate" if jvm else "runtime", "one")
    assert _choices("java_window_shapes.siddhi", capsys) == {
        "noisy": window, "latency-totals": window, "slow-services": ("runtime", "one"),
        "running-errors": window, "last-minute-by-at": window,
        "batches-of-ten": window, "minute-batches": window}
