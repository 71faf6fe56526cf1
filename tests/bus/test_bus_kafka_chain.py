"""The Kafka bus's record chain: which records count, decided from any window of the log.

A log is written here as records ``(prev, first, count)`` at offsets 0, 1, 2, …; the
writers of a race both name the same ``prev`` and the later one is invalid.
"""

from __future__ import annotations

import pytest

from eddy.bus.errors import BusError
from eddy.bus.kafka_chain import Record, anchor, follow, headers, parse


def log_of(*claims: tuple[int, int, int]) -> list[Record]:
    return [Record(offset, first, count, prev, f"k{offset}", 0, b"")
            for offset, (prev, first, count) in enumerate(claims)]


# offsets:    0: valid, 1: valid, 2: valid (won the race for prev 1), 3: lost it (prev 1),
#             4: valid (the loser again, after 2), 5: valid
RACED = log_of((-1, 0, 5), (0, 5, 3), (1, 8, 2), (1, 8, 4), (2, 10, 4), (4, 14, 1))
VALID = [0, 1, 2, 4, 5]


def test_following_from_the_start_skips_the_record_that_lost_a_race() -> None:
    chain = follow(-1, RACED)
    assert [r.offset for r in chain] == VALID
    assert [(r.first, r.end) for r in chain] == [(0, 5), (5, 8), (8, 10), (10, 14), (14, 15)]


@pytest.mark.parametrize("start", range(len(RACED)))
def test_any_window_finds_a_valid_anchor_and_the_same_chain(start: int) -> None:
    window = RACED[start:]
    found = anchor(window, log_start=0)
    assert found is not None
    head = window[found]
    assert head.offset in VALID
    chain = [head, *follow(head.offset, window[found + 1:])]
    assert [r.offset for r in chain] == [v for v in VALID if v >= head.offset]


def test_a_window_starting_at_a_loser_does_not_take_it_for_valid() -> None:
    window = RACED[3:]  # the loser names prev 1, which lies before the window
    found = anchor(window, log_start=0)
    assert found is not None and window[found].offset == 4


def test_a_record_whose_competitor_may_precede_the_window_is_undecided() -> None:
    # Offset 3 names prev 1 and the window starts at 3: nothing decides it alone.
    assert anchor(RACED[3:4], log_start=0) is None


def test_the_first_record_of_the_log_is_valid_by_construction() -> None:
    trimmed = RACED[2:]  # retention removed offsets 0 and 1; 2 is the first kept
    assert anchor(trimmed, log_start=2) == 0


def test_headers_round_trip_and_foreign_records_are_named() -> None:
    record = parse("t", 7, headers(10, 4, 6, "p:3:0"), 123, b"x")
    assert record == Record(7, 10, 4, 6, "p:3:0", 123, b"x")
    with pytest.raises(BusError, match="offset 9 has no eddy-first"):
        parse("t", 9, [("other", b"1")], 0, b"")
