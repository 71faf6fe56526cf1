"""What a vectorised window operator emits for one micro-batch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass
class Emitted:
    """Outputs in emission order: ``rows`` are the micro-batch rows whose ``_seq`` they
    carry, ``ts`` their timestamps, ``positions`` their index within their emission;
    ``sums``/``counts`` ([outputs, arguments]) the argument sums and non-null counts,
    ``sizes`` the events counted; ``values`` the selected attributes' values by column;
    ``expired`` whether each output is an expired event and ``timer`` whether the window's
    timer emitted it (None: all current, from inputs)."""

    rows: np.ndarray
    ts: np.ndarray
    positions: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    sizes: np.ndarray
    values: Mapping[str, np.ndarray]
    expired: np.ndarray | None = None
    timer: np.ndarray | None = None
