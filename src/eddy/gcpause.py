"""Pausing Python's cyclic garbage collector around work that allocates in bulk.

Parsing a large app, pickling or unpickling a runtime snapshot and running a micro-batch
each allocate many objects and keep them alive until the work ends. The collector's full
passes, triggered by that growth, then scan an ever larger heap for cycles this code does
not make: measured, they cost as much as the parse itself, three quarters of a restore and
double the time of a 250,000-event batch. Whatever cycles the work does leave are collected
after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the ``with`` block (and back on only if it was on)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
