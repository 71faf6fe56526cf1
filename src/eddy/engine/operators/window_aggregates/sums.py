"""Exact running sums and group numbers for the vectorised window operators.

The runtime sums doubles one event at a time (``state[0] += v``); ``numpy.cumsum`` does the
same additions in the same order (it accumulates left to right, unlike ``numpy.sum``), so a
per-group cumulative sum that starts from the group's carried-over sum gives the runtime's
values bit for bit. A cumulative sum over all groups minus per-group offsets would not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def segmented_cumsum(values: np.ndarray, starts: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Per segment (``starts`` of consecutive runs), ``initial + v0``, ``(initial + v0) + v1``,
    …: the sequential sums a Python loop makes."""
    if not len(values):
        return values.copy()
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, as in Java
        return _sequential_sums(values, starts, initial)


def _sequential_sums(values: np.ndarray, starts: np.ndarray, initial: np.ndarray) -> np.ndarray:
    ends = np.r_[starts[1:], len(values)]
    lengths = ends - starts
    longest = int(lengths.max())
    out = np.empty_like(values)
    if len(starts) <= longest:  # few, long segments: one cumsum each
        for start, end, first in zip(starts.tolist(), ends.tolist(), initial.tolist()):
            segment = values[start:end].copy()
            segment[0] = first + segment[0]
            out[start:end] = np.cumsum(segment)
        return out
    # many short segments: step through the positions, all segments at once
    running = initial.astype(np.float64).copy()
    rank = np.arange(len(values)) - np.repeat(starts, lengths)
    segment_of = np.repeat(np.arange(len(starts)), lengths)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.searchsorted(rank[by_rank], np.arange(longest + 1), "left")
    for r in range(longest):
        at = by_rank[bounds[r]:bounds[r + 1]]
        segments = segment_of[at]
        running[segments] = running[segments] + values[at]
        out[at] = running[segments]
    return out


def segmented_intsum(values: np.ndarray, starts: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Running integer sums per segment (exact in any order)."""
    if not len(values):
        return values.copy()
    total = np.cumsum(values)
    before = np.r_[0, total[starts[1:] - 1]]
    lengths = np.diff(np.r_[starts, len(values)])
    sums: np.ndarray = total - np.repeat(before, lengths) + np.repeat(initial, lengths)
    return sums


def segment_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values begins in a sorted array."""
    if not len(sorted_keys):
        return np.empty(0, np.int64)
    return np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])


def factorize(columns: list[np.ndarray]) -> np.ndarray:
    """Group numbers by first appearance over one or more key columns; a null is a key too
    (the runtime groups ``None`` like any value)."""
    codes = pd.factorize(pd.Series(columns[0]), use_na_sentinel=False)[0].astype(np.int64)
    for column in columns[1:]:
        more, uniques = pd.factorize(pd.Series(column), use_na_sentinel=False)
        codes = pd.factorize(codes * (len(uniques) + 1) + more, use_na_sentinel=False)[0]
    groups: np.ndarray = codes.astype(np.int64)
    return groups


def signed_values(column: np.ndarray, sign: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``±v`` per operation (0.0 for a null, which changes no sum), and whether present.

    ``s + 0.0 == s`` exactly here: a sum that starts at 0.0 never becomes -0.0."""
    present = ~np.isnan(column)
    with np.errstate(invalid="ignore"):
        return np.where(present, column * sign, 0.0), present
