"""autofl_core.common.atomic: readers see the old or the new file, never a partial one; modes stay ordinary."""

import os
import stat

import pytest
from autofl_core.common import atomic


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_file_gets_the_umask_mode_not_mkstemps_0600(tmp_path):
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "deep" / "new.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "deep" / "new.txt").read_text() == "x"
    assert _mode(tmp_path / "deep" / "new.txt") == 0o644


def test_replacing_keeps_the_existing_permission_bits(tmp_path):
    path = tmp_path / "results.tsv"
    path.write_text("old")
    path.chmod(0o640)
    atomic.write_text(path, "new")
    assert path.read_text() == "new" and _mode(path) == 0o640


def test_a_failure_before_the_replace_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    path.write_text("old")

    def killed(*_args):
        raise KeyboardInterrupt("killed between write and replace")

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_bytes(path, b"new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_write_json_is_sorted_and_refuses_non_finite_values_without_writing(tmp_path):
    path = tmp_path / "doc.json"
    atomic.write_json(path, {"b": 1, "a": [2]})
    assert path.read_text() == '{\n  "a": [\n    2\n  ],\n  "b": 1\n}\n'
    with pytest.raises(ValueError):
        atomic.write_json(path, {"score": float("nan")})
    assert path.read_text().startswith('{\n  "a"')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


def test_umask_is_read_without_changing_it():
    old = os.umask(0o027)
    try:
        assert atomic._umask() == 0o027
        assert os.umask(0o027) == 0o027  # still what we set
    finally:
        os.umask(old)
