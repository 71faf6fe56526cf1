"""How many examples a property test draws: half in the suite (CI's 40 minutes), all of
them with ``EDDY_LONG=1``."""

from __future__ import annotations

import os

LONG = os.environ.get("EDDY_LONG") == "1"


def examples(full: int) -> int:
    """``full`` under ``EDDY_LONG=1``, else half of it."""
    return full if LONG else max(1, full // 2)
