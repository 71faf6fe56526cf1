"""An app eddy cannot run is refused when it is checked, at its line and column.

Valid SiddhiQL can hold a query no eddy operator runs yet (the per-event runtime is the
last resort, and it lacks a few forms). Before ``check_app`` such an app passed ``eddy
validate`` and a deploy, then failed in its first micro-batch with a Python traceback
inside a Spark task. Now every entry point plans the app first and says where and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eddy.cli import main
from eddy.engine.compile.app_check import check_app
from eddy.lang import SiddhiAppError

NESTED = """\
@App:name('Nested')
define stream S (a int, b string);
from (from S select a, b return)
select a insert into O;
"""

SNAPSHOT_EXPIRED = """\
@App:name('Snapshot')
@app:playback
define stream S (sym string, p double);
from S#window.time(1 sec)
select sym, p
output snapshot every 1 sec
insert expired events into O;
"""

TABLE_JOIN = """\
@App:name('Tables')
define table T (a int);
define table U (a int);
from T join U on T.a == U.a select T.a insert into O;
"""

@pytest.mark.parametrize(("text", "line", "column", "says"), [
    (NESTED, 3, 5, "anonymous (nested) input queries"),
    (SNAPSHOT_EXPIRED, 4, 5, "insert all events"),
    (TABLE_JOIN, 4, 5, "both inputs"),
])
def test_a_query_no_operator_runs_is_a_positioned_fault(text: str, line: int, column: int,
                                                        says: str) -> None:
    with pytest.raises(SiddhiAppError) as raised:
        check_app(text, "app.siddhi")
    error = raised.value
    assert (error.kind, error.line, error.column) == ("semantic", line, column)
    assert "cannot run in eddy" in error.message and says in error.message
    assert error.render().startswith(f"app.siddhi:{line}:{column}: error:")


def test_a_runnable_app_passes_with_its_plan() -> None:
    analyzed, plan = check_app("@App:name('Fine')\ndefine stream S (a int);\n"
                               "from S[a > 1]#window.length(2) select sum(a) as s "
                               "insert into O;\n")
    assert analyzed.name == "Fine" and plan.groups


def test_validate_and_explain_report_it(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nested.siddhi"
    path.write_text(NESTED, encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    assert f"{path}:3:5: error: query " in capsys.readouterr().err
    assert main(["explain", str(path)]) == 1
    assert "cannot run in eddy" in capsys.readouterr().err


def test_replay_refuses_it_before_spark_starts() -> None:
    """``eddy replay`` and ``eddy run`` check as a worker does: the fault, not a task failure."""
    from eddy.engine.run.replay import replay

    with pytest.raises(SiddhiAppError, match="cannot run in eddy") as raised:
        replay(NESTED, [{"stream": "S", "timestamp": 1000, "data": [1, "x"]}],
               spark=object())  # type: ignore[arg-type]  # never reached
    assert raised.value.line == 3
