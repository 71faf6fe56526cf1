"""eddy: Siddhi streaming-SQL apps on Apache Spark, deployed the way WSO2 Stream Processor does.

The root exports what a Python user needs first: checking an app (``check``, ``parse``,
``analyze``), running it over a bounded input (``replay``) and the one error type
(``SiddhiAppError``). Names load on first use, so a Spark worker that imports one eddy
module does not pay for the whole front end, and checking an app never starts a JVM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eddy.lang.errors import SiddhiAppError

if TYPE_CHECKING:
    from eddy.engine.run.replay import ReplayResult, replay
    from eddy.lang import analyze, check, parse

__all__ = ["ReplayResult", "SiddhiAppError", "analyze", "check", "parse", "replay"]
__version__ = "0.1.0"

_LAZY = {"analyze": "eddy.lang", "check": "eddy.lang", "parse": "eddy.lang",
         "replay": "eddy.engine.run.replay", "ReplayResult": "eddy.engine.run.replay"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'eddy' has no attribute '{name}'")
