"""The role history a node's ``GET /ha`` lists: which calls make an entry, and where a
takeover's measured times go."""

from __future__ import annotations

from eddy.node.ha_history import HISTORY, RoleHistory


def test_a_status_is_an_entry_once_and_a_passive_keeps_a_new_reason_quietly() -> None:
    history = RoleHistory()
    assert history.record("starting", "joining", None, None) == ("joining", True)
    assert history.record("passive", "node a holds the lease", 1, "a") == (
        "node a holds the lease", True)
    assert history.record("passive", None, 1, "a") == ("node a holds the lease", False)
    assert history.record("passive", "node c holds the lease", 2, "c") == (
        "node c holds the lease", False)  # followed a new holder: logged, not a change
    assert history.record("active", "took the lease", 3, "b") == ("took the lease", True)
    assert history.record("active", "took the lease", 3, "b") == ("took the lease", False)
    entries = history.entries()
    assert [(e["status"], e["epoch"], e["holder"]) for e in entries] == [
        ("starting", None, None), ("passive", 1, "a"), ("passive", 2, "c"),
        ("active", 3, "b")]
    assert all(isinstance(e["at_ms"], int) for e in entries)


def test_a_takeovers_times_go_to_the_latest_active_entry_and_stay() -> None:
    history = RoleHistory()
    history.note_takeover(loss_ms=1)  # never active: nothing to write into
    history.record("active", "took the lease", 1, "b")
    history.record("passive", "lost the lease", 2, "a")
    history.record("active", "took the lease back", 3, "b")
    history.note_takeover(loss_ms=100)
    history.note_takeover(recovered_ms=250)
    history.note_takeover(first_output_ms=400)
    first, _, last = history.entries()
    assert (first["loss_ms"], first["recovered_ms"], first["first_output_ms"]) == (
        None, None, None)
    assert (last["loss_ms"], last["recovered_ms"], last["first_output_ms"]) == (100, 250, 400)


def test_only_the_newest_changes_are_kept() -> None:
    history = RoleHistory()
    for i in range(HISTORY + 5):
        history.record("active" if i % 2 else "passive", f"change {i}", i, "a")
    entries = history.entries()
    assert len(entries) == HISTORY
    assert entries[-1]["reason"] == f"change {HISTORY + 4}"
