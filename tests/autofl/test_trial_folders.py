"""The cached sub-folder listing behind the trial's log and round-record watching (trial/folders.py)."""

import os

from autofl_core.trial import folders
from autofl_core.trial.folders import Subfolders


def test_a_listing_is_reused_while_the_folder_is_unchanged_and_redone_when_it_changes(tmp_path, monkeypatch):
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "a", tmp_path / "link")
    old = 1_000_000_000
    os.utime(tmp_path, ns=(old, old))  # changed long before any listing: safe to reuse
    calls = []
    real = folders.list_subfolders
    monkeypatch.setattr(folders, "list_subfolders", lambda folder: calls.append(folder) or real(folder))
    seen = Subfolders()
    assert seen.of(tmp_path, 8) == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert seen.of(tmp_path, 1) == [str(tmp_path / "a")]
    assert len(calls) == 1
    (tmp_path / "c").mkdir()  # the folder's mtime moves on: listed again
    assert seen.of(tmp_path, 8) == [str(tmp_path / name) for name in ("a", "b", "c")]
    assert len(calls) == 2


def test_a_folder_changed_just_before_its_listing_is_listed_again_next_time(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()  # mtime now: a change in the same timestamp tick would not move it
    calls = []
    real = folders.list_subfolders
    monkeypatch.setattr(folders, "list_subfolders", lambda folder: calls.append(folder) or real(folder))
    seen = Subfolders()
    seen.of(tmp_path, 8)
    seen.of(tmp_path, 8)
    assert len(calls) == 2


def test_a_missing_folder_has_no_subfolders(tmp_path):
    assert Subfolders().of(tmp_path / "missing", 8) == []
