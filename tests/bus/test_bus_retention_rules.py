"""Which stored batches retention removes: a prefix, below every commit, past a limit."""

from __future__ import annotations

from eddy.bus.retention import Retention, StoredBatch, removable_prefix

NOW = 1_000_000


def batches(*ages_and_sizes: tuple[int, int]) -> list[StoredBatch]:
    """Ten events per batch: batch i holds 10*i .. 10*i+9."""
    return [StoredBatch(10 * i, 10 * i + 9, NOW - age, size)
            for i, (age, size) in enumerate(ages_and_sizes)]


def removable(stored: list[StoredBatch], retention: Retention, protect_from: int | None = None,
              keep_last: int = 0) -> int:
    return len(removable_prefix(stored, retention, protect_from=protect_from, now_ms=NOW,
                                total_bytes=sum(b.nbytes for b in stored),
                                at_most=len(stored) - keep_last))


def test_nothing_is_removed_without_limits() -> None:
    assert removable(batches((10**9, 10**9)), Retention()) == 0


def test_age_removes_the_old_prefix_only() -> None:
    stored = batches((500, 1), (400, 1), (50, 1), (450, 1))  # an old one after a young one
    assert removable(stored, Retention(max_age_ms=100)) == 2


def test_size_removes_the_oldest_until_the_rest_fits() -> None:
    stored = batches((0, 100), (0, 100), (0, 100), (0, 100))
    assert removable(stored, Retention(max_bytes=250)) == 2


def test_a_committed_position_is_never_removed() -> None:
    stored = batches((500, 100), (500, 100), (500, 100), (500, 100))
    limits = Retention(max_age_ms=1, max_bytes=0)
    assert removable(stored, limits, protect_from=25) == 2  # batch 20..29 holds 25
    assert removable(stored, limits, protect_from=20) == 2
    assert removable(stored, limits, protect_from=19) == 1
    assert removable(stored, limits, protect_from=0) == 0


def test_the_last_batches_can_be_kept() -> None:
    stored = batches((500, 100), (500, 100))
    assert removable(stored, Retention(max_age_ms=1), keep_last=1) == 1


def test_batches_are_consumed_only_as_far_as_needed() -> None:
    consumed = []

    def lazily() -> object:
        for batch in batches((500, 1), (0, 1), (500, 1)):
            consumed.append(batch)
            yield batch

    assert len(removable_prefix(lazily(), Retention(max_age_ms=100),  # type: ignore[arg-type]
                                protect_from=None, now_ms=NOW, total_bytes=3, at_most=3)) == 1
    assert len(consumed) == 2
