"""Revisions on disk: ``<millis>__<app>`` copies of a checkpoint, bounded in number, restorable,
and a killed worker's half-done work finished or undone at the next start."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from eddy.node.persistence import RevisionNotFound, RevisionStore


def _checkpoint(store: RevisionStore, app: str, content: str) -> None:
    folder = store.checkpoint_dir(app) / "spark" / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "0").write_text(content)


def _content(store: RevisionStore, app: str) -> str:
    return (store.checkpoint_dir(app) / "spark" / "offsets" / "0").read_text()


def test_revisions_are_named_ordered_and_bounded(tmp_path: Path) -> None:
    store = RevisionStore(tmp_path, keep=2)
    _checkpoint(store, "App", "one")
    names = [store.save("App", "app text") for _ in range(3)]
    assert all(re.fullmatch(r"\d{13}__App", n) for n in names)
    assert len(set(names)) == 3  # unique even within one millisecond
    assert store.revisions("App") == names[1:]
    assert store.revision_text("App", None) == (names[2], "app text")
    with pytest.raises(RevisionNotFound):
        store.revision_text("App", names[0])
    with pytest.raises(RevisionNotFound):
        store.revision_text("Other", None)


def test_load_brings_a_revision_back_and_prepares_the_copy(tmp_path: Path) -> None:
    store = RevisionStore(tmp_path, keep=3)
    _checkpoint(store, "App", "before")
    revision = store.save("App", "v1")
    _checkpoint(store, "App", "after")
    prepared: list[Path] = []
    store.load("App", revision, prepared.append)
    assert _content(store, "App") == "before"
    assert prepared and prepared[0].name == ".checkpoint.restoring"
    assert store.checkpoint_text("App") == "v1"


def test_reset_keeps_the_old_state_as_a_revision(tmp_path: Path) -> None:
    store = RevisionStore(tmp_path, keep=3)
    _checkpoint(store, "App", "old state")
    store.record_text("App", "v1")
    revision = store.reset("App", "v2")
    assert revision is not None and not store.has_checkpoint("App")
    assert store.revision_text("App", revision) == (revision, "v1")
    assert store.checkpoint_text("App") == "v2"
    assert store.reset("App", "v3") is None  # nothing to keep


def test_clear_deletes_revisions_and_optionally_the_live_state(tmp_path: Path) -> None:
    store = RevisionStore(tmp_path, keep=3)
    _checkpoint(store, "App", "state")
    store.save("App", "v1")
    store.clear("App", live=False)
    assert store.revisions("App") == [] and store.has_checkpoint("App")
    store.clear("App", live=True)
    assert not store.has_checkpoint("App")


def test_recover_completes_an_interrupted_restore_and_drops_partial_copies(
        tmp_path: Path) -> None:
    store = RevisionStore(tmp_path, keep=3)
    _checkpoint(store, "App", "restored state")
    # Killed after the old checkpoint was moved away, before the new one was in place.
    os.replace(store.checkpoint_dir("App"), store.app_dir("App") / ".checkpoint.restoring")
    (store.app_dir("App") / ".123__App.tmp").mkdir()
    _checkpoint(store, "Other", "live")
    (store.app_dir("Other") / ".checkpoint.restoring").mkdir()  # a partial copy
    store.recover()
    assert _content(store, "App") == "restored state"
    assert _content(store, "Other") == "live"
    assert [p.name for p in store.app_dir("App").iterdir()] == ["checkpoint"]
    assert [p.name for p in store.app_dir("Other").iterdir()] == ["checkpoint"]
