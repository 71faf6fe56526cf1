"""Built-in specs for :data:`eddy.lang.functions.REGISTRY`, checked against the Siddhi 5 sources.

One module per family, each listing its specs in ``SPECS``: :mod:`.core` (core scalar
functions and the ``#log``/``#pol2Cart`` stream functions), :mod:`.aggregators`,
:mod:`.windows`, :mod:`.str_fns` (``str:``) and :mod:`.math_fns` (``math:``).
"""

from __future__ import annotations

from eddy.lang.builtins import aggregators, core, math_fns, str_fns, windows
from eddy.lang.functions import Registry


def register_builtins(registry: Registry) -> None:
    """Adds every built-in spec to ``registry``."""
    for module in (core, aggregators, windows, str_fns, math_fns):
        for spec in module.SPECS:
            registry.register(spec)
