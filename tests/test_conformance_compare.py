"""The conformance comparator follows shared/conformance/README.md, "Comparing outputs"."""

from __future__ import annotations

from typing import Any

from conformance import (
    compare_case,
    compare_events,
    compare_store_rows,
    feature_matches,
    load_cases,
    values_equal,
)
from hypothesis import given
from hypothesis import strategies as st

S: list[list[str]] = [["k", "STRING"], ["n", "LONG"], ["d", "DOUBLE"], ["f", "FLOAT"]]


def ev(ts: int, *data: Any, expired: bool = False) -> dict[str, Any]:
    return {"timestamp": ts, "data": list(data), "expired": expired}


def test_equal_lists_compare_equal_both_ways() -> None:
    events = [ev(10, "a", 1, 0.5, 0.25), ev(20, "b", 2, 1.5, 0.75)]
    assert compare_events(events, [dict(e) for e in events], S, ordered=True) is None
    assert compare_events(events, [dict(e) for e in events], S, ordered=False) is None


def test_ordered_detects_swapped_events_and_names_index_and_field() -> None:
    expected = [ev(10, "a", 1, 0.5, 0.25), ev(10, "b", 2, 1.5, 0.75)]
    diff = compare_events(expected, expected[::-1], S, ordered=True)
    assert diff is not None
    assert diff.startswith("event 0 ") and "field 0 'k' (STRING)" in diff
    assert "expected 'a', actual 'b'" in diff


def test_ordered_reports_missing_and_extra_events() -> None:
    expected = [ev(10, "a", 1, 0.5, 0.25), ev(20, "b", 2, 1.5, 0.75)]
    missing = compare_events(expected, expected[:1], S, ordered=True)
    extra = compare_events(expected[:1], expected, S, ordered=True)
    assert missing is not None and "missing events from event 1" in missing
    assert extra is not None and "extra events from event 1" in extra


def test_multiset_ignores_order_but_enforces_multiplicity() -> None:
    a, b = ev(10, "a", 1, 0.5, 0.25), ev(10, "b", 2, 1.5, 0.75)
    assert compare_events([a, b, a], [b, a, a], S, ordered=False) is None
    too_few = compare_events([a, b, a], [a, b, b], S, ordered=False)
    assert too_few is not None and "expected event 2" in too_few
    too_many = compare_events([a, b], [a, b, a], S, ordered=False)
    assert too_many is not None and "unexpected actual event 2" in too_many


def test_multiset_points_at_the_closest_unmatched_event() -> None:
    expected = [ev(10, "a", 1, 0.5, 0.25), ev(10, "b", 2, 1.5, 0.75)]
    actual = [ev(10, "a", 1, 0.5, 0.25), ev(10, "b", 3, 1.5, 0.75)]
    diff = compare_events(expected, actual, S, ordered=False)
    assert diff is not None
    assert "closest unmatched is actual event 1" in diff and "expected 2, actual 3" in diff


def test_double_tolerance_is_1e9_relative_and_1e12_absolute_near_zero() -> None:
    assert values_equal(1.0, 1.0 + 5e-10, "DOUBLE")
    assert not values_equal(1.0, 1.0 + 5e-9, "DOUBLE")
    assert values_equal(0.0, 5e-13, "DOUBLE")
    assert not values_equal(0.0, 5e-12, "DOUBLE")
    assert values_equal(1e20, 1e20 * (1 + 5e-10), "DOUBLE")


def test_float_tolerance_is_1e6_relative() -> None:
    assert values_equal(1.1, 1.1 + 5e-7, "FLOAT")
    assert not values_equal(1.1, 1.1 + 5e-6, "FLOAT")
    assert not values_equal(1.1, 1.1 + 5e-7, "DOUBLE")
    expected = [ev(1, "a", 1, 0.1, 0.1)]
    assert compare_events(expected, [ev(1, "a", 1, 0.1, 0.1 + 1e-8)], S, True) is None
    diff = compare_events(expected, [ev(1, "a", 1, 0.1 + 1e-8, 0.1)], S, True)
    assert diff is not None and "field 2 'd' (DOUBLE)" in diff


def test_integers_match_floats_by_value_but_integral_types_have_no_tolerance() -> None:
    assert values_equal(1, 1.0, "DOUBLE") and values_equal(1.0, 1, "LONG")
    assert values_equal(3, 3.0, None)
    assert not values_equal(3, 3.0000000001, "LONG")
    assert not values_equal(1, True, None) and not values_equal(True, 1, "BOOL")
    assert not values_equal(1, "1", None)


def test_null_matches_only_null() -> None:
    assert values_equal(None, None, "DOUBLE")
    for other in (0, 0.0, "", False, "null"):
        assert not values_equal(None, other, None)
        assert not values_equal(other, None, None)


def test_non_finite_strings_match_their_floats_and_each_other() -> None:
    assert values_equal("NaN", float("nan"), "DOUBLE")
    assert values_equal("NaN", "NaN", "DOUBLE")
    assert values_equal("Infinity", float("inf"), "DOUBLE")
    assert values_equal("-Infinity", float("-inf"), None)
    assert not values_equal("Infinity", float("-inf"), "DOUBLE")
    assert not values_equal("NaN", 0.0, "DOUBLE")
    assert not values_equal("NaN", float("nan"), "STRING")  # a STRING attribute stays text


def test_expired_flag_mismatch_is_detected() -> None:
    diff = compare_events([ev(10, "a", 1, 0.5, 0.25, expired=True)],
                          [ev(10, "a", 1, 0.5, 0.25)], S, ordered=True)
    assert diff is not None and "expired: expected True, actual False" in diff
    assert compare_events([ev(10, "a", 1, 0.5, 0.25, expired=True)],
                          [ev(10, "a", 1, 0.5, 0.25)], S, ordered=False) is not None


def test_timestamp_mismatch_is_detected_exactly() -> None:
    diff = compare_events([ev(1000, "a", 1, 0.5, 0.25)], [ev(1001, "a", 1, 0.5, 0.25)], S, True)
    assert diff is not None and "timestamp: expected 1000, actual 1001" in diff


def test_store_rows_are_multisets_unless_ordered_with_double_tolerance() -> None:
    expected = [[1000, "s1", 3.0, 2], [2000, "s2", 9.0, 1]]
    shuffled = [[2000, "s2", 9.0 + 1e-12, 1], [1000, "s1", 3, 2]]
    assert compare_store_rows(expected, shuffled) is None
    assert compare_store_rows(expected, shuffled, ordered=True) is not None
    off = compare_store_rows(expected, [[1000, "s1", 3.1, 2], [2000, "s2", 9.0, 1]])
    assert off is not None and "field 2: expected 3.0, actual 3.1" in off


@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-1e6, 1e6)), max_size=8), st.randoms())
def test_any_permutation_matches_as_multiset_and_dropping_one_does_not(
    values: list[tuple[int, float]], rnd: Any
) -> None:
    expected = [ev(ts, "k", 1, d, 0.0) for ts, d in values]
    actual = list(expected)
    rnd.shuffle(actual)
    assert compare_events(expected, actual, S, ordered=False) is None
    if actual:
        assert compare_events(expected, actual[1:], S, ordered=False) is not None


def test_feature_prefixes_match_by_dotted_segment() -> None:
    assert feature_matches("window.time", ["window"])
    assert feature_matches("window.time", ["window.time"])
    assert not feature_matches("window.timeBatch", ["window.time"])
    assert not feature_matches("windows", ["window"])


def test_load_cases_finds_all_105_and_each_has_expected_or_error() -> None:
    cases = load_cases()
    assert len(cases) == 105
    for case in cases:
        assert (case.expected is None) != (case.expected_error is None), case.name
    window_cases = load_cases(["window"])
    assert window_cases and all(c.feature.startswith("window") for c in window_cases)


def test_every_valid_case_matches_its_own_expectations() -> None:
    for case in load_cases():
        if case.expected is None:
            continue
        store = [entry["rows"] for entry in case.expected_store]
        assert compare_case(case, case.expected, case.expected_queries, store) == [], case.name


def test_compare_case_reports_each_differing_stream_query_and_store_result() -> None:
    case = next(c for c in load_cases(["aggregation.incremental"]) if c.expected_store)
    store = [entry["rows"] for entry in case.expected_store]
    store[0] = store[0][1:]
    streams = {name: events + [ev(99, "x")] for name, events in (case.expected or {}).items()}
    differences = compare_case(case, streams, None, store)
    assert any(d.startswith("store query at input") for d in differences)
    assert len(differences) == 1 + len(streams)
