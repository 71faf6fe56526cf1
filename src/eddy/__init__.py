"""eddy: Siddhi streaming-SQL apps on Apache Spark, deployed the way WSO2 Stream Processor does.

The package root exports what a Python user needs first: reading and checking an app.
Running apps (``eddy.replay``) lives in the engine and is imported lazily, so checking an
app never starts a JVM.
"""

from __future__ import annotations

from typing import Any

from eddy.lang import analyze, check, parse
from eddy.lang.errors import SiddhiAppError

__all__ = ["SiddhiAppError", "analyze", "check", "parse", "replay"]
__version__ = "0.1.0"


def replay(app_text: str, inputs: list[dict[str, Any]], **options: Any) -> Any:
    """Runs ``app_text`` over bounded ``inputs`` on Spark; see :func:`eddy.engine.replay.replay`."""
    from eddy.engine.replay import replay as run_replay

    return run_replay(app_text, inputs, **options)
